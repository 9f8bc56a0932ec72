"""The folder the indexes live in (NOTARIUM_INDEX_DIR), made and proved
writable before a command that writes indexes starts.

The Docker image runs as uid 10001; a host folder mounted on /data belongs to
whoever made it (often root, uid 0). The first write then failed inside the
server's worker, as a PermissionError traceback. Checked first instead, it is
one line that says the path, whose it is, who we are and the two fixes.

The check makes the folder (parents too) and creates then removes one empty
temporary file in it: nothing else is touched. Settings already refuse an
index folder inside a notes folder, so no note folder is ever written.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from notarium_search.storage.faults import describe

PROBE_PREFIX = ".notarium-write-check-"
# Files Docker and Podman put in a container's root: there, the folder to hand
# over is the host folder mounted on the container's path, not the path itself.
CONTAINER_MARKERS = (Path("/.dockerenv"), Path("/run/.containerenv"))
MOUNT_TABLE = Path("/proc/self/mountinfo")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes a space in a path as \040
_REFUSED = frozenset({errno.EACCES, errno.EPERM})
_NOT_A_FOLDER = frozenset({errno.EEXIST, errno.ENOTDIR})


class IndexRootUnwritable(RuntimeError):
    """The index folder cannot be made or written; `str(exc)` is the one line to show."""


def ensure_writable(folder: Path, tree: Path | None = None) -> None:
    """Make `folder` (and its parents) if missing and prove this process can
    create a file in it; IndexRootUnwritable with the reason otherwise.
    `tree`: the folder the fix hands over whole (`chown -R`), when `folder`
    is one space's folder inside it (default: `folder`)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise IndexRootUnwritable(explain(folder, exc, tree)) from exc


def explain(folder: Path, exc: OSError, tree: Path | None = None) -> str:
    """One line for the failure `exc` met while making or writing `folder`."""
    folder = Path(os.path.abspath(folder))
    tree = folder if tree is None else Path(os.path.abspath(tree))
    where = f"cannot write the index folder {folder}"
    if exc.errno == errno.EROFS:
        return (
            f"{where}: it is on a read-only file system (a volume or host folder mounted read-only):"
            " mount it read-write (no `:ro`)"
        )
    if exc.errno in _NOT_A_FOLDER:
        return f"{where}: it, or a folder above it, is a file, not a folder"
    blocker, info, missing = _blocker(folder)
    if exc.errno not in _REFUSED or info is None:
        return f"{where}: {describe(exc)}"
    uid, gid = os.geteuid(), os.getegid()
    who = (
        f"owner uid {info.st_uid} gid {info.st_gid}, mode {stat.S_IMODE(info.st_mode):04o};"
        f" this process runs as uid {uid} gid {gid}"
    )
    # Never "run as root" as a fix: a root-owned folder is handed over instead.
    run_as = "" if info.st_uid == 0 else f" or run as its owner (docker run --user {info.st_uid}:{info.st_gid} …)"
    if blocker != folder and not missing:
        fix = f"let this user through it (chmod o+x {blocker})"
        return f"cannot reach the index folder {folder}: {blocker} does not let this process in ({who}): {fix}{run_as}"
    if blocker != folder:
        here = f"make it and give it to this user (mkdir -p {folder} && chown -R {uid}:{gid} {folder})"
        fix = _hand_over(blocker, here, uid, gid)
        refusal = f"{blocker} does not let this process write ({who})"
        return f"cannot create the index folder {folder}: {refusal}: {fix}{run_as}"
    if _mode_allows(info, uid, gid):
        return (
            f"{where} ({who}): its mode allows this user, so something else refuses: SELinux (relabel the"
            " volume: `-v …:/data:z`) or a network file system that maps this user to another"
        )
    if info.st_uid == uid:
        return f"{where} ({who}): let its owner, this user, write it (chmod u+rwx {folder})"
    fix = _hand_over(tree, f"give it to this user (chown -R {uid}:{gid} {tree})", uid, gid)
    return f"{where} ({who}): {fix}{run_as}"


def _blocker(folder: Path) -> tuple[Path, os.stat_result | None, bool]:
    """The nearest of `folder` and its parents that this process can look at,
    its stat, and whether everything below it is merely missing (rather than
    out of reach)."""
    missing = True
    for candidate in (folder, *folder.parents):
        try:
            return candidate, os.stat(candidate), missing
        except FileNotFoundError:
            continue
        except OSError:
            missing = False
    return folder, None, missing


def _mode_allows(info: os.stat_result, uid: int, gid: int) -> bool:
    """Whether the folder's mode lets this process create a file in it."""
    if info.st_uid == uid:
        wanted = stat.S_IWUSR | stat.S_IXUSR
    elif info.st_gid == gid or info.st_gid in os.getgroups():
        wanted = stat.S_IWGRP | stat.S_IXGRP
    else:
        wanted = stat.S_IWOTH | stat.S_IXOTH
    return info.st_mode & wanted == wanted


def _hand_over(path: Path, here: str, uid: int, gid: int) -> str:
    """The fix that gives `path` to this user: `here` (a command on this
    machine), or in a container, the host folder mounted on it or above it."""
    host = _host_folder(path)
    if host is None:
        return here
    return f"give the host folder mounted on {host} to this user (on the host: chown -R {uid}:{gid} that folder)"


def _host_folder(path: Path) -> Path | None:
    """In a container, the mount point (other than /) that holds `path`: the
    host folder mounted there is what the operator can hand over. None
    outside a container, or when `path` is in the container's own files."""
    if not any(marker.exists() for marker in CONTAINER_MARKERS):
        return None
    try:
        table = MOUNT_TABLE.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # Field 5 of each line is the mount point (man 5 proc).
    rows = [line.split() for line in table.splitlines()]
    points = {_OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), row[4]) for row in rows if len(row) > 4}
    for candidate in (path, *path.parents):
        if str(candidate) in points:
            return None if candidate == Path("/") else candidate
    return None
