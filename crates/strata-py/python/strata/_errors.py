"""The exceptions Strata raises: one base class, one subclass per kind of failure.

Every engine error reaches Python as one of these, with the engine's message (the file and
offset, where it has them). A Rust panic inside the engine or the binding never crosses into the
interpreter: it becomes :class:`InternalError`.
"""


class Error(Exception):
    """Base class of every error Strata raises."""


class CorruptionError(Error):
    """A file's contents are damaged or not in Strata's format.

    ``file`` and ``offset`` name where the damage was found.
    """

    file: str
    offset: int


class LockedError(Error):
    """Another process, or another open ``Db`` in this one, holds the database's lock."""


class InvalidArgumentError(Error, ValueError):
    """An argument or option is invalid: an unknown option, a value out of range, a key over the
    size limit. Also a ``ValueError``."""


class ReadOnlyError(Error):
    """A write, flush or compaction was asked of a database opened with ``read_only=True``."""


class ClosedError(Error):
    """The database (or the snapshot or iterator) was closed."""


class IoError(Error, OSError):
    """An operating-system I/O call failed. Also an ``OSError``."""


class BackgroundError(Error):
    """An earlier background write or fsync failed; writes are refused until the database is
    reopened, because after a failed fsync the operating system may have dropped data."""


class InternalError(Error):
    """A bug: a Rust panic inside Strata, caught at the binding instead of crashing the
    interpreter. Please report it with the message."""


__all__ = [
    "Error",
    "CorruptionError",
    "LockedError",
    "InvalidArgumentError",
    "ReadOnlyError",
    "ClosedError",
    "IoError",
    "BackgroundError",
    "InternalError",
]
