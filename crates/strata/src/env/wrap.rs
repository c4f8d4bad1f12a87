//! [`WrapWritable`]: the real file system, with every file it creates for writing passed through
//! a function first.
//!
//! Instrumentation of the write path (counting the bytes appended by kind of file, holding a
//! flush's appends back while a test races it, gating WAL syncs) needs a [`FileSystem`] that
//! differs from [`RealFileSystem`] only in the files it hands out for writing. This type is that
//! file system, so each use states only its [`WritableFile`] and not the other nine operations.

use std::path::Path;
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, RealFileSystem, WritableFile};
use crate::error::Result;

/// The operating system's file system, except that [`FileSystem::create_writable`] hands each
/// new file to `wrap` along with its path, and returns what `wrap` returns: the file as it is,
/// or the file inside a [`WritableFile`] of the caller's. Every other operation is
/// [`RealFileSystem`]'s.
pub struct WrapWritable<F> {
    wrap: F,
}

impl<F> WrapWritable<F>
where
    F: Fn(&Path, Box<dyn WritableFile>) -> Box<dyn WritableFile> + Send + Sync + 'static,
{
    /// A file system whose writable files pass through `wrap`.
    pub fn new(wrap: F) -> WrapWritable<F> {
        WrapWritable { wrap }
    }
}

impl<F> FileSystem for WrapWritable<F>
where
    F: Fn(&Path, Box<dyn WritableFile>) -> Box<dyn WritableFile> + Send + Sync + 'static,
{
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        RealFileSystem.create_dir_all(path)
    }
    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok((self.wrap)(path, RealFileSystem.create_writable(path)?))
    }
    fn open_random_access(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        RealFileSystem.open_random_access(path, direct)
    }
    fn read_to_end(&self, path: &Path) -> Result<Vec<u8>> {
        RealFileSystem.read_to_end(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        RealFileSystem.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        RealFileSystem.remove_file(path)
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        RealFileSystem.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        RealFileSystem.exists(path)
    }
    fn sync_dir(&self, path: &Path) -> Result<()> {
        RealFileSystem.sync_dir(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        RealFileSystem.lock(path)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Counts the bytes appended through it into a shared counter.
    struct Counted {
        inner: Box<dyn WritableFile>,
        appended: Arc<AtomicU64>,
    }

    impl WritableFile for Counted {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.inner.append(data)?;
            self.appended
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            self.inner.flush()
        }
        fn sync(&mut self) -> Result<()> {
            self.inner.sync()
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
    }

    #[test]
    fn writable_files_pass_through_the_function_and_the_rest_is_the_real_file_system() {
        let dir = tempfile::tempdir().expect("tempdir");
        let appended = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&appended);
        let fs = WrapWritable::new(move |path: &Path, inner: Box<dyn WritableFile>| {
            if path.extension().is_some_and(|e| e == "counted") {
                Box::new(Counted {
                    inner,
                    appended: Arc::clone(&counter),
                }) as Box<dyn WritableFile>
            } else {
                inner
            }
        });
        let counted = dir.path().join("a.counted");
        let plain = dir.path().join("b.plain");
        for (path, data) in [(&counted, &b"12345"[..]), (&plain, &b"678"[..])] {
            let mut file = fs.create_writable(path).expect("create");
            file.append(data).expect("append");
            file.sync().expect("sync");
        }
        assert_eq!(
            appended.load(Ordering::Relaxed),
            5,
            "only the wrapped file counts"
        );
        assert_eq!(fs.read_to_end(&counted).expect("read"), b"12345");
        assert_eq!(fs.read_to_end(&plain).expect("read"), b"678");
        let reader = fs.open_random_access(&plain, false).expect("open");
        assert_eq!(reader.read_at(1, 2).expect("read_at"), b"78");
        let mut names = fs.list_dir(dir.path()).expect("list");
        names.sort();
        assert_eq!(names, ["a.counted", "b.plain"]);
        fs.rename(&plain, &dir.path().join("c.plain"))
            .expect("rename");
        assert!(!fs.exists(&plain));
        fs.remove_file(&counted).expect("remove");
        assert!(!fs.exists(&counted));
        fs.sync_dir(dir.path()).expect("sync_dir");
        let _lock = fs.lock(&dir.path().join("LOCK")).expect("lock");
    }
}
