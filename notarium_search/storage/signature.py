"""Telling one version of a file from the next without reading it: what the
workers that follow a writer look at every 0.1 s (index/follower.py)."""

from __future__ import annotations

import os
from pathlib import Path

Signature = tuple[int, int, int]


def file_signature(path: Path) -> Signature | None:
    """(inode, size, mtime) of the file, or None: no file. Every file the
    writer shares is replaced whole (a new inode), never rewritten in place."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns
