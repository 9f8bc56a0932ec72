"""Find the notes of a space on disk (stat only), and open one safely.

The walk is iterative (os.walk recursed on Python 3.11: 1,000 nested folders
raised RecursionError and the whole space stayed at 0 notes) and bounded in
depth. An error listing or stat'ing something says its notes are unknown,
never that they are deleted; a shortage of the machine's resources (too many
open files, no memory) stops the pass, which is tried again later.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import BinaryIO

import msgspec

from notarium_search.logsetup import get_logger
from notarium_search.notes.formats import include_patterns
from notarium_search.storage.faults import describe, stop_if_short
from notarium_search.types import SourceFile

# Deeper folders are skipped with a logged reason. Real vaults nest a handful
# of levels; the bound only keeps a pathological tree (1,000 levels in the
# attack review) from costing paths of thousands of characters per file.
MAX_FOLDER_DEPTH = 128
# A name that is gone between the listing and the stat: the note is deleted.
_GONE_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR})

log = get_logger(__name__)


class SpaceUnavailable(RuntimeError):
    """The space's folder is missing, not a folder, or cannot be listed (an
    unmounted share, a missing bind mount): its notes are unknown, not
    deleted, so nothing may be dropped from the index."""


class OutsideSpace(OSError):
    """What a note's path opened is not a regular file inside the space (a
    symlink swapped after the scan, a device, a FIFO)."""


class Scan(msgspec.Struct, frozen=True):
    files: list[SourceFile]  # sorted by path
    unreadable: tuple[str, ...] = ()
    """Folders (relative, ending in "/") that could not be listed: their
    notes are unknown, not gone."""
    unknown: frozenset[str] = msgspec.field(default_factory=frozenset)
    """Files listed but not stat'able (a permission, an I/O error): unknown, not gone."""

    def keeps(self, rel_path: str) -> bool:
        """Whether a recorded note missing from `files` must be kept: it lies
        where this scan could not see."""
        return rel_path in self.unknown or rel_path.startswith(self.unreadable)


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
        stop_if_short(exc, root)
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
    """Every note file of the space, sorted by path: those `include` matches
    (`()`: every file of a registered note format). Hidden files and folders,
    excluded folders, folders deeper than MAX_FOLDER_DEPTH and symlinks that
    lead outside the space are skipped; a folder that cannot be listed is
    logged and named in `unreadable`. Raises SpaceUnavailable when the space's
    folder itself is not there (every note would look deleted), StorageFault
    when the machine is short of descriptors or memory."""
    check_root(root)
    root_real = Path(os.path.realpath(root))
    walk = _Walk(root, root_real, include_patterns(include), exclude)
    pending = [("", 0)]  # (relative folder ending in "/" or "", depth): a stack, not recursion
    while pending:
        rel_dir, depth = pending.pop()
        pending.extend((folder, depth + 1) for folder in walk.folder(rel_dir, depth))
    walk.found.sort(key=lambda s: s.path)
    return Scan(walk.found, tuple(walk.unreadable), frozenset(walk.unknown))


