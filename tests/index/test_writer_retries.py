"""A pass failed by a passing shortage (too many open files, a full disk) is
retried as soon as the shortage eases, not when a backoff grown to minutes
runs out (index/writer.py `later`, storage/backoff.py, storage/faults.py)."""

from __future__ import annotations

import errno
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from notarium_search.index.writer import Writer
from notarium_search.storage import faults
from notarium_search.storage.backoff import Backoff
from notarium_search.storage.faults import StorageFault
from tests.conftest import eventually, run_child

# Real EMFILE: the descriptor table filled in a child process. The first retry
# waits an hour there, a backoff grown long: only the eased shortage can bring
# the notes in before the child's bounds on waiting (for a loaded machine).
EMFILE_EASES = textwrap.dedent(
    """
    import json, os, resource, sys, time
    from pathlib import Path
    import notarium_search.index.writer as writer_module
    from notarium_search.logsetup import configure_logging
    from notarium_search.service import Service
    from notarium_search.settings import Settings, SpaceConfig
    from notarium_search.types import FeedFilter

    configure_logging("critical", sys.stderr)
    writer_module.RETRY_FIRST_SECONDS = 3600.0
    root, index = Path(sys.argv[1]), Path(sys.argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    settings = Settings(spaces=(SpaceConfig("notes", root, "fr"),), index_dir=index, watch=False,
                        reconcile_interval=0, rate_limit_per_minute=0)
    service = Service(settings)
    service.start()
    space = service.spaces["notes"]
    space.writing.wait_ready(100)
    (root / "nouvelle.md").write_text("---\\nid: nouvelle\\n---\\nune nouvelle venue\\n")
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    space.request_reindex()
    deadline = time.monotonic() + 100
    while "retrying in" not in (space.status().lexical.error or "") and time.monotonic() < deadline:
        time.sleep(0.05)
    during = space.status().lexical.error
    for fd in held:
        os.close(fd)
    def found():
        return [h.note.id for h in service.search("notes", "venue", FeedFilter(), 10).results]
    def retried():  # the commit shows the note a moment before the pass clears its error: wait for both
        return found() and space.status().lexical.error is None

    deadline = time.monotonic() + 100
    while not retried() and time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps({"during": during, "found": found(), "error": space.status().lexical.error}))
    service.stop()
    """
)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="descriptors counted in /proc/self/fd")
def test_a_pass_failed_by_emfile_is_retried_once_descriptors_are_back(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\nid: a\n---\npremière\n", encoding="utf-8")
    result = run_child(EMFILE_EASES, str(notes), str(tmp_path / "index"))
    assert "EMFILE" in result["during"]
    assert "retrying in 3600 s" in result["during"]
    assert (result["found"], result["error"]) == (["nouvelle"], None)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Check:
    """A shortage's check that the test eases; counts how often it was made."""

    def __init__(self) -> None:
        self.eased = False
        self.made = 0
        self.made_again = threading.Condition()

    def __call__(self) -> bool:
        with self.made_again:
            self.made += 1
            self.made_again.notify_all()
        return self.eased

    def wait_made(self, times: int) -> None:
        with self.made_again:
            assert self.made_again.wait_for(lambda: self.made >= times, timeout=60)


def later(backoff: Backoff, action: Callable[[], object], check: Check | None = None) -> threading.Thread:
    """`backoff.later`, and the thread that waits."""
    before = set(threading.enumerate())
    backoff.later(action, check)
    (waiting,) = [t for t in set(threading.enumerate()) - before if t.name == "retry"]
    return waiting


def test_a_wait_is_cut_short_once_its_check_holds_and_only_then():
    """The clock stands still, an hour before the retry is due: only the check brings it."""
    backoff = Backoff(3600.0, 3600.0, clock=Clock(), probe_seconds=0.01)
    check, ran = Check(), threading.Event()
    waiting = later(backoff, ran.set, check)
    check.wait_made(3)
    assert not ran.is_set()  # checked three times, not eased: still waiting
    check.eased = True
    waiting.join(60)
    assert ran.is_set()
    assert backoff.seconds == 3600.0  # the next failure still waits its whole backoff, checked


def test_a_wait_without_a_check_runs_when_due_and_a_cancelled_one_never():
    clock = Clock()
    backoff = Backoff(0.1, 300.0, clock=clock, probe_seconds=0.01)
    ran, cancelled = threading.Event(), threading.Event()
    waiting = later(backoff, ran.set)
    assert not ran.wait(0.3)  # no claim about time: the clock stands still, it cannot be due
    clock.now += 0.1
    waiting.join(60)
    assert ran.is_set()
    check = Check()
    waiting = later(backoff, cancelled.set, check)
    check.wait_made(1)
    backoff.cancel()
    check.eased = True
    clock.now += 3600.0
    waiting.join(60)
    assert not waiting.is_alive()
    assert not cancelled.is_set()


def emfile() -> StorageFault:
    """What a pass raises on EMFILE: the OSError is its cause, named in words."""
    try:
        try:
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as exc:
            raise StorageFault("cannot read x: EMFILE (Too many open files)") from exc
    except StorageFault as fault:
        return fault


def test_eased_means_eased_by_a_margin_from_what_was_left(monkeypatch: pytest.MonkeyPatch):
    left = [3]
    monkeypatch.setattr(faults, "descriptors_left", lambda: left[0])
    eased = faults.eased_check(emfile(), None)
    assert eased is not None
    left[0] = 3 + faults.EASED_DESCRIPTORS - 1
    assert not eased()  # a few freed: a pass would meet EMFILE again
    left[0] = 3 + faults.EASED_DESCRIPTORS
    assert eased()
    free = [10_000]
    monkeypatch.setattr(faults, "bytes_free", lambda directory: free[0])
    full = OSError(errno.ENOSPC, "No space left on device")
    assert faults.eased_check(full, None) is None  # no folder to look at
    on_disk = faults.eased_check(full, Path("/index"))
    assert on_disk is not None
    assert not on_disk()
    free[0] += faults.EASED_BYTES
    assert on_disk()
    assert faults.eased_check(OSError(errno.EIO, "I/O error"), Path("/index")) is None  # nothing cheap tells
    assert faults.eased_check(ValueError("bad segment"), Path("/index")) is None


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="descriptors counted in /proc/self/fd")
def test_descriptors_left_counts_the_open_ones(tmp_path: Path):
    assert faults.descriptors_left() is not None

    def two_opened_are_two_fewer() -> bool:
        # Tried until no other thread of the test process (a server of an
        # earlier test closing its sockets) opened or closed one in between.
        before = faults.descriptors_left()
        with open(tmp_path / "a", "w"), open(tmp_path / "b", "w"):
            return before is not None and faults.descriptors_left() == before - 2

    eventually(two_opened_are_two_fewer)
    assert faults.bytes_free(tmp_path / "not" / "made") == faults.bytes_free(tmp_path)


def test_the_writer_checks_the_fault_it_is_handling(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Space calls `later` from its `except`: the disk-full fault there is
    what the wait checks, on the space's index folder."""
    free = [0]
    looked: list[Path] = []

    def bytes_free(directory: Path) -> int:
        looked.append(directory)
        return free[0]

    monkeypatch.setattr(faults, "bytes_free", bytes_free)
    writer = Writer("s", lambda: None, tmp_path, retries=Backoff(3600.0, 3600.0, probe_seconds=0.01))
    ran = threading.Event()
    try:
        raise StorageFault("could not commit") from OSError(errno.ENOSPC, "No space left on device")
    except StorageFault:
        assert writer.later(ran.set) == 3600.0
    free[0] = faults.EASED_BYTES
    assert ran.wait(60)
    assert set(looked) == {tmp_path}
    writer.request_stop()


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's file-nr")
def test_the_system_s_descriptors_are_counted():
    left = faults.system_descriptors_left()
    assert left is not None
    assert left > 0
