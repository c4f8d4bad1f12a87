//! `strata._strata`: the native half of the Python module `strata`.
//!
//! A thin layer over the engine's public API (`strata::Db` and friends) and the command line's
//! JSON entry point (`strata_cli::run_json`): it converts arguments, releases the GIL around every
//! engine call, and turns engine errors and panics into the exception classes of
//! `strata._errors`. No engine logic lives here; the pure-Python half (`python/strata`) adds the
//! research calls' keyword arguments and the Dask sweep.
//!
//! Locking rule (why nothing here can deadlock with the GIL): every mutex of this module is held
//! only for a few instructions and never while acquiring the GIL. A thread that holds the GIL may
//! wait for one (the holder never needs the GIL to finish), and a thread that released the GIL
//! takes and drops its locks inside the released section.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::ops::Bound as Edge;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};

/// Entries an iterator reads per release of the GIL: large enough that the release costs little
/// per entry, small enough that a short scan reads little ahead.
const ITERATOR_CHUNK: usize = 64;

/// Why a call failed, before it becomes a Python exception (which needs the GIL).
enum Failure {
    Engine(strata::Error),
    Cli(strata_cli::CliError),
    Panic(String),
}

impl From<strata::Error> for Failure {
    fn from(error: strata::Error) -> Self {
        Failure::Engine(error)
    }
}

/// The exception class `name` of `strata._errors` raised with `message`, with `attributes` set.
fn exception(
    py: Python<'_>,
    name: &str,
    message: String,
    attributes: &[(&str, Py<PyAny>)],
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let class = py.import("strata._errors")?.getattr(name)?;
        let instance = class.call1((message.clone(),))?;
        for (attribute, value) in attributes {
            instance.setattr(*attribute, value)?;
        }
        Ok(PyErr::from_value(instance))
    };
    build().unwrap_or_else(|error| error)
}

impl Failure {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Engine(error) => engine_error(py, error),
            Failure::Cli(strata_cli::CliError::Engine(error)) => engine_error(py, error),
            Failure::Cli(error @ strata_cli::CliError::InvalidArgument(_)) => {
                exception(py, "InvalidArgumentError", error.to_string(), &[])
            }
            Failure::Cli(error @ strata_cli::CliError::Io { .. }) => {
                exception(py, "IoError", error.to_string(), &[])
            }
            Failure::Cli(error) => exception(py, "Error", error.to_string(), &[]),
            Failure::Panic(message) => exception(
                py,
                "InternalError",
                format!("internal error (a Rust panic, caught at the binding): {message}"),
                &[],
            ),
        }
    }
}

fn engine_error(py: Python<'_>, error: strata::Error) -> PyErr {
    let message = error.to_string();
    match error {
        strata::Error::Corruption { file, offset, .. } => {
            let file = file
                .display()
                .to_string()
                .into_pyobject(py)
                .map(|f| f.into_any().unbind());
            let offset = offset.into_pyobject(py).map(|o| o.into_any().unbind());
            match (file, offset) {
                (Ok(file), Ok(offset)) => exception(
                    py,
                    "CorruptionError",
                    message,
                    &[("file", file), ("offset", offset)],
                ),
                _ => exception(py, "CorruptionError", message, &[]),
            }
        }
        strata::Error::Io { .. } => exception(py, "IoError", message, &[]),
        strata::Error::InvalidArgument(_) => exception(py, "InvalidArgumentError", message, &[]),
        strata::Error::Locked(_) => exception(py, "LockedError", message, &[]),
        strata::Error::Background(_) => exception(py, "BackgroundError", message, &[]),
        strata::Error::Closed => exception(py, "ClosedError", message, &[]),
        strata::Error::ReadOnly => exception(py, "ReadOnlyError", message, &[]),
    }
}

fn closed_error(py: Python<'_>, what: &str) -> PyErr {
    exception(py, "ClosedError", format!("{what} is closed"), &[])
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `f` with the GIL released; a panic in it becomes `strata.InternalError`, an engine error
/// the matching exception.
fn release<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    let outcome = py.detach(|| {
        catch_unwind(AssertUnwindSafe(f))
            .unwrap_or_else(|payload| Err(Failure::Panic(panic_message(payload))))
    });
    outcome.map_err(|failure| failure.into_py(py))
}

/// Key or value bytes taken from a Python argument: `bytes` borrowed (immutable, so safe to read
/// with the GIL released), `bytearray` and `memoryview` copied (another thread could change them
/// while the GIL is released).
enum Bytes<'py> {
    Borrowed(Bound<'py, PyBytes>),
    Owned(Vec<u8>),
}

