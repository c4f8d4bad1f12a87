"""A read-only open beside a writer in another process: the writer (a child Python process,
driven over its stdin and stdout) keeps the database open; this process opens it with
``read_only=True`` and reads what the writer flushed and acknowledged."""

from __future__ import annotations

import queue
import subprocess
import sys
import textwrap
import threading

import pytest

import strata
from conftest import key, value

WRITER = textwrap.dedent(
    """
    import sys
    import strata

    db = strata.Db(sys.argv[1], write_buffer_bytes=64 << 10)
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command, args = words[0], words[1:]
        try:
            if command == "fill":  # fill FIRST COUNT SIZE
                first, count, size = map(int, args)
                batch = strata.WriteBatch()
                for i in range(first, first + count):
                    stem = b"value%08d-" % i
                    batch.put(b"key%08d" % i, (stem * (size // len(stem) + 1))[:size])
                db.write(batch)
            elif command == "put":  # put KEY VALUE (hex), synced
                db.put(bytes.fromhex(args[0]), bytes.fromhex(args[1]), sync=True)
            elif command == "delete":
                db.delete(bytes.fromhex(args[0]), sync=True)
            elif command == "flush":
                db.flush()
            elif command == "compact":
                db.compact()
            elif command == "quit":
                break
            print("ok", flush=True)
        except Exception as error:
            print("error " + type(error).__name__ + " " + str(error).replace("\\n", " "), flush=True)
    db.close()
    print("closed", flush=True)
    """
)

TIMEOUT = 60


class WriterProcess:
    def __init__(self, path: str):
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue = queue.Queue()
        # A thread that reads the child's answers, so that a wait can time out.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        assert self.answer() == "ready"

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def answer(self) -> str:
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"the writer process did not answer within {TIMEOUT}s")
        if line is None:
            pytest.fail(f"the writer process ended: {self.process.stderr.read()}")
        return line

    def ask(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        assert self.answer() == "ok"

    def quit(self) -> None:
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        assert self.answer() == "closed"
        assert self.process.wait(TIMEOUT) == 0

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass


@pytest.fixture
def writer(db_path):
    child = WriterProcess(db_path)
    try:
        yield child
    finally:
        child.terminate()


def test_read_only_beside_a_writer_process(writer, db_path):
    writer.ask("fill 0 3000 64")
    writer.ask("flush")
    with strata.Db(db_path, read_only=True) as reader:
        assert reader.read_only
        assert reader[key(0)] == value(0, 64)
        assert reader.multi_get([key(1), key(2999), key(3000)]) == [
            value(1, 64),
            value(2999, 64),
            None,
        ]
        assert sum(1 for _ in reader.keys()) == 3000
        # The writer's lock is held: this process cannot open it for writing...
        with pytest.raises(strata.LockedError):
            strata.Db(db_path)
        # ...and the read-only handle writes nothing.
        with pytest.raises(strata.ReadOnlyError):
            reader.put(b"x", b"y")
        stats = reader.stats()
        assert sum(level["entries"] for level in stats["levels"]) >= 3000


def test_read_only_sees_acknowledged_synced_writes(writer, db_path):
    writer.ask("fill 0 500 32")
    writer.ask("flush")
    # Synced but not flushed: in the write-ahead log only.
    writer.ask("put %s %s" % (b"synced".hex(), b"in-the-log".hex()))
    writer.ask("delete %s" % key(7).hex())
    with strata.Db(db_path, read_only=True) as reader:
        assert reader[b"synced"] == b"in-the-log"
        assert reader.get(key(7)) is None
        assert reader[key(8)] == value(8)
        frozen = dict(reader.items())
    # The writer goes on (more data, a flush, a compaction); a new read-only open sees it, the
    # earlier view was as of its open.
    writer.ask("fill 1000 2000 64")
    writer.ask("flush")
    writer.ask("compact")
    with strata.Db(db_path, read_only=True) as reader:
        assert reader[key(2999)] == value(2999, 64)
        assert reader[b"synced"] == b"in-the-log"
        assert len(dict(reader.items())) == len(frozen) + 2000
    # strata.inspect and strata.check read beside the writer too.
    tree = strata.inspect(db_path)
    assert isinstance(tree, dict) and tree
    writer.quit()
    assert strata.check(db_path)["sound"] is True
    with strata.Db(db_path) as db:  # the lock went with the writer
        assert db[key(1500)] == value(1500, 64)


def test_read_only_iterator_survives_writer_compaction(writer, db_path):
    writer.ask("fill 0 2000 64")
    writer.ask("flush")
    reader = strata.Db(db_path, read_only=True)
    try:
        it = reader.iterator(include_value=False)
        first = next(it)
        # The writer rewrites every file while the reader has them open.
        writer.ask("fill 0 2000 80")
        writer.ask("compact")
        rest = list(it)
        # The iterator holds the files of its view: it reads them to the end.
        assert [first, *rest] == [key(i) for i in range(2000)]
    finally:
        reader.close()