class _Walk:
    """The state of one scan: what was found, and what could not be seen."""

    def __init__(self, root: Path, root_real: Path, include: tuple[str, ...], exclude: tuple[str, ...]) -> None:
        self.root, self.root_real, self.include, self.exclude = root, root_real, include, exclude
        self.found: list[SourceFile] = []
        self.unreadable: list[str] = []
        self.unknown: list[str] = []

    def folder(self, rel_dir: str, depth: int) -> list[str]:
        """Stat the notes of one folder; return its sub-folders to walk."""
        abs_dir = os.path.join(self.root, rel_dir) if rel_dir else str(self.root)
        try:
            with os.scandir(abs_dir) as listing:
                entries = [(e.name, _is_folder(e), _is_link(e)) for e in listing]
        except OSError as exc:
            self._unlisted(rel_dir, exc)
            return []
        folders = []
        for name, is_folder, is_link in sorted(entries):
            rel_path = rel_dir + name
            if is_folder:
                if _folder_kept(rel_path + "/", self.exclude):
                    folders.append(rel_path + "/")
            elif _file_kept(rel_path, self.include, self.exclude):
                self._add(os.path.join(abs_dir, name), rel_path, is_link)
        if folders and depth + 1 > MAX_FOLDER_DEPTH:
            log.warning(
                "folder_skipped", path=rel_dir.rstrip("/"), reason=f"sub-folders deeper than {MAX_FOLDER_DEPTH} levels"
            )
            return []
        return folders[::-1]  # popped in name order

    def _add(self, abs_path: str, rel_path: str, listed_as_link: bool) -> None:
        try:
            source = _stat(self.root_real, abs_path, rel_path, listed_as_link)
        except OSError as exc:  # not known to be gone: kept as it was indexed
            self.unknown.append(rel_path)
            log.warning("note_unreadable", path=rel_path, reason=describe(exc), kept="stays indexed as it was")
            return
        if source is not None:
            self.found.append(source)

    def _unlisted(self, rel_dir: str, exc: OSError) -> None:
        stop_if_short(exc, self.root / rel_dir)
        if not rel_dir:  # the space's folder went away during the walk
            raise SpaceUnavailable(f"the notes folder {self.root} cannot be listed: {exc.strerror}") from exc
        self.unreadable.append(rel_dir)
        reason = "path too long" if exc.errno == errno.ENAMETOOLONG else exc.strerror
        log.warning(
            "folder_unreadable", path=rel_dir.rstrip("/"), reason=reason, kept="its notes stay indexed as they were"
        )


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """A real folder: symlinked folders are not walked (they could lead out of
    the space, or loop)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    """Whether the listing says a symlink (the directory entry's type: no
    system call where the file system gives it); True when it cannot tell."""
    try:
        return entry.is_symlink()
    except OSError:
        return True


def _stat(root_real: Path, abs_path: str, rel_path: str, listed_as_link: bool = True) -> SourceFile | None:
    """The note file at `abs_path`; None when it is not one (gone, not a
    regular file, a symlink out of the space). Raises OSError when it cannot be
    told (StorageFault when the machine is short of resources).

    `listed_as_link` False: the folder's listing gave a file that is not a
    symlink, so one stat that does not follow links says it all (a symlink
    put in its place since is no regular file: skipped until the next pass).
    One system call a note instead of two: a scan of the 50,000-note bench vault
    0.57-0.59 -> 0.44-0.48 s."""
    try:
        if not listed_as_link:
            info = os.stat(abs_path, follow_symlinks=False)
        else:
            if os.path.islink(abs_path):
                target = Path(os.path.realpath(abs_path))
                if root_real not in target.parents:
                    log.warning("note_skipped", path=rel_path, reason="symlink points outside the space")
                    return None
            info = os.stat(abs_path)
    except OSError as exc:
        stop_if_short(exc, abs_path)
        if exc.errno in _GONE_ERRNOS or exc.errno == errno.ELOOP:
            return None  # deleted since the listing, or a dangling or looping symlink: not a note
        raise
    if not stat.S_ISREG(info.st_mode):
        return None
    return SourceFile(
        path=rel_path, abs_path=abs_path, size=info.st_size, mtime_ns=info.st_mtime_ns, birth_ns=birth_ns(info)
    )


def birth_ns(info: os.stat_result) -> int | None:
    """When the file was created, where `os.stat` says: `st_birthtime` on
    macOS and the BSDs (Windows too from Python 3.12). On Linux the file
    systems that record it (ext4, btrfs, xfs) give it only through statx(2),
    which Python 3.11's `os.stat` does not call, and no maintained package
    wraps: None there, and a note's `created` falls back to its `updated`."""
    birth = getattr(info, "st_birthtime", None)
    return int(birth * 1_000_000_000) if isinstance(birth, int | float) and birth > 0 else None