impl Bytes<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(bytes) => bytes.as_bytes(),
            Bytes::Owned(bytes) => bytes,
        }
    }
}

fn bytes_arg<'py>(object: &Bound<'py, PyAny>, what: &str) -> PyResult<Bytes<'py>> {
    if let Ok(bytes) = object.cast::<PyBytes>() {
        return Ok(Bytes::Borrowed(bytes.clone()));
    }
    if let Ok(array) = object.cast::<PyByteArray>() {
        return Ok(Bytes::Owned(array.to_vec()));
    }
    if object.cast::<PyMemoryView>().is_ok() {
        let copy = object.call_method0("tobytes")?;
        let copy = copy.cast_into::<PyBytes>()?;
        return Ok(Bytes::Owned(copy.as_bytes().to_vec()));
    }
    if object.cast::<PyString>().is_ok() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, bytearray or memoryview, not str: encode it first (for example {what}.encode())"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray or memoryview, not {}",
        object.get_type().name()?
    )))
}

fn owned_arg(object: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    Ok(bytes_arg(object, what)?.as_slice().to_vec())
}

fn optional_owned(object: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    object
        .filter(|o| !o.is_none())
        .map(|o| owned_arg(o, what))
        .transpose()
}

/// The options of `strata.Db(...)`: an options file's settings, then the keyword arguments over
/// them, both in the options file's names and shapes (`strata::options_file`), validated by the
/// engine. An unknown name or an invalid value is `strata.InvalidArgumentError` (a `ValueError`).
fn options(
    py: Python<'_>,
    options_file: Option<PathBuf>,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<strata::Options> {
    let mut options = strata::Options::default();
    if let Some(path) = options_file {
        // Read with the GIL released: the file may sit on a slow file system.
        options = release(py, move || Ok(strata::Options::from_file(&path)?))?;
    }
    let Some(keywords) = keywords.filter(|k| !k.is_empty()) else {
        return Ok(options);
    };
    let json = py.import("json")?;
    let dumps = |value: &Bound<'_, PyAny>| -> PyResult<String> {
        json.call_method1("dumps", (value,))
            .map_err(|error| {
                PyTypeError::new_err(format!(
                    "options must be numbers, strings, booleans or dicts of them: {error}"
                ))
            })?
            .extract()
    };
    let invalid = |message: String| exception(py, "InvalidArgumentError", message, &[]);
    // One option at a time first, so that a value of the wrong type is reported with its name
    // (serde names an unknown field, but not the field whose value it could not read).
    for (name, value) in keywords.iter() {
        let single = PyDict::new(py);
        single.set_item(&name, value)?;
        if let Err(error) = serde_json::from_str::<strata::OptionsFile>(&dumps(&single)?) {
            let message = strip_position(&error.to_string());
            return Err(if message.starts_with("unknown field") {
                invalid(format!("invalid option: {message}"))
            } else {
                invalid(format!("invalid option {name}: {message}"))
            });
        }
    }
    let file: strata::OptionsFile =
        serde_json::from_str(&dumps(keywords.as_any())?).map_err(|error| {
            invalid(format!(
                "invalid option: {}",
                strip_position(&error.to_string())
            ))
        })?;
    file.apply_to(options).map_err(|error| match error {
        strata::Error::InvalidArgument(message) => invalid(format!(
            "invalid option: {}",
            // The engine's messages are worded for a file and may nest "invalid argument: ".
            message
                .trim_start_matches("options file: ")
                .replace("invalid argument: ", "")
        )),
        other => engine_error(py, other),
    })
}

/// serde_json's message without its " at line 1 column 42" (the keywords have no lines).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// The bounds of an iterator from plyvel's arguments.
fn bounds(
    start: Option<Vec<u8>>,
    stop: Option<Vec<u8>>,
    include_start: bool,
    include_stop: bool,
    prefix: Option<Vec<u8>>,
) -> (Edge<Vec<u8>>, Edge<Vec<u8>>) {
    let mut lower = match start {
        Some(key) if include_start => Edge::Included(key),
        Some(key) => Edge::Excluded(key),
        None => Edge::Unbounded,
    };
    let mut upper = match stop {
        Some(key) if include_stop => Edge::Included(key),
        Some(key) => Edge::Excluded(key),
        None => Edge::Unbounded,
    };
    if let Some(prefix) = prefix {
        // The prefix narrows the bounds: every key >= prefix and < the prefix's successor.
        let below = match &lower {
            Edge::Included(key) | Edge::Excluded(key) => key.as_slice() < prefix.as_slice(),
            Edge::Unbounded => true,
        };
        if below {
            lower = Edge::Included(prefix.clone());
        }
        if let Some(end) = prefix_successor(&prefix) {
            // An included stop equal to the successor must be replaced too: `end` itself does
            // not start with the prefix (prefix=b"a", stop=b"b", include_stop=True must not
            // yield b"b").
            let above = match &upper {
                Edge::Included(key) => key.as_slice() >= end.as_slice(),
                Edge::Excluded(key) => key.as_slice() > end.as_slice(),
                Edge::Unbounded => true,
            };
            if above {
                upper = Edge::Excluded(end);
            }
        }
    }
    (lower, upper)
}

