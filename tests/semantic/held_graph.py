"""A compaction's new graph held at its first insert, for tests of what goes
on meanwhile (semantic/vector_store.py, semantic/compaction.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from notarium_search.semantic import vector_store
from tests.conftest import WAIT_SECONDS


def held_graph_builds(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """(building, release): a compaction's first insert into its new graph
    sets `building` and waits for `release`."""
    building, release = threading.Event(), threading.Event()
    made = vector_store._new_index

    def held_index(dim: int) -> Any:
        index = made(dim)
        add = index.add

        def held_add(*args: Any, **kwargs: Any) -> Any:
            if not building.is_set():
                building.set()
                assert release.wait(WAIT_SECONDS)
            return add(*args, **kwargs)

        index.add = held_add  # type: ignore[method-assign]
        return index

    monkeypatch.setattr(vector_store, "_new_index", held_index)
    return building, release
