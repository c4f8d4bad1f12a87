//! The network side: the accept loop, one task per connection, the once-a-second WAL sync, and
//! graceful shutdown.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::node::Node;
use crate::reply::Reply;
use crate::session::{process_batch, Action, Session};
use crate::{io_error, ServeError, SyncMode};

/// Read buffer space reserved before each read.
const READ_CHUNK: usize = 16 * 1024;

/// The reply buffer is kept from batch to batch unless a batch grew it past this.
const REPLY_BUFFER_KEEP_BYTES: usize = 1 << 20;

/// Serves `listener` until a signal or SHUTDOWN, then shuts down gracefully and closes the
/// database.
pub(crate) async fn run(
    listener: TcpListener,
    node: Arc<Node>,
    shutdown_timeout: Duration,
) -> Result<(), ServeError> {
    let (shutdown_tx, mut shutdown_rx) = watch::channel(false);
    let shutdown_tx = Arc::new(shutdown_tx);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(io_error("installing the SIGTERM handler"))?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(io_error("installing the SIGINT handler"))?;
    let mut connections = JoinSet::new();
    let syncer = (node.settings.sync == SyncMode::EverySec).then(|| {
        tokio::spawn(sync_every_second(
            Arc::clone(&node),
            shutdown_tx.subscribe(),
        ))
    });
    loop {
        tokio::select! {
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
            _ = shutdown_rx.changed() => break,
            accepted = listener.accept() => {
                let (stream, addr) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait a little, keep serving.
                        eprintln!("strata serve: accept failed: {error}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                while connections.try_join_next().is_some() {}
                node.counters.connections.fetch_add(1, Ordering::Relaxed);
                if node.counters.connected.load(Ordering::Relaxed) >= node.settings.max_clients {
                    node.counters.rejected.fetch_add(1, Ordering::Relaxed);
                    connections.spawn(refuse(stream));
                    continue;
                }
                node.counters.connected.fetch_add(1, Ordering::Relaxed);
                connections.spawn(connection(
                    stream,
                    addr,
                    Arc::clone(&node),
                    shutdown_tx.subscribe(),
                    Arc::clone(&shutdown_tx),
                ));
            }
        }
    }
    // Stop accepting, tell every connection, and wait for them to finish their batch.
    drop(listener);
    let _ = shutdown_tx.send(true);
    let drained = tokio::time::timeout(shutdown_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        eprintln!(
            "strata serve: connections still busy after {shutdown_timeout:?}; closing anyway"
        );
        connections.abort_all();
    }
    if let Some(syncer) = syncer {
        let _ = syncer.await;
    }
    let db = node.db.clone();
    tokio::task::spawn_blocking(move || db.close())
        .await
        .map_err(|e| ServeError::Config(format!("closing the database: {e}")))??;
    Ok(())
}

/// `--sync everysec`: syncs the write-ahead log once a second until shutdown.
async fn sync_every_second(node: Arc<Node>, mut shutdown: watch::Receiver<bool>) {
    let mut interval = tokio::time::interval(Duration::from_secs(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            _ = interval.tick() => {
                let db = node.db.clone();
                match tokio::task::spawn_blocking(move || db.sync_wal()).await {
                    Ok(Ok(())) | Ok(Err(strata::Error::Closed)) => {}
                    Ok(Err(error)) => eprintln!("strata serve: syncing the WAL failed: {error}"),
                    Err(error) => eprintln!("strata serve: the WAL sync task failed: {error}"),
                }
            }
        }
    }
}

/// A client over the limit: one error, then the connection is closed.
async fn refuse(mut stream: TcpStream) {
    let mut out = BytesMut::new();
    Reply::error("ERR max number of clients reached").encode(2, &mut out);
    let _ = stream.write_all(&out).await;
    let _ = stream.shutdown().await;
}

/// Decrements the connected count when the connection ends, however it ends.
struct Connected(Arc<Node>);

impl Drop for Connected {
    fn drop(&mut self) {
        self.0.counters.connected.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connection: read what has arrived, run the complete requests, write the replies, repeat,
/// until the client leaves, QUIT, a protocol error or shutdown.
///
/// Under `--sync everysec` and `no` the key and connection commands (`commands::is_fast`) run
/// right here on the connection's task: their engine calls take microseconds, and handing each
/// batch to another thread cost more than the commands (two thread switches per batch). A
/// command that may take long (SCAN, FLUSHDB, INFO, ...) and everything after it in the batch
/// run on tokio's blocking pool, as every batch does under `--sync always`, where a write waits
/// for an fsync and many connections' writes waiting together share one (group commit).
async fn connection(
    stream: TcpStream,
    addr: SocketAddr,
    node: Arc<Node>,
    mut shutdown: watch::Receiver<bool>,
    shutdown_tx: Arc<watch::Sender<bool>>,
) {
    let _connected = Connected(Arc::clone(&node));
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let inline = node.settings.sync != SyncMode::Always;
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    let mut session = Session::new(&node, addr.to_string());
    loop {
        if *shutdown.borrow() {
            break;
        }
        out.clear();
        let mut run = 0;
        let done = if inline {
            process_batch(&node, &mut session, &mut input, &mut out, &mut run, true)
        } else if !session.has_request(&node, &input) {
            Some(Action::NeedInput)
        } else {
            None
        };
        let action = match done {
            Some(action) => action,
            None => {
                let batch_node = Arc::clone(&node);
                let mut batch_input = std::mem::take(&mut input);
                let mut batch_out = std::mem::take(&mut out);
                let mut batch_session = session;
                let ran = tokio::task::spawn_blocking(move || {
                    let action = process_batch(
                        &batch_node,
                        &mut batch_session,
                        &mut batch_input,
                        &mut batch_out,
                        &mut run,
                        false,
                    )
                    .unwrap_or(Action::More);
                    (batch_session, batch_input, batch_out, action)
                })
                .await;
                let Ok((returned, rest, replies, action)) = ran else {
                    // The batch panicked (a bug): drop this connection only.
                    return;
                };
                session = returned;
                input = rest;
                out = replies;
                action
            }
        };
        if !out.is_empty() && writer.write_all(&out).await.is_err() {
            break;
        }
        if out.capacity() > REPLY_BUFFER_KEEP_BYTES {
            // One large reply does not pin its buffer for the life of the connection.
            out = BytesMut::with_capacity(READ_CHUNK);
        }
        match action {
            Action::More => {}
            Action::NeedInput => {
                input.reserve(READ_CHUNK);
                tokio::select! {
                    _ = shutdown.changed() => break,
                    read = reader.read_buf(&mut input) => match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    },
                }
            }
            Action::Close => break,
            Action::Shutdown => {
                let _ = shutdown_tx.send(true);
                break;
            }
        }
    }
    let _ = writer.shutdown().await;
}