/// The smallest key greater than every key that starts with `prefix`, if there is one (a prefix
/// of 0xff bytes only has none).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A source of frozen reads: the database now, or a snapshot.
enum Source<'a> {
    Db(&'a strata::Db),
    Snapshot(Arc<strata::Snapshot>),
}

impl<'a> Source<'a> {
    fn get(&self, key: &[u8]) -> strata::Result<Option<strata::Value>> {
        match self {
            Source::Db(db) => db.get(key),
            Source::Snapshot(snapshot) => snapshot.get(key),
        }
    }

    fn range(&self, bounds: (Edge<Vec<u8>>, Edge<Vec<u8>>)) -> strata::DbIterator {
        match self {
            Source::Db(db) => db.range(bounds),
            Source::Snapshot(snapshot) => snapshot.range(bounds),
        }
    }

    /// The source fixed at one moment: the database's current state becomes a snapshot (so that
    /// the values of one `multi_get` are those of one moment); a snapshot is one already.
    fn frozen(self) -> Source<'a> {
        match self {
            Source::Db(db) => Source::Snapshot(Arc::new(db.snapshot())),
            snapshot => snapshot,
        }
    }
}

/// What `Db` and `Snapshot` share: reads through a [`Source`] (the methods of
/// `reader_methods!`).
trait Reader {
    /// The source to read, or `strata.ClosedError`.
    fn source(&self, py: Python<'_>) -> PyResult<Source<'_>>;

    /// The database's closed flag, which iterators check before every entry.
    fn closed_flag(&self) -> &Arc<AtomicBool>;

    fn get_bytes(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<strata::Value>> {
        let source = self.source(py)?;
        let key = bytes_arg(key, "key")?;
        let key = key.as_slice();
        release(py, || Ok(source.get(key)?))
    }
}

/// A `#[pymethods]` block for `$class` (a [`Reader`]) with the reads `Db` and `Snapshot` share
/// (`get`, `[]`, `in`, `multi_get`, `iterator`, `items`, `keys`, `values`), followed by the
/// class's own methods. One block per class, because pyo3 takes one `#[pymethods]` block per
/// class without its `multiple-pymethods` feature.
macro_rules! reader_methods {
    ($class:ident { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            /// The value of ``key`` (as of the snapshot, for a snapshot), or ``default`` when it
            /// is absent.
            #[pyo3(signature = (key, default = None))]
            fn get(
                &self,
                py: Python<'_>,
                key: &Bound<'_, PyAny>,
                default: Option<Py<PyAny>>,
            ) -> PyResult<Py<PyAny>> {
                match self.get_bytes(py, key)? {
                    Some(value) => Ok(PyBytes::new(py, &value).into_any().unbind()),
                    None => Ok(default.unwrap_or_else(|| py.None())),
                }
            }

            fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                match self.get_bytes(py, key)? {
                    Some(value) => Ok(PyBytes::new(py, &value).into_any().unbind()),
                    None => Err(PyKeyError::new_err(key.clone().unbind())),
                }
            }

            fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                Ok(self.get_bytes(py, key)?.is_some())
            }

            /// The values of ``keys`` in order, ``None`` for each absent one, read at one moment.
            fn multi_get<'py>(
                &self,
                py: Python<'py>,
                keys: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyList>> {
                let source = self.source(py)?;
                let keys = keys_arg(keys)?;
                let values = release(py, move || Ok(get_many(&source.frozen(), &keys)?))?;
                values_list(py, values)
            }

            /// An iterator over a frozen view, as plyvel's: keys from ``start`` (included unless
            /// ``include_start=False``) to ``stop`` (excluded unless ``include_stop=True``), only
            /// those beginning with ``prefix``, in ascending order or descending with
            /// ``reverse=True`` (which reads the range once, forward, and yields it backwards:
            /// memory in proportion to the range). Yields ``(key, value)`` tuples, keys alone
            /// with ``include_value=False`` or values alone with ``include_key=False``.
            #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false, include_key = true, include_value = true, include_start = true, include_stop = false))]
            #[allow(clippy::too_many_arguments)]
            fn iterator(
                &self,
                py: Python<'_>,
                start: Option<&Bound<'_, PyAny>>,
                stop: Option<&Bound<'_, PyAny>>,
                prefix: Option<&Bound<'_, PyAny>>,
                reverse: bool,
                include_key: bool,
                include_value: bool,
                include_start: bool,
                include_stop: bool,
            ) -> PyResult<Iterator> {
                let source = self.source(py)?;
                make_iterator(
                    py,
                    source,
                    Arc::clone(self.closed_flag()),
                    start,
                    stop,
                    include_start,
                    include_stop,
                    prefix,
                    reverse,
                    include_key,
                    include_value,
                )
            }

            /// ``(key, value)`` pairs in key order over a frozen view (``iterator()``'s bounds
            /// apply).
            #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false))]
            fn items(
                &self,
                py: Python<'_>,
                start: Option<&Bound<'_, PyAny>>,
                stop: Option<&Bound<'_, PyAny>>,
                prefix: Option<&Bound<'_, PyAny>>,
                reverse: bool,
            ) -> PyResult<Iterator> {
                self.iterator(py, start, stop, prefix, reverse, true, true, true, false)
            }

            /// Keys in order over a frozen view (``iterator()``'s bounds apply).
            #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false))]
            fn keys(
                &self,
                py: Python<'_>,
                start: Option<&Bound<'_, PyAny>>,
                stop: Option<&Bound<'_, PyAny>>,
                prefix: Option<&Bound<'_, PyAny>>,
                reverse: bool,
            ) -> PyResult<Iterator> {
                self.iterator(py, start, stop, prefix, reverse, true, false, true, false)
            }

            /// Values in key order over a frozen view (``iterator()``'s bounds apply).
            #[pyo3(signature = (*, start = None, stop = None, prefix = None, reverse = false))]
            fn values(
                &self,
                py: Python<'_>,
                start: Option<&Bound<'_, PyAny>>,
                stop: Option<&Bound<'_, PyAny>>,
                prefix: Option<&Bound<'_, PyAny>>,
                reverse: bool,
            ) -> PyResult<Iterator> {
                self.iterator(py, start, stop, prefix, reverse, false, true, true, false)
            }

            fn __iter__(&self, py: Python<'_>) -> PyResult<Iterator> {
                self.keys(py, None, None, None, false)
            }

            $($own)*
        }
    };
}

