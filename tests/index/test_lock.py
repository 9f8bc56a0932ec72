"""The writer lock and its holder (index/lock.py): who holds it, and a holder
on its way out waited for, a bounded time (time injected: no test waits)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from notarium_search.index.lock import LOCK_FILE, held_for_good, lock_holder, lock_space
from notarium_search.index.manifest import Manifest
from notarium_search.storage.faults import IndexLocked

# Takes the lock as the service would, says so, then waits to be killed.
HOLDER = """
import sys
from pathlib import Path
from notarium_search.index.lock import lock_space
handle = lock_space(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "index"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def orphan(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    """What a server worker's lock file says once its supervisor was killed: a parent it no longer has."""
    (tmp_path / LOCK_FILE).write_text(f"{holder.pid} 999999999 serve\n")


def test_the_holder_is_named(tmp_path: Path, holder: subprocess.Popen[str]):
    found = lock_holder(tmp_path)
    assert found is not None
    assert (found.pid, found.parent, found.command) == (holder.pid, os.getpid(), "index")
    assert not found.leaving
    with pytest.raises(IndexLocked, match=rf"in use by another process \(`notarium-search index`, pid {holder.pid}\)"):
        lock_space(tmp_path, sleep=lambda _: pytest.fail("a live holder is not waited for"))


def test_a_holder_on_its_way_out_is_waited_for(tmp_path: Path, holder: subprocess.Popen[str]):
    orphan(tmp_path, holder)
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the holder dies while we wait
        waits.append(seconds)
        holder.kill()
        holder.wait()

    handle = lock_space(tmp_path, sleep=sleep)
    try:
        assert len(waits) == 1
        assert lock_holder(tmp_path) is not None
        assert lock_holder(tmp_path).pid == os.getpid()  # type: ignore[union-attr]
    finally:
        handle.close()


def test_a_holder_that_does_not_go_is_waited_for_a_bounded_time(tmp_path: Path, holder: subprocess.Popen[str]):
    orphan(tmp_path, holder)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(IndexLocked, match="in use by another process"):
        lock_space(tmp_path, handover_seconds=30.0, clock=lambda: now[0], sleep=sleep)
    assert now[0] >= 30.0


def test_serve_s_look_before_it_starts(tmp_path: Path, holder: subprocess.Popen[str]):
    found = held_for_good(tmp_path)
    assert found is not None
    assert found.command == "index"
    holder.kill()
    holder.wait()
    assert held_for_good(tmp_path) is None  # free: and not kept by the look
    lock_space(tmp_path).close()
    assert held_for_good(tmp_path / "never-indexed") is None


def test_an_orphaned_index_command_is_not_waited_for(tmp_path: Path, holder: subprocess.Popen[str]):
    """`nohup notarium-search index … &` after its shell exited is orphaned too, and lives on:
    waiting for it stalled a service's start by 30 s a space."""
    (tmp_path / LOCK_FILE).write_text(f"{holder.pid} 999999999 index\n")
    with pytest.raises(IndexLocked):
        lock_space(tmp_path, sleep=lambda _: pytest.fail("a live `index` is not waited for"))


def test_a_clean_stop_leaves_no_holder_to_wait_for(tmp_path: Path):
    from notarium_search.index.writer_lock import WriterLock

    lock = WriterLock("notes", tmp_path)
    lock.take(lambda: Manifest.load(tmp_path / "manifest.json", "f"), forget=False)
    assert lock_holder(tmp_path) is not None
    lock.release()
    assert lock_holder(tmp_path) is None  # a killed one leaves its ids: Holder.killed, the port waited for


def test_a_manifest_that_cannot_be_read_leaves_the_lock_free(tmp_path: Path):
    """The manifest is read once the lock is held (WriterLock.take): a passing
    fault reading it (EMFILE, EIO) lets the lock go at once. Held by an open
    file of a space that never opened, the registry's next try in this same
    process found the space "in use by another process" for as long as
    anything kept that failed attempt (its exception, here `failed`)."""
    from notarium_search.index.writer_lock import WriterLock
    from notarium_search.storage.faults import StorageFault

    def unreadable() -> Manifest:
        raise StorageFault("cannot read manifest.json: too many open files")

    lock = WriterLock("notes", tmp_path)
    with pytest.raises(StorageFault) as failed:
        lock.take(unreadable, forget=False)
    assert failed.value is not None  # kept alive, and `lock` with it: no finaliser frees the lock
    again = WriterLock("notes", tmp_path)
    assert again.take(lambda: Manifest.load(tmp_path / "manifest.json", "f"), forget=False).entries == {}
    again.release()
