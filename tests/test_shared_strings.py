"""shared_strings.shared: one copy of each path for the writer's tables, and
a note's path freed with the note (never kept for the process's life)."""

from __future__ import annotations

import sys

from notarium_search.shared_strings import INTERNED_STRINGS_MORTAL, shared
from tests.conftest import run_child

# 5,000 paths made shared, then dropped: what tracemalloc still counts.
FREED_WITH_THEIR_NOTES = """
import gc, json, tracemalloc
from notarium_search.shared_strings import shared
tracemalloc.start()
paths = [shared(f"Projets/dossier {i % 50}/Compte rendu {i} " + "é" * 200 + ".md") for i in range(5_000)]
gc.collect()
held = tracemalloc.get_traced_memory()[0]
del paths
gc.collect()
print(json.dumps({"held": held, "left": tracemalloc.get_traced_memory()[0]}))
"""


def test_equal_paths_become_one_string():
    first = shared("".join(["Journal/", "2024-01-22.md"]))
    second = shared("".join(["Journal/2024", "-01-22.md"]))
    assert first == second
    assert (first is second) == INTERNED_STRINGS_MORTAL


def test_a_shared_path_is_freed_with_its_note():
    """On CPython 3.12 `sys.intern` keeps every string for the process's life
    (3.12.1: 1.69 of 1.73 MB left; 3.11 and 3.13: the interned table's slots,
    0.42 MB and nothing): a writer would keep every deleted note's path."""
    freed = run_child(FREED_WITH_THEIR_NOTES)
    assert freed["left"] < freed["held"] / 2, (sys.version_info, freed)