/// What an iterator yields per entry.
#[derive(Clone, Copy)]
struct Shape {
    include_key: bool,
    include_value: bool,
}

fn entry_object(py: Python<'_>, shape: Shape, key: &[u8], value: &[u8]) -> PyResult<Py<PyAny>> {
    Ok(match (shape.include_key, shape.include_value) {
        (true, true) => PyTuple::new(py, [PyBytes::new(py, key), PyBytes::new(py, value)])?
            .into_any()
            .unbind(),
        (true, false) => PyBytes::new(py, key).into_any().unbind(),
        (false, _) => PyBytes::new(py, value).into_any().unbind(),
    })
}

fn get_many(source: &Source<'_>, keys: &[Vec<u8>]) -> strata::Result<Vec<Option<strata::Value>>> {
    keys.iter().map(|key| source.get(key)).collect()
}

fn values_list(py: Python<'_>, values: Vec<Option<strata::Value>>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for value in values {
        match value {
            Some(value) => list.append(PyBytes::new(py, &value))?,
            None => list.append(py.None())?,
        }
    }
    Ok(list)
}

fn keys_arg(keys: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    let mut owned = Vec::new();
    for key in keys.try_iter()? {
        owned.push(owned_arg(&key?, "key")?);
    }
    Ok(owned)
}

/// Builds an iterator over `source` from plyvel's arguments.
#[allow(clippy::too_many_arguments)]
fn make_iterator(
    py: Python<'_>,
    source: Source<'_>,
    closed: Arc<AtomicBool>,
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    include_start: bool,
    include_stop: bool,
    prefix: Option<&Bound<'_, PyAny>>,
    reverse: bool,
    include_key: bool,
    include_value: bool,
) -> PyResult<Iterator> {
    if !include_key && !include_value {
        return Err(exception(
            py,
            "InvalidArgumentError",
            "include_key and include_value cannot both be False".to_string(),
            &[],
        ));
    }
    if closed.load(Ordering::Acquire) {
        return Err(closed_error(py, "the database"));
    }
    let range = bounds(
        optional_owned(start, "start")?,
        optional_owned(stop, "stop")?,
        include_start,
        include_stop,
        optional_owned(prefix, "prefix")?,
    );
    let state = if reverse {
        // The engine iterates forward only: a reverse iterator reads its range forward once, over
        // the same frozen view, and yields it backwards (memory in proportion to the range).
        let entries = release(py, move || {
            let mut entries = Vec::new();
            for entry in source.range(range) {
                let (key, value) = entry?;
                entries.push((key, value.into_vec()));
            }
            Ok(entries)
        })?;
        let mut entries = VecDeque::from(entries);
        entries.make_contiguous().reverse();
        IterState {
            engine: None,
            buffered: entries,
            exhausted: true,
            pending_error: None,
        }
    } else {
        let engine = release(py, move || Ok(source.range(range)))?;
        IterState {
            engine: Some(engine),
            buffered: VecDeque::new(),
            exhausted: false,
            pending_error: None,
        }
    };
    Ok(Iterator {
        state: Mutex::new(state),
        closed,
        shape: Shape {
            include_key,
            include_value,
        },
        reverse,
    })
}

