"""One copy of each note's path in a writer.

A writer holds each note's path (and id, most often the same) in the file
manifest, the link graph and the vector manifest, each decoded or parsed
apart: three copies of every path at 50,000 notes, 21 MiB beyond the first
(measured in the writer, e5-small, 2 workers; docs/benchmarks.md). Each of
them takes a note in through `shared`, and they are one string.

`shared` is `sys.intern` where interned strings are mortal (CPython 3.11,
3.13 and later: a note deleted takes its path with it). On CPython 3.12
every interned string is immortal (PEP 683): a long-running writer would
keep the path of every note ever deleted or renamed, so there the copies
stay apart.
"""

from __future__ import annotations

import sys

INTERNED_STRINGS_MORTAL = sys.version_info[:2] != (3, 12)


def _same(text: str) -> str:
    return text


shared = sys.intern if INTERNED_STRINGS_MORTAL else _same
"""The one copy of `text` the writer's tables share (see the module's docstring)."""
