#![no_main]
//! `strata_server::process` (the server's command layer: request bytes in, replies out, no
//! network) on every input, against one database in a temporary directory. The proptests in
//! crates/strata-server/tests/command_layer.rs run the same function.

use std::sync::OnceLock;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use strata_server::{process, Action, Config, Node, Session, Settings};

fn node() -> &'static Node {
    static NODE: OnceLock<(tempfile::TempDir, Node)> = OnceLock::new();
    &NODE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary directory");
            let db = strata::Db::open(dir.path(), strata::Options::default()).expect("open");
            let mut config = Config::new(dir.path());
            config.max_bulk_bytes = 64 * 1024;
            config.max_request_bytes = 1 << 20;
            let node = Node::new(db, Settings::from_config(&config));
            (dir, node)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let node = node();
    let mut session = Session::new(node, "fuzz");
    let mut input = BytesMut::from(data);
    let mut out = BytesMut::new();
    while process(node, &mut session, &mut input, &mut out) == Action::More {
        out.clear();
    }
});