struct IterState {
    /// The engine's iterator; `None` once closed (or for a reverse iterator, read at creation).
    engine: Option<strata::DbIterator>,
    /// Entries read ahead and not yet yielded.
    buffered: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The engine's iterator has no more entries.
    exhausted: bool,
    /// An error the engine's iterator returned after the entries still buffered: raised once
    /// they are yielded, so entries come out in order and the error where it happened.
    pending_error: Option<strata::Error>,
}

/// An iterator over a frozen view of the database (from `Db.iterator()`, `Db.items()`, ...,
/// `Snapshot.iterator()`): it sees the database as it was when it was created, whatever is
/// written meanwhile. Yields `(key, value)` tuples, or keys or values alone as it was asked.
/// Safe to share between threads (each entry goes to one of them); after its database is closed
/// it raises `strata.ClosedError`. `close()` (or leaving a `with` block) lets go of the files it
/// holds.
#[pyclass(module = "strata", name = "Iterator", frozen)]
struct Iterator {
    state: Mutex<IterState>,
    closed: Arc<AtomicBool>,
    shape: Shape,
    reverse: bool,
}

#[pymethods]
impl Iterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed_error(py, "the database under this iterator"));
        }
        let next = {
            let mut state = self.state.lock();
            match state.buffered.pop_front() {
                Some(entry) => Some(entry),
                None => {
                    if let Some(error) = state.pending_error.take() {
                        return Err(engine_error(py, error));
                    }
                    if state.exhausted || state.engine.is_none() {
                        return Ok(None);
                    }
                    None
                }
            }
        };
        let entry = match next {
            Some(entry) => Some(entry),
            None => release(py, || {
                let mut state = self.state.lock();
                let IterState {
                    engine,
                    buffered,
                    exhausted,
                    pending_error,
                } = &mut *state;
                if let Some(error) = pending_error.take() {
                    return Err(Failure::Engine(error));
                }
                if let Some(engine) = engine.as_mut() {
                    while buffered.len() < ITERATOR_CHUNK && !*exhausted {
                        match engine.next() {
                            Some(Ok((key, value))) => buffered.push_back((key, value.into_vec())),
                            Some(Err(error)) => {
                                // The engine's iterator ends after an error.
                                *exhausted = true;
                                if buffered.is_empty() {
                                    return Err(Failure::Engine(error));
                                }
                                *pending_error = Some(error);
                            }
                            None => *exhausted = true,
                        }
                    }
                }
                Ok(buffered.pop_front())
            })?,
        };
        match entry {
            Some((key, value)) => Ok(Some(entry_object(py, self.shape, &key, &value)?)),
            None => Ok(None),
        }
    }

    /// Moves the iterator so that the next entry is the first whose key is >= `key` (and within
    /// its bounds). Forward iterators only.
    fn seek(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.reverse {
            return Err(exception(
                py,
                "InvalidArgumentError",
                "seek() is for forward iterators; a reverse iterator is read whole at creation"
                    .to_string(),
                &[],
            ));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(closed_error(py, "the database under this iterator"));
        }
        let key = owned_arg(key, "key")?;
        release(py, || {
            let mut state = self.state.lock();
            state.buffered.clear();
            state.pending_error = None;
            if let Some(engine) = state.engine.as_mut() {
                engine.seek(&key);
                state.exhausted = false;
            }
            Ok(())
        })
    }

    /// Lets go of the iterator's files and view; it yields nothing afterwards.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = {
            let mut state = self.state.lock();
            state.buffered.clear();
            state.exhausted = true;
            state.engine.take()
        };
        // Dropping the engine's iterator may release table files: without the GIL.
        release(py, move || {
            drop(taken);
            Ok(())
        })
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// A Strata database, opened on a directory: the dict protocol as rocksdict has it, plyvel's
/// iterators and write batches, snapshots, and the engine's maintenance calls.
///
/// ``Db(path, *, options_file=None, read_only=False, **options)`` opens (creating it if it does
/// not exist) the database in ``path``. ``options`` take the names and shapes of an options file
/// (see ``help(strata)``): ``write_buffer_bytes=4 << 20``, ``block_cache_bytes=...``,
/// ``compaction={"policy": "tiering", "size_ratio": 4}``,
/// ``filters={"allocator": "monkey", "bits_per_key": 5, ...}``; ``options_file`` reads a TOML
/// options file first and the keywords apply over it. An unknown name or an invalid value raises
/// ``strata.InvalidArgumentError`` (a ``ValueError``) naming it. ``read_only=True`` opens without
/// writing anything, beside a process that has the database open.
///
/// Keys and values are ``bytes`` (``bytearray`` and ``memoryview`` are accepted too); ``str`` is
/// refused with a ``TypeError``. There is no ``len(db)``: an LSM-tree knows its entry count only
/// approximately (old versions and tombstones until compaction); ``stats()`` has the estimates.
/// Every call releases the GIL while the engine works.
#[pyclass(module = "strata", name = "Db", frozen)]
struct Db {
    db: strata::Db,
    closed: Arc<AtomicBool>,
}

