"""The collector's full passes stay off the request path (collector.py):
what a writer job keeps is frozen out of them, and cycles that die while
frozen are reclaimed once the service is idle, or after a long busy spell."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from notarium_search.collector import IDLE_SECONDS, MAX_FROZEN_SECONDS, FrozenHeap
from notarium_search.index.writer import Writer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Node:
    """A container the collector tracks; two of them make a cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def tracked(obj: object) -> bool:
    """Whether a full collection would walk `obj` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_what_a_writer_job_keeps_is_out_of_full_collections():
    """At 50,000 notes with the graph, full collections walked the link graph
    and the vectors' records for 175-490 ms with the GIL held, freeing
    nothing: the HTTP tail of issue 17."""
    kept: dict[str, object] = {}
    done = threading.Event()

    def build() -> None:
        kept["links"] = {f"note-{i}": [f"target-{i}"] for i in range(1000)}

    writer = Writer("s", lambda: None)
    writer.start()
    try:
        writer.put(build)
        writer.put(done.set)
        assert done.wait(30)
    finally:
        writer.request_stop()
        writer.join(30)
    links = kept["links"]
    assert isinstance(links, dict)
    assert not tracked(links)
    assert not any(tracked(value) for value in links.values())
    garbage_young = Node()
    assert tracked(garbage_young)  # a request's objects are collected as before


def test_young_garbage_is_collected_before_freezing():
    heap = FrozenHeap(Clock())
    first, second = Node(), Node()
    first.other, second.other = second, first
    watch = weakref.ref(first)
    del first, second
    heap.after_job()
    assert watch() is None  # not frozen, hence never leaked


def frozen_cycle(heap: FrozenHeap) -> weakref.ref[Node]:
    """A cycle alive when a job ends (frozen), then dropped."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    heap.after_job()
    assert not tracked(first)
    return weakref.ref(first)


def test_cycles_that_die_frozen_are_reclaimed_once_idle():
    clock = Clock()
    heap = FrozenHeap(clock)
    watch = frozen_cycle(heap)
    gc.collect()
    assert watch() is not None  # out of reach of ordinary collections
    clock.now += IDLE_SECONDS - 1
    assert not heap.tick()  # busy a moment ago: nobody should wait for a full pass
    clock.now += 1
    assert heap.tick()
    assert watch() is None
    assert heap.full_collections == 1
    clock.now += IDLE_SECONDS * 10
    assert not heap.tick()  # nothing happened since: no pass again


def test_a_service_never_idle_still_collects_after_the_longest_spell():
    clock = Clock()
    heap = FrozenHeap(clock)
    watch = frozen_cycle(heap)
    while clock.now < 1000.0 + MAX_FROZEN_SECONDS - 1:
        clock.now += 1
        heap.note_activity()
        assert not heap.tick()
    assert watch() is not None
    clock.now += 1
    heap.note_activity()
    assert heap.tick()
    assert watch() is None


def test_what_survives_a_full_collection_is_frozen_again():
    clock = Clock()
    heap = FrozenHeap(clock)
    survivor = Node()
    heap.after_job()
    clock.now += IDLE_SECONDS
    assert heap.tick()
    assert not tracked(survivor)
