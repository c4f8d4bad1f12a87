//! The human-readable info log (`LOG` in the database directory): opens, recoveries, dropped WAL
//! bytes, flushes, compactions and background errors, one line each.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::env::{FileSystem, WritableFile};

/// Appends timestamped lines to `LOG`. Failing to write the log never fails the engine.
pub(crate) struct InfoLog {
    file: Mutex<Option<Box<dyn WritableFile>>>,
}

impl InfoLog {
    pub(crate) fn open(fs: &dyn FileSystem, dir: &Path) -> InfoLog {
        let log = dir.join("LOG");
        if fs.exists(&log) {
            // Keep one previous log, as LevelDB does.
            let _ = fs.rename(&log, &dir.join("LOG.old"));
        }
        InfoLog {
            file: Mutex::new(fs.create_writable(&log).ok()),
        }
    }

    /// A log that writes nothing: a read-only open must not create, rotate or append to `LOG`
    /// (the disk may be full, or the directory another process's).
    pub(crate) fn disabled() -> InfoLog {
        InfoLog {
            file: Mutex::new(None),
        }
    }

    pub(crate) fn log(&self, message: impl AsRef<str>) {
        let elapsed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let line = format!(
            "{}.{:06} {}\n",
            elapsed.as_secs(),
            elapsed.subsec_micros(),
            message.as_ref()
        );
        let mut file = self.file.lock();
        if let Some(file) = file.as_mut() {
            if file
                .append(line.as_bytes())
                .and_then(|()| file.flush())
                .is_err()
            {
                // A log we cannot write is dropped rather than failing the engine.
            }
        }
    }
}