impl Db {
    fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed_error(py, "the database"));
        }
        Ok(())
    }

    fn write_one(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: Option<&Bound<'_, PyAny>>,
        sync: bool,
    ) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let value = value.map(|v| bytes_arg(v, "value")).transpose()?;
        let (key, value) = (key.as_slice(), value.as_ref().map(Bytes::as_slice));
        release(py, || {
            let result = match value {
                Some(value) => self.db.put_opt(key, value, strata::WriteOptions { sync }),
                None if sync => {
                    let mut batch = strata::WriteBatch::new();
                    batch.delete(key);
                    self.db.write_opt(batch, strata::WriteOptions { sync })
                }
                None => self.db.delete(key),
            };
            Ok(result?)
        })
    }
}

impl Reader for Db {
    fn source(&self, _py: Python<'_>) -> PyResult<Source<'_>> {
        // The engine answers a closed database's reads with `Error::Closed` itself.
        Ok(Source::Db(&self.db))
    }

    fn closed_flag(&self) -> &Arc<AtomicBool> {
        &self.closed
    }
}

reader_methods! { Db {
    #[new]
    #[pyo3(signature = (path, *, options_file = None, read_only = false, **options))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        options_file: Option<PathBuf>,
        read_only: bool,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Db> {
        let options = self::options(py, options_file, options)?;
        let db = release(py, move || {
            Ok(if read_only {
                strata::Db::open_read_only(&path, options)?
            } else {
                strata::Db::open(&path, options)?
            })
        })?;
        Ok(Db {
            db,
            closed: Arc::new(AtomicBool::new(false)),
        })
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.write_one(py, key, Some(value), false)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        // As rocksdict: deleting an absent key is not an error (a tombstone costs the same).
        self.write_one(py, key, None, false)
    }

    /// Stores ``value`` under ``key``; with ``sync=True`` the write-ahead log is synced to the
    /// device before it returns.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        self.write_one(py, key, Some(value), sync)
    }

    /// Removes ``key`` (no error if it is absent).
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        self.write_one(py, key, None, sync)
    }

    /// Applies ``batch`` (a ``strata.WriteBatch``) atomically. The batch is left as it was.
    #[pyo3(signature = (batch, *, sync = false))]
    fn write(&self, py: Python<'_>, batch: &WriteBatch, sync: bool) -> PyResult<()> {
        let batch = batch.batch.lock().clone();
        release(py, move || {
            Ok(self.db.write_opt(batch, strata::WriteOptions { sync })?)
        })
    }

    /// A write batch bound to this database, for ``with db.write_batch() as wb:`` (plyvel's
    /// form): its puts and deletes are applied atomically when the block ends, and not at all if
    /// it ends with an exception. ``wb.write()`` applies it earlier.
    #[pyo3(signature = (*, sync = false))]
    fn write_batch(slf: Py<Self>, sync: bool) -> WriteBatch {
        WriteBatch {
            batch: Mutex::new(strata::WriteBatch::new()),
            target: Some((slf, sync)),
        }
    }

