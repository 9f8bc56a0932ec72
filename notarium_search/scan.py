"""Find the notes of a space on disk (stat only, no content read)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import structlog

from notarium_search.models import SourceFile

log = structlog.get_logger(__name__)


class SpaceUnavailable(RuntimeError):
    """The space's folder is missing, not a folder, or cannot be listed (an
    unmounted share, a missing bind mount): its notes are unknown, not
    deleted, so nothing may be dropped from the index."""


@dataclass(frozen=True, slots=True)
class Scan:
    files: list[SourceFile]  # sorted by path
    unreadable: tuple[str, ...] = ()
    """Folders (relative, ending in "/") that could not be listed: their
    notes are unknown, not gone."""


def check_root(root: Path) -> None:
    """Raise SpaceUnavailable unless the space's folder is there and is a folder."""
    try:
        info = os.stat(root)
    except FileNotFoundError as exc:
        raise SpaceUnavailable(
            f"the notes folder {root} is missing (an unmounted share or a missing mount?):"
            " the index is kept as it is until the folder is back"
        ) from exc
    except OSError as exc:
        raise SpaceUnavailable(f"the notes folder {root} cannot be reached: {exc.strerror}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise SpaceUnavailable(f"the notes folder {root} is not a folder: the index is kept as it is")


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob over POSIX relative paths: `**/` spans folders
    (including none), `*` and `?` stay inside one path segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(rel_path: str, patterns: Iterable[str]) -> bool:
    return any(glob_regex(p).match(rel_path) for p in patterns)


def scan_space(root: Path, include: tuple[str, ...], exclude: tuple[str, ...]) -> Scan:
    """Every note file of the space, sorted by path. Hidden files and folders,
    excluded folders and symlinks that lead outside the space are skipped; a
    folder that cannot be listed is logged and named in `unreadable`. Raises
    SpaceUnavailable when the space's folder itself is not there: os.walk
    would find nothing, and every note would look deleted."""
    check_root(root)
    root_real = Path(os.path.realpath(root))
    found: list[SourceFile] = []
    unreadable: list[str] = []

    def unlisted(exc: OSError) -> None:
        rel = os.path.relpath(exc.filename, root).replace(os.sep, "/") if exc.filename else "."
        if rel == "." or rel.startswith("../"):  # the space's folder went away during the walk
            raise SpaceUnavailable(f"the notes folder {root} cannot be listed: {exc.strerror}") from exc
        unreadable.append(rel + "/")
        log.warning("folder_unreadable", path=rel, reason=exc.strerror, kept="its notes stay indexed as they were")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if _folder_kept(f"{rel_dir}{d}/", exclude))
        for name in filenames:
            rel_path = rel_dir + name
            if not _file_kept(rel_path, include, exclude):
                continue
            source = _stat(root_real, os.path.join(dirpath, name), rel_path)
            if source is not None:
                found.append(source)
    found.sort(key=lambda s: s.rel_path)
    return Scan(found, tuple(unreadable))


def _stat(root_real: Path, abs_path: str, rel_path: str) -> SourceFile | None:
    try:
        if os.path.islink(abs_path):
            target = Path(os.path.realpath(abs_path))
            if root_real not in target.parents:
                log.warning("note_skipped", path=rel_path, reason="symlink points outside the space")
                return None
        info = os.stat(abs_path)
    except OSError as exc:
        log.warning("note_skipped", path=rel_path, reason=f"cannot stat: {exc.strerror}")
        return None
    if not os.path.isfile(abs_path):
        return None
    return SourceFile(rel_path=rel_path, abs_path=abs_path, size=info.st_size, mtime_ns=info.st_mtime_ns)


def stat_paths(
    root: Path, rel_paths: Iterable[str], include: tuple[str, ...], exclude: tuple[str, ...]
) -> tuple[list[SourceFile], list[str]] | None:
    """The note files among `rel_paths` (what a watcher reported), kept or
    skipped exactly as `scan_space` would, and the paths that no longer
    exist. None when one of them is a folder, or lies below a symlinked one:
    only a full scan follows a folder's move, creation or deletion."""
    root_real = os.path.realpath(root)
    found: list[SourceFile] = []
    missing: list[str] = []
    for rel_path in sorted(set(rel_paths)):
        abs_path = os.path.join(root, rel_path)
        try:
            os.lstat(abs_path)
        except (FileNotFoundError, NotADirectoryError):
            missing.append(rel_path)
            continue
        except OSError:
            return None  # e.g. an unreadable folder: not known to be gone, and a full scan says why
        if os.path.isdir(abs_path) or os.path.realpath(os.path.dirname(abs_path)) != os.path.join(
            root_real, os.path.dirname(rel_path)
        ).rstrip("/"):
            return None
        if _scanned(rel_path, include, exclude):
            source = _stat(Path(root_real), abs_path, rel_path)
            if source is not None:
                found.append(source)
    return found, missing


def _scanned(rel_path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether `scan_space` would reach and keep this file."""
    parts = rel_path.split("/")
    folders = ("/".join(parts[: i + 1]) + "/" for i in range(len(parts) - 1))
    return all(_folder_kept(folder, exclude) for folder in folders) and _file_kept(rel_path, include, exclude)


def _folder_kept(rel_folder: str, exclude: tuple[str, ...]) -> bool:
    """`rel_folder` ends with "/": hidden and excluded folders are not walked."""
    return not rel_folder.rstrip("/").rpartition("/")[2].startswith(".") and not matches_any(rel_folder, exclude)


def _file_kept(rel_path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    name = rel_path.rpartition("/")[2]
    return not name.startswith(".") and matches_any(rel_path, include) and not matches_any(rel_path, exclude)
