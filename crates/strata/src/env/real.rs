//! The operating system's file system, with optional O_DIRECT reads.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Alignment O_DIRECT needs for offsets, lengths and buffers on Linux block devices.
const DIRECT_IO_ALIGNMENT: usize = 4096;

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFileSystem;

fn describe(action: &str, path: &Path) -> String {
    format!("{action} {}", path.display())
}

struct RealWritableFile {
    path: std::path::PathBuf,
    writer: BufWriter<File>,
    len: u64,
}

impl WritableFile for RealWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.writer
            .write_all(data)
            .map_err(|e| Error::io(describe("appending to", &self.path), e))?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.writer
            .flush()
            .map_err(|e| Error::io(describe("flushing", &self.path), e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.writer
            .get_ref()
            .sync_data()
            .map_err(|e| Error::io(describe("syncing", &self.path), e))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn sync_handle(&self) -> Option<super::SyncHandle> {
        // A second descriptor of the same open file: fdatasync through it syncs what was
        // written through either.
        let file = self.writer.get_ref().try_clone().ok()?;
        let path = self.path.clone();
        Some(Box::new(move || {
            file.sync_data()
                .map_err(|e| Error::io(describe("syncing", &path), e))
        }))
    }
}

struct RealRandomAccessFile {
    path: std::path::PathBuf,
    file: File,
    len: u64,
    direct: bool,
}

impl RealRandomAccessFile {
    fn read_buffered(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io(describe("reading", &self.path), e))?;
        Ok(buf)
    }

    /// O_DIRECT needs the file offset, the length and the memory address aligned. We read the
    /// aligned span that covers the request into an aligned window of an over-allocated buffer
    /// (no `unsafe` needed), then copy out the requested bytes.
    fn read_direct(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let align = DIRECT_IO_ALIGNMENT as u64;
        let start = offset - offset % align;
        let end = (offset + len as u64).div_ceil(align) * align;
        let span = (end - start) as usize;
        let mut raw = vec![0u8; span + DIRECT_IO_ALIGNMENT];
        let shift = raw.as_ptr().align_offset(DIRECT_IO_ALIGNMENT);
        let window = &mut raw[shift..shift + span];
        let mut filled = 0usize;
        while filled < span {
            let read = self
                .file
                .read_at(&mut window[filled..], start + filled as u64)
                .map_err(|e| Error::io(describe("reading (O_DIRECT)", &self.path), e))?;
            if read == 0 {
                break; // end of file: the last aligned span is usually short
            }
            filled += read;
        }
        let from = (offset - start) as usize;
        if filled < from + len {
            return Err(Error::io(
                describe("reading (O_DIRECT)", &self.path),
                std::io::Error::new(ErrorKind::UnexpectedEof, "read past end of file"),
            ));
        }
        Ok(window[from..from + len].to_vec())
    }
}

impl RandomAccessFile for RealRandomAccessFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if self.direct {
            self.read_direct(offset, len)
        } else {
            self.read_buffered(offset, len)
        }
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct RealFileLock {
    _file: File,
}

impl FileLock for RealFileLock {}

impl FileSystem for RealFileSystem {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        std::fs::create_dir_all(path)
            .map_err(|e| Error::io(describe("creating directory", path), e))
    }

    fn create_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = File::create(path).map_err(|e| Error::io(describe("creating", path), e))?;
        Ok(Box::new(RealWritableFile {
            path: path.to_path_buf(),
            writer: BufWriter::with_capacity(64 * 1024, file),
            len: 0,
        }))
    }

    fn open_random_access(&self, path: &Path, direct: bool) -> Result<Arc<dyn RandomAccessFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let file = options.open(path).map_err(|e| {
            let what = if direct {
                "opening (O_DIRECT; does this file system support it?)"
            } else {
                "opening"
            };
            Error::io(describe(what, path), e)
        })?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(describe("reading metadata of", path), e))?
            .len();
        Ok(Arc::new(RealRandomAccessFile {
            path: path.to_path_buf(),
            file,
            len,
            direct,
        }))
    }

    fn read_to_end(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| Error::io(describe("reading", path), e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| {
            Error::io(
                format!("renaming {} to {}", from.display(), to.display()),
                e,
            )
        })
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io(describe("removing", path), e))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let entries =
            std::fs::read_dir(path).map_err(|e| Error::io(describe("listing", path), e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(describe("listing", path), e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        File::open(path)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| Error::io(describe("syncing directory", path), e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io(describe("opening lock file", path), e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(RealFileLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => {
                Err(Error::Locked(path.parent().unwrap_or(path).to_path_buf()))
            }
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(describe("locking", path), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_and_buffered_reads_agree_at_unaligned_offsets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data");
        let fs = RealFileSystem;
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut file = fs.create_writable(&path).expect("create");
        file.append(&bytes).expect("append");
        file.sync().expect("sync");
        drop(file);
        let buffered = fs.open_random_access(&path, false).expect("open");
        let direct = match fs.open_random_access(&path, true) {
            Ok(file) => file,
            // tmpfs and some overlay file systems refuse O_DIRECT; the buffered path is covered.
            Err(_) => return,
        };
        for &(offset, len) in &[(0u64, 10usize), (4095, 2), (5000, 9000), (19_990, 10)] {
            let expected = &bytes[offset as usize..offset as usize + len];
            assert_eq!(buffered.read_at(offset, len).expect("buffered"), expected);
            assert_eq!(direct.read_at(offset, len).expect("direct"), expected);
        }
        assert!(
            direct.read_at(19_995, 10).is_err(),
            "reading past the end must fail"
        );
        assert!(buffered.read_at(19_995, 10).is_err());
    }

    #[test]
    fn second_lock_on_same_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("LOCK");
        let fs = RealFileSystem;
        let first = fs.lock(&path).expect("first lock");
        assert!(matches!(fs.lock(&path), Err(Error::Locked(_))));
        drop(first);
        fs.lock(&path).expect("lock again after release");
    }
}