    /// A frozen view of the database as of now (``get``, ``iterator``, ``items``, ...), valid
    /// until released: ``with db.snapshot() as snap:`` or ``snap.close()``.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        self.check_open(py)?;
        let db = self.db.clone();
        let snapshot = release(py, move || Ok(db.snapshot()))?;
        Ok(Snapshot {
            snapshot: RwLock::new(Some(Arc::new(snapshot))),
            closed: Arc::clone(&self.closed),
        })
    }

    /// Writes the memtables to table files; returns when they are durable.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        release(py, || Ok(self.db.flush()?))
    }

    /// Flushes, then compacts the whole tree into one sorted run.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        release(py, || Ok(self.db.compact()?))
    }

    /// Waits until the merge policy has no more work to do (the tree is settled).
    fn wait_for_compactions(&self, py: Python<'_>) -> PyResult<()> {
        release(py, || Ok(self.db.wait_for_compactions()?))
    }

    /// The engine's statistics as a dict: the same fields as ``strata stats --json`` (I/O
    /// counters by level, the tree's levels, memory, filters, write amplification, ...).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.check_open(py)?;
        let text = release(py, || {
            serde_json::to_string(&self.db.stats())
                .map_err(|e| Failure::Panic(format!("statistics not encodable as JSON: {e}")))
        })?;
        py.import("json")?.call_method1("loads", (text,))
    }

    /// Takes one auto-tune decision now and applies it (``Db::auto_tune_now``; the settings of
    /// the options file's ``[auto_tune]`` section, or the defaults): the merge policy in force
    /// against the tuner's best for the mix served since the last decision, switched when the
    /// gain pays for a round trip of rewrites and was confirmed; on a stretch of reads, the tree
    /// merged into one run when that pays (returns once the merge has run). Returns the decision
    /// as a dict (``number``, ``operations``, ``mix``, ``current``, ``candidates``, ``gain``,
    /// ``mix_held``, ``mix_operations``, ``saved_seconds``, ``switch_seconds``, ``streak``,
    /// ``switched``, ``reason``, ``reads_held`` and, when priced, ``for_reads`` with its
    /// ``merged``);
    /// ``stats()["auto_tune"]`` lists the last decisions in words.
    fn auto_tune_now<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = release(py, || {
            let decision = self.db.auto_tune_now()?;
            serde_json::to_string(&decision)
                .map_err(|e| Failure::Panic(format!("decision not encodable as JSON: {e}")))
        })?;
        py.import("json")?.call_method1("loads", (text,))
    }

    /// Verifies every file of the database on disk (as ``strata check --json``) and returns the
    /// report as a dict: ``sound``, ``errors``, ``warnings``, ``problems`` (file, offset,
    /// severity, message) and what was read. Waits for background compactions first; a flush
    /// that runs meanwhile can still show a file as damaged or orphaned: for a verdict, check
    /// a closed database with ``strata.check(path)``.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.check_open(py)?;
        if !self.db.is_read_only() {
            release(py, || Ok(self.db.wait_for_compactions()?))?;
        }
        run_json_value(
            py,
            vec!["check".into(), self.db.path().as_os_str().to_owned()],
        )
    }

    /// Closes the database: stops background work, syncs the log and releases the lock. Later
    /// calls, and iterators and snapshots still open, raise ``strata.ClosedError``. Closing twice
    /// is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        release(py, || Ok(self.db.close()?))
    }

    /// True once ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.db.path().to_path_buf()
    }

    /// True if opened with ``read_only=True``.
    #[getter]
    fn read_only(&self) -> bool {
        self.db.is_read_only()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "strata.Db({:?}{}{})",
            self.db.path().display().to_string(),
            if self.db.is_read_only() {
                ", read_only=True"
            } else {
                ""
            },
            if self.closed.load(Ordering::Acquire) {
                ", closed"
            } else {
                ""
            }
        )
    }
}}

/// A frozen view of the database from ``Db.snapshot()``: reads see the database as it was when
/// the snapshot was taken. A context manager; ``close()`` releases it (and lets compactions drop
/// the versions it kept).
#[pyclass(module = "strata", name = "Snapshot", frozen)]
struct Snapshot {
    snapshot: RwLock<Option<Arc<strata::Snapshot>>>,
    closed: Arc<AtomicBool>,
}

impl Reader for Snapshot {
    fn source(&self, py: Python<'_>) -> PyResult<Source<'_>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed_error(py, "the database under this snapshot"));
        }
        match self.snapshot.read().as_ref() {
            Some(snapshot) => Ok(Source::Snapshot(Arc::clone(snapshot))),
            None => Err(closed_error(py, "the snapshot")),
        }
    }

    fn closed_flag(&self) -> &Arc<AtomicBool> {
        &self.closed
    }
}

reader_methods! { Snapshot {
    /// Releases the snapshot; later reads raise ``strata.ClosedError``. Iterators already made
    /// from it hold their own frozen view and go on until closed or exhausted.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.snapshot.write().take();
        release(py, move || {
            drop(taken);
            Ok(())
        })
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}}