def open_note(root_real: str, rel_path: str) -> BinaryIO:
    """Open a note of the space whose real path (os.path.realpath, resolved
    once by the caller) is `root_real`, then check what was opened: a regular
    file whose real path lies inside the space. Checking the path first and
    opening it later let a symlink swapped in between get a file from outside
    the space indexed (31 of 1,411 searches in the attack review). O_NONBLOCK:
    a FIFO swapped in must not block the writer on open. Raises OutsideSpace."""
    fd = os.open(os.path.join(root_real, rel_path), os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutsideSpace(errno.EINVAL, "not a regular file", rel_path)
        opened = _opened_path(fd)
        if opened is not None and not opened.startswith(root_real.rstrip("/") + "/"):
            raise OutsideSpace(errno.EACCES, "symlink points outside the space", rel_path)
        if opened is None and not _same_file_inside(fd, root_real, os.path.join(root_real, rel_path)):
            raise OutsideSpace(errno.EACCES, "symlink points outside the space", rel_path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _opened_path(fd: int) -> str | None:
    """The real path of an open descriptor (Linux /proc, macOS F_GETPATH); None if unknown."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    get_path: int | None = getattr(fcntl, "F_GETPATH", None)
    if get_path is None:
        return None
    try:
        raw = fcntl.fcntl(fd, get_path, b"\0" * 1024)
    except OSError:
        return None
    return raw.split(b"\0", 1)[0].decode(errors="surrogateescape")


def _same_file_inside(fd: int, root_real: str, path: str) -> bool:
    """Without a way to name the descriptor's file: it is the file the path
    resolves to now, and that lies inside the space."""
    real = os.path.realpath(path)
    if not real.startswith(root_real.rstrip("/") + "/"):
        return False
    try:
        now = os.stat(real)
    except OSError:
        return False
    opened = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)


def stat_paths(
    root: Path, rel_paths: Iterable[str], include: tuple[str, ...], exclude: tuple[str, ...]
) -> tuple[list[SourceFile], list[str]] | None:
    """The note files among `rel_paths` (what a watcher reported), kept or
    skipped exactly as `scan_space` would, and the paths that no longer
    exist. None when one of them is a folder, or lies below a symlinked one:
    only a full scan follows a folder's move, creation or deletion."""
    include = include_patterns(include)
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
        except OSError as exc:
            stop_if_short(exc, abs_path)
            return None  # e.g. an unreadable folder: not known to be gone, and a full scan says why
        if os.path.isdir(abs_path) or os.path.realpath(os.path.dirname(abs_path)) != os.path.join(
            root_real, os.path.dirname(rel_path)
        ).rstrip("/"):
            return None
        if _scanned(rel_path, include, exclude):
            try:
                source = _stat(Path(root_real), abs_path, rel_path)
            except OSError:
                return None  # not known to be gone or changed: a full scan keeps it and says why
            if source is not None:
                found.append(source)
    return found, missing


def _scanned(rel_path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """Whether `scan_space` would reach and keep this file."""
    parts = rel_path.split("/")
    if len(parts) - 1 > MAX_FOLDER_DEPTH:
        return False
    folders = ("/".join(parts[: i + 1]) + "/" for i in range(len(parts) - 1))
    return all(_folder_kept(folder, exclude) for folder in folders) and _file_kept(rel_path, include, exclude)


def _folder_kept(rel_folder: str, exclude: tuple[str, ...]) -> bool:
    """`rel_folder` ends with "/": hidden and excluded folders are not walked."""
    return not rel_folder.rstrip("/").rpartition("/")[2].startswith(".") and not matches_any(rel_folder, exclude)


def _file_kept(rel_path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    name = rel_path.rpartition("/")[2]
    return not name.startswith(".") and matches_any(rel_path, include) and not matches_any(rel_path, exclude)
