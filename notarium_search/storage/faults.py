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

# `Os { code: 24, …}` (Tantivy's Debug rendering of io::Error) or `(os error 24)` (its Display).
_OS_CODE = re.compile(r"\bOs \{ code: (\d+)|\(os error (\d+)\)")
_LOCK_BUSY = "LockBusy"


class StorageFault(RuntimeError):
    """The index's files could not be read or written for a reason that may
    pass (descriptors, memory, I/O, disk space, permissions): nothing is
    damaged and nothing was changed; the work is tried again later."""


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
