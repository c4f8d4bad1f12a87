//! One connection's state, and the command layer's entry point: request bytes in, reply bytes
//! out, no network ([`process`]).

use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};

use crate::commands::{self, execute};
use crate::frame::{FrameScanner, Scanned};
use crate::node::Node;
use crate::reply::Reply;

/// One client connection's state.
#[derive(Debug)]
pub struct Session {
    /// `CLIENT ID`.
    pub id: u64,
    /// The peer's address (`CLIENT INFO`).
    pub addr: String,
    /// `CLIENT SETNAME`.
    pub name: Option<Bytes>,
    /// The protocol version replies are sent in: 2, or 3 after `HELLO 3`.
    pub protocol: u8,
    /// True once the client has authenticated (or when no password is set).
    pub authenticated: bool,
    pub(crate) scanner: FrameScanner,
    pub(crate) created: Instant,
    pub(crate) commands: u64,
}

impl Session {
    /// A new connection's session on `node` from `addr`.
    pub fn new(node: &Node, addr: impl Into<String>) -> Session {
        Session {
            id: node.next_client_id(),
            addr: addr.into(),
            name: None,
            protocol: 2,
            authenticated: node.settings.requirepass.is_none(),
            scanner: FrameScanner::default(),
            created: Instant::now(),
            commands: 0,
        }
    }

    /// The request limits in force for this client now.
    pub(crate) fn limits(&self, node: &Node) -> crate::frame::FrameLimits {
        if self.authenticated {
            node.settings.limits
        } else {
            node.settings.limits.unauthenticated()
        }
    }

    /// Checks whether a complete request (or a protocol error) waits at the front of `input`,
    /// without running anything: the connection reads more from the socket until it does.
    pub fn has_request(&mut self, node: &Node, input: &[u8]) -> bool {
        let limits = self.limits(node);
        !matches!(self.scanner.scan(input, &limits), Ok(Scanned::Incomplete))
    }
}

/// What the connection does after [`process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Every complete request was answered: write the replies, then read more.
    NeedInput,
    /// A limit stopped the batch (commands per batch, buffered reply bytes) with requests left:
    /// write the replies, then process again.
    More,
    /// Write the replies, then close the connection (QUIT, a protocol error).
    Close,
    /// Close the connection and shut the server down (SHUTDOWN).
    Shutdown,
}

/// Runs the requests at the front of `input`, in order, and appends their replies to `out`:
/// the whole command layer, with no network. Complete requests are removed from `input`; a
/// partial one stays for the next call. Stops at the server's commands-per-batch and
/// reply-bytes limits ([`Action::More`]). A malformed request gets `ERR Protocol error: ...` and
/// [`Action::Close`]: nothing after it is run. Never panics on any input.
pub fn process(
    node: &Node,
    session: &mut Session,
    input: &mut BytesMut,
    out: &mut BytesMut,
) -> Action {
    let mut run = 0;
    process_batch(node, session, input, out, &mut run, false).unwrap_or(Action::More)
}

/// [`process`], counting the commands of the batch in `run` (so a batch run in two calls keeps
/// one commands-per-batch limit). With `fast_only`, stops before a command that is not
/// [`commands::is_fast`] and returns `None`, leaving that request at the front of `input`: the
/// connection runs the rest on the blocking pool. Never returns `None` without `fast_only`.
///
/// Consecutive plain `SET key value` requests are applied as one write batch (one commit, one
/// write-ahead-log record), each still answered in order; the group is committed before any
/// other command runs and before the call returns, so nothing can observe the difference except
/// that the group's writes land atomically together.
pub(crate) fn process_batch(
    node: &Node,
    session: &mut Session,
    input: &mut BytesMut,
    out: &mut BytesMut,
    run: &mut usize,
    fast_only: bool,
) -> Option<Action> {
    let mut group = SetGroup::default();
    let action = loop {
        if *run >= node.settings.max_pipeline || out.len() >= node.settings.max_reply_bytes {
            break Some(if input.is_empty() {
                Action::NeedInput
            } else {
                Action::More
            });
        }
        let limits = session.limits(node);
        let length = match session.scanner.scan(input, &limits) {
            Ok(Scanned::Incomplete) => break Some(Action::NeedInput),
            Ok(Scanned::Empty(length)) => {
                input.advance(length);
                continue;
            }
            Ok(Scanned::Request(length)) => length,
            Err(message) => {
                group.commit(node, session, out);
                break Some(protocol_error(session, out, &message));
            }
        };
        if fast_only && !is_fast(input, session.scanner.arguments()) {
            break None;
        }
        let request = input.split_to(length).freeze();
        let args: Vec<Bytes> = session
            .scanner
            .arguments()
            .iter()
            .map(|range| request.slice(range.clone()))
            .collect();
        *run += 1;
        session.commands += 1;
        if group.accepts(node, session, &args) {
            group.push(args);
            continue;
        }
        group.commit(node, session, out);
        let (reply, action) = execute(node, session, args);
        if let Some(reply) = reply {
            reply.encode(session.protocol, out);
        }
        if action != Action::NeedInput {
            break Some(action);
        }
    };
    group.commit(node, session, out);
    action
}

/// Whether the command of the request at the front of `input`, whose arguments the scanner
/// found at `arguments`, is one a connection may run on its own task: see
/// [`commands::is_fast`].
fn is_fast(input: &[u8], arguments: &[std::ops::Range<usize>]) -> bool {
    arguments
        .first()
        .and_then(|name| input.get(name.clone()))
        .is_some_and(|name| commands::is_fast(name, arguments.len()))
}

/// Consecutive plain SETs waiting to be committed as one write batch.
#[derive(Default)]
struct SetGroup {
    requests: Vec<Vec<Bytes>>,
    bytes: usize,
}

/// Most bytes of keys and values in one group of SETs.
const SET_GROUP_BYTES: usize = 1 << 20;

impl SetGroup {
    /// Whether `args` is a SET the group may take: `SET key value` without options, by an
    /// authenticated client outside cluster mode (where every key is routed on its own), with a
    /// key and value the engine accepts (so one SET's error cannot fail the others), and
    /// within the group's byte budget.
    fn accepts(&self, node: &Node, session: &Session, args: &[Bytes]) -> bool {
        let [name, key, value] = args else {
            return false;
        };
        let entry = key.len() + value.len();
        name.eq_ignore_ascii_case(b"set")
            && session.authenticated
            && node.cluster.is_none()
            && key.len() <= strata::MAX_KEY_BYTES
            && value.len() <= strata::MAX_VALUE_BYTES
            && (self.requests.is_empty() || self.bytes + entry <= SET_GROUP_BYTES)
    }

    fn push(&mut self, args: Vec<Bytes>) {
        self.bytes += args[1].len() + args[2].len();
        self.requests.push(args);
    }

    /// Commits the waiting SETs and appends their replies.
    fn commit(&mut self, node: &Node, session: &Session, out: &mut BytesMut) {
        if self.requests.is_empty() {
            return;
        }
        let reply = commands::set_many(node, &self.requests);
        for _ in 0..self.requests.len() {
            reply.clone().encode(session.protocol, out);
        }
        self.requests.clear();
        self.bytes = 0;
    }
}

fn protocol_error(session: &Session, out: &mut BytesMut, message: &str) -> Action {
    Reply::error(format!("ERR Protocol error: {message}")).encode(session.protocol, out);
    Action::Close
}
