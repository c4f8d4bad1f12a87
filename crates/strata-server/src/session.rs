//! One connection's state, and the command layer's entry point: request bytes in, reply bytes
//! out, no network ([`process`]).

use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use redis_protocol::resp2::types::BytesFrame;

use crate::commands::execute;
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
    loop {
        if run >= node.settings.max_pipeline || out.len() >= node.settings.max_reply_bytes {
            return if input.is_empty() {
                Action::NeedInput
            } else {
                Action::More
            };
        }
        let limits = session.limits(node);
        let length = match session.scanner.scan(input, &limits) {
            Ok(Scanned::Incomplete) => return Action::NeedInput,
            Ok(Scanned::Empty(length)) => {
                input.advance(length);
                continue;
            }
            Ok(Scanned::Request(length)) => length,
            Err(message) => return protocol_error(session, out, &message),
        };
        let request = input.split_to(length).freeze();
        let args = match decode(&request) {
            Ok(args) => args,
            Err(message) => return protocol_error(session, out, &message),
        };
        run += 1;
        session.commands += 1;
        let (reply, action) = execute(node, session, args);
        if let Some(reply) = reply {
            reply.encode(session.protocol, out);
        }
        if action != Action::NeedInput {
            return action;
        }
    }
}

/// The arguments of one request the scanner delimited, decoded by redis-protocol.
fn decode(request: &Bytes) -> Result<Vec<Bytes>, String> {
    match redis_protocol::resp2::decode::decode_bytes(request) {
        Ok(Some((BytesFrame::Array(items), used))) if used == request.len() => items
            .into_iter()
            .map(|item| match item {
                BytesFrame::BulkString(bytes) => Ok(bytes),
                _ => Err("expected a bulk string".to_string()),
            })
            .collect(),
        Ok(Some(_)) => Err("expected an array of bulk strings".to_string()),
        Ok(None) => Err("incomplete request".to_string()),
        Err(error) => Err(format!("{error}")),
    }
}

fn protocol_error(session: &Session, out: &mut BytesMut, message: &str) -> Action {
    Reply::error(format!("ERR Protocol error: {message}")).encode(session.protocol, out);
    Action::Close
}
