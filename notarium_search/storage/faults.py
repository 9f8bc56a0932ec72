"""What a failed read or write of the index's own files means.

Only content that was read and found invalid is damage: the index is then
rebuilt from the notes. An operating-system error — too many open files, no
memory, an I/O error, a full disk, a permission — says nothing about the
content: the pass that met it stops, changes nothing more, and is tried again
later. Treating EMFILE as damage emptied a manifest in memory and left notes
deleted meanwhile in the index for good (the attack review's "ghost notes").

Tantivy raises a plain ValueError for both kinds; the OS error is in its
message (`Os { code: 24, kind: TooManyOpenFiles, … }`), which is how they are
told apart here. Leaf module.
"""

from __future__ import annotations

import errno
import os
import re
import resource
from collections.abc import Callable
from pathlib import Path

# `Os { code: 24, …}` (Tantivy's Debug rendering of io::Error) or `(os error 24)` (its Display).
_OS_CODE = re.compile(r"\bOs \{ code: (\d+)|\(os error (\d+)\)")
_LOCK_BUSY = "LockBusy"


class StorageFault(RuntimeError):
    """The index's files could not be read or written for a reason that may
    pass (descriptors, memory, I/O, disk space, permissions): nothing is
    damaged and nothing was changed; the work is tried again later."""


class IndexLocked(RuntimeError):
    """Another process (a running service, or `notarium-search index`) holds the writer lock."""


class IndexFolderMissing(RuntimeError):
    """The space's index folder (or its lexical folder) was deleted under the
    running service: it is recreated and rebuilt from the notes."""


def os_error_code(exc: BaseException) -> int | None:
    """The OS error number behind `exc`: its errno, or the one Tantivy
    printed in its message; None when it is not an OS error."""
    if isinstance(exc, OSError):
        return exc.errno
    match = _OS_CODE.search(str(exc))
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


# OS errors that say what is on disk, not what the machine lacks: a file
# missing, or something else in its place (a folder, a loop of links). They do
# not pass by waiting: a segment named by meta.json that is gone is damage.
STRUCTURAL_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP})


# OS errors that say the machine is short of something (descriptors, memory),
# not that one note file or folder is bad: the pass that meets one stops and is
# retried, instead of skipping (or dropping) notes one by one.
SHORTAGE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})


def stop_if_short(exc: OSError, where: object) -> None:
    """Raise StorageFault when `exc` is a shortage of the machine."""
    if exc.errno in SHORTAGE_ERRNOS:
        raise StorageFault(f"cannot read {where}: {describe(exc)}; the pass is retried later") from exc


def fault_code(exc: BaseException) -> int | None:
    """The OS error number behind `exc` or the errors that caused it (a
    StorageFault names its OSError in words, and holds it as its cause)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        code = os_error_code(cause)
        if code is not None:
            return code
        cause = cause.__cause__ or cause.__context__
    return None


# How much a shortage must ease, from what was left when a pass failed, before
# its retry is brought forward. A pass takes 8-10 descriptors beyond those the
# service holds (sampled at 2,000 and 10,000 notes): 64 leave room for Tantivy's
# merges. Disk space: what a commit of a pass's notes may take, with room.
EASED_DESCRIPTORS = 64
EASED_BYTES = 64 * 2**20


def eased_check(exc: BaseException, directory: Path | None) -> Callable[[], bool] | None:
    """For the wait before retrying what `exc` failed: a cheap check (~50 µs)
    that says when the shortage behind it has eased since now — descriptors
    for EMFILE and ENFILE, free space in `directory` for ENOSPC — so that the
    retry need not wait out a backoff grown to minutes. None for other faults
    (nothing cheap tells when they pass) and where it cannot be measured.
    What was left now is the baseline: a retry that fails again makes a new
    one, so a shortage that does not ease never brings retries forward."""
    code = fault_code(exc)
    measure: Callable[[], int | None]
    if code == errno.EMFILE:
        measure, margin = descriptors_left, EASED_DESCRIPTORS
    elif code == errno.ENFILE:
        measure, margin = system_descriptors_left, EASED_DESCRIPTORS
    elif code == errno.ENOSPC and directory is not None:
        measure, margin = lambda: bytes_free(directory), EASED_BYTES
    else:
        return None
    baseline = measure()
    if baseline is None:
        return None

    def eased() -> bool:
        now = measure()
        return now is not None and now >= baseline + margin

    return eased


_FD_FOLDERS = (Path("/proc/self/fd"), Path("/dev/fd"))


def descriptors_left() -> int | None:
    """How many more descriptors this process may open (RLIMIT_NOFILE's soft
    limit less those open); 0 when none is left to count them; None where
    they cannot be counted."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    folder = next((f for f in _FD_FOLDERS if f.is_dir()), None)
    if soft == resource.RLIM_INFINITY or folder is None:
        return None
    try:
        return max(0, soft - len(os.listdir(folder)))
    except OSError as exc:
        return 0 if exc.errno in SHORTAGE_ERRNOS else None


def system_descriptors_left() -> int | None:
    """How many more files the whole system may open (Linux's file-nr)."""
    try:
        allocated, _, most = (int(n) for n in Path("/proc/sys/fs/file-nr").read_text().split())
    except OSError as exc:
        return 0 if exc.errno in SHORTAGE_ERRNOS else None
    except ValueError:
        return None
    return max(0, most - allocated)


def bytes_free(directory: Path) -> int | None:
    """The space left to this user on `directory`'s file system (or that of
    its nearest existing parent, the folder being made again)."""
    for folder in (directory, *directory.parents):
        try:
            stats = os.statvfs(folder)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return stats.f_bavail * stats.f_frsize
    return None


def is_passing(exc: BaseException) -> bool:
    """Whether `exc` is an OS error that is a condition of the machine (too
    many open files, no memory, I/O, permissions, disk space), not of what is
    on disk (STRUCTURAL_ERRNOS)."""
    code = os_error_code(exc)
    return code is not None and code not in STRUCTURAL_ERRNOS


def is_missing_file(exc: BaseException) -> bool:
    return os_error_code(exc) == errno.ENOENT


def is_lock_busy(exc: BaseException) -> bool:
    """Tantivy's writer lock is held (by another process, or another writer here)."""
    return _LOCK_BUSY in str(exc)


def describe(exc: BaseException, limit: int = 200) -> str:
    """One line for logs and status: the OS error's name when there is one."""
    code = os_error_code(exc)
    if code is not None and code in errno.errorcode:
        return f"{errno.errorcode[code]} ({os.strerror(code)})"
    return f"{type(exc).__name__}: {str(exc)[:limit]}"