/// Puts and deletes applied together, atomically, by ``Db.write(batch)`` (rocksdict's form) or,
/// for a batch from ``Db.write_batch()``, when its ``with`` block ends without an exception
/// (plyvel's form). ``len(batch)`` is the number of operations in it.
#[pyclass(module = "strata", name = "WriteBatch", frozen)]
struct WriteBatch {
    batch: Mutex<strata::WriteBatch>,
    /// The database and sync flag of a batch from `Db.write_batch()`.
    target: Option<(Py<Db>, bool)>,
}

#[pymethods]
impl WriteBatch {
    #[new]
    fn new() -> WriteBatch {
        WriteBatch {
            batch: Mutex::new(strata::WriteBatch::new()),
            target: None,
        }
    }

    /// Adds a put of ``value`` under ``key``.
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        let value = bytes_arg(value, "value")?;
        self.batch.lock().put(key.as_slice(), value.as_slice());
        Ok(())
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value)
    }

    /// Adds a delete of ``key``.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bytes_arg(key, "key")?;
        self.batch.lock().delete(key.as_slice());
        Ok(())
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key)
    }

    /// Removes every operation.
    fn clear(&self) {
        self.batch.lock().clear();
    }

    fn __len__(&self) -> usize {
        self.batch.lock().len()
    }

    /// Applies the batch to the database it came from (``Db.write_batch()``) and empties it.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let Some((db, sync)) = &self.target else {
            return Err(exception(
                py,
                "InvalidArgumentError",
                "this batch belongs to no database: pass it to Db.write(batch)".to_string(),
                &[],
            ));
        };
        // Emptied only once written: a write that fails (read-only, closed, a background
        // error) leaves the batch as it was, as `Db.write(batch)` does.
        let batch = self.batch.lock().clone();
        db.get().write_inner(py, batch, *sync)?;
        self.batch.lock().clear();
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            // The block failed: nothing of it is written.
            self.batch.lock().clear();
        } else if self.target.is_some() {
            self.write(py)?;
        }
        Ok(false)
    }
}

impl Db {
    fn write_inner(&self, py: Python<'_>, batch: strata::WriteBatch, sync: bool) -> PyResult<()> {
        release(py, move || {
            Ok(self.db.write_opt(batch, strata::WriteOptions { sync })?)
        })
    }
}

fn run_json_value<'py>(py: Python<'py>, args: Vec<OsString>) -> PyResult<Bound<'py, PyAny>> {
    let text = release(py, move || strata_cli::run_json(args).map_err(Failure::Cli))?;
    let json = py.import("json")?;
    match json.call_method1("loads", (text.clone(),)) {
        Ok(value) => Ok(value),
        // `simulate` answers in JSON lines: one object per line.
        Err(_) => {
            let list = PyList::empty(py);
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                list.append(json.call_method1("loads", (line,))?)?;
            }
            Ok(list.into_any())
        }
    }
}

/// Runs a `strata` command that answers in JSON (`bench`, `tune`, `whatif`, `simulate`,
/// `stats`, `check`, `inspect`) with the GIL released and returns its JSON decoded: the words
/// are the command line's (`["tune", "--workload", "lookups=0.9"]`). `simulate`'s JSON lines
/// come back as a list. The public wrappers are `strata.bench(...)` and friends.
#[pyfunction]
fn _run_json<'py>(py: Python<'py>, args: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
    run_json_value(py, args.into_iter().map(OsString::from).collect())
}

/// Verifies every file of the closed database in ``path`` (``strata check --json``) and returns
/// the report as a dict. Never writes; damage is reported, not raised.
#[pyfunction]
fn check(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyAny>> {
    run_json_value(py, vec!["check".into(), path.into_os_string()])
}

/// Panics inside the binding's guarded section: the test that a Rust panic becomes
/// `strata.InternalError` rather than crossing into the interpreter.
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    release(py, || -> Result<(), Failure> {
        panic!("deliberate panic for the binding's test")
    })
}

#[pymodule]
fn _strata(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Db>()?;
    module.add_class::<WriteBatch>()?;
    module.add_class::<Snapshot>()?;
    module.add_class::<Iterator>()?;
    module.add_function(wrap_pyfunction!(check, module)?)?;
    module.add_function(wrap_pyfunction!(_run_json, module)?)?;
    module.add_function(wrap_pyfunction!(_panic_for_test, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("MAX_KEY_BYTES", strata::MAX_KEY_BYTES)?;
    module.add("MAX_VALUE_BYTES", strata::MAX_VALUE_BYTES)?;
    Ok(())
}
