"""Reads of a space's lexical index, and what their failures mean: a passing
shortage of the machine is a 503 to retry; a failure that may be damage has
the index's files checked (lexical/integrity.py), and only a failed check
rebuilds the space; anything else is the client's (4xx) or ours (a logged
500). No query rebuilds an index by itself (`after:9999-12` did)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from notarium_search.errors import IndexRepairing, IndexUnavailable, NotariumError
from notarium_search.index.space import Space
from notarium_search.lexical.integrity import FILE_ERROR_PREFIXES, suspected_damage
from notarium_search.logsetup import Throttle, get_logger
from notarium_search.storage.faults import StorageFault, describe, is_passing

IO_ERROR = FILE_ERROR_PREFIXES[0]  # Tantivy's "An IO error occurred: ..."

log = get_logger(__name__)


@contextmanager
def reading(space: Space) -> Iterator[None]:
    """Reads of a space's lexical index. A passing shortage of the machine
    (too many open files) is a 503 to retry. A failure that may be damage
    (lexical/integrity.suspected_damage: Tantivy's file errors, a Rust panic)
    has the index's files checked: damaged, the space is rebuilt from the
    notes and the client told so (503); whole, the failure is the service's
    own (a logged 500) or a passing I/O error (503). Any other exception
    goes on as it is (our errors are 4xx, anything else a logged 500): no
    query ever rebuilds an index by itself."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, StorageFault) or (type(exc) is ValueError and is_passing(exc)):
            raise _unavailable(space, exc) from exc
        if not suspected_damage(exc):
            raise
        try:
            damage = space.integrity.damage()
        except StorageFault as fault:
            raise _unavailable(space, fault) from exc
        if damage is None:
            _log_read_failure(space.name, exc)
            if str(exc).startswith(IO_ERROR):  # the files are whole: the read met a passing I/O error
                raise _unavailable(space, exc) from exc
            raise NotariumError("internal error; see the server log") from exc
        space.request_repair(damage)
        raise IndexRepairing(
            f"the index of space {space.name} is damaged and being rebuilt from the notes; retry shortly"
            f" (GET /spaces/{space.name}/status follows the rebuild)"
        ) from exc


def _unavailable(space: Space, exc: BaseException) -> IndexUnavailable:
    _log_unavailable(space.name, exc)
    return IndexUnavailable(
        f"the index of space {space.name} cannot be read right now ({describe(exc)}); retry shortly"
    )


# A shortage (too many open files) fails every request while it lasts: one
# line per space and per minute says so, not one per request.
UNAVAILABLE_LOG_SECONDS = 60.0
_unavailable_logs = Throttle(UNAVAILABLE_LOG_SECONDS)


_read_failure_logs = Throttle(UNAVAILABLE_LOG_SECONDS)


def _log_unavailable(space_name: str, exc: BaseException) -> None:
    held_back = _unavailable_logs.admit(space_name)
    if held_back is not None:
        log.error("index_unavailable", space=space_name, error=describe(exc), not_logged_since_last=held_back)


def _log_read_failure(space_name: str, exc: BaseException) -> None:
    """A read failed on an index whose files are whole: a fault of ours (or
    of Tantivy), with its traceback, once a minute per space."""
    held_back = _read_failure_logs.admit(space_name)
    if held_back is not None:
        log.error("index_read_failed", space=space_name, not_logged_since_last=held_back, exc_info=exc)
