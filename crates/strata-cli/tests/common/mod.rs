//! What the `strata serve` tests (`serve.rs`, `serve_cluster.rs`, `serve_twemproxy.rs`) share: a
//! guard that kills and reaps every process it holds when it drops (also when an assertion
//! fails), `strata serve` started on a loopback address and held by that guard before anything
//! can fail, and a tiny RESP2 client (the test's side only) whose reads time out.

// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const STRATA: &str = env!("CARGO_BIN_EXE_strata");

/// Child processes, killed (and reaped) when this drops.
#[derive(Default)]
pub struct Children(pub Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Children {
    /// Starts `strata serve <db> --listen <listen> <extra...>`, held by this guard from the
    /// moment it runs; returns the port from the address line it prints, and its index here.
    pub fn start_serve(&mut self, db: &Path, listen: &str, extra: &[&str]) -> (u16, usize) {
        let mut child = Command::new(STRATA)
            .arg("serve")
            .arg(db)
            .args(["--listen", listen])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start strata serve");
        let stdout = child.stdout.take().expect("stdout");
        self.0.push(child);
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the address line");
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        (port, self.0.len() - 1)
    }
}

/// A reply as the tests compare it.
#[derive(Debug, Clone, PartialEq)]
pub enum R {
    Status(String),
    Err(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<R>),
}

/// `R::Bulk` holding `text`.
pub fn bulk(text: &str) -> R {
    R::Bulk(Some(text.as_bytes().to_vec()))
}

/// True if `reply` is an error starting with `start`.
pub fn is_err(reply: &R, start: &str) -> bool {
    matches!(reply, R::Err(e) if e.starts_with(start))
}

/// A request as a client frames it.
pub fn frame<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A tiny RESP2 client: frames requests (pipelined if asked) and reads replies, each read
/// bounded by a timeout (20 s unless told).
pub struct Client {
    pub stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        Client::connect_with_timeout(port, Duration::from_secs(20))
    }

    /// A client whose reads time out after `timeout`.
    pub fn connect_with_timeout(port: u16, timeout: Duration) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(timeout)).expect("timeout");
        Client {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            stream,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        self.send_raw(&frame(args));
    }

    /// Sends a request of byte-string arguments and reads its reply.
    pub fn call_bytes(&mut self, args: &[&[u8]]) -> R {
        self.send(args);
        self.read()
    }

    /// Sends a request of text arguments and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> R {
        self.send_raw(&frame(args));
        self.read()
    }

    /// Sends every request, then reads one reply per request.
    pub fn pipeline(&mut self, requests: &[Vec<Vec<u8>>]) -> Vec<R> {
        let out: Vec<u8> = requests.iter().flat_map(|args| frame(args)).collect();
        self.send_raw(&out);
        requests.iter().map(|_| self.read()).collect()
    }

    pub fn read(&mut self) -> R {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a reply");
        let line = line.trim_end_matches("\r\n");
        assert!(!line.is_empty(), "the connection closed");
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => R::Status(rest.to_string()),
            "-" => R::Err(rest.to_string()),
            ":" => R::Int(rest.parse().expect("integer")),
            "$" => {
                let length: i64 = rest.parse().expect("length");
                if length < 0 {
                    return R::Bulk(None);
                }
                let mut data = vec![0; usize::try_from(length).expect("length") + 2];
                self.reader.read_exact(&mut data).expect("bulk");
                data.truncate(data.len() - 2);
                R::Bulk(Some(data))
            }
            "*" => {
                let count: i64 = rest.parse().expect("count");
                R::Array((0..count.max(0)).map(|_| self.read()).collect())
            }
            _ => panic!("unexpected reply line {line:?}"),
        }
    }

    /// True once the server has closed the connection (bounded wait).
    pub fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }
}
