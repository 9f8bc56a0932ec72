"""`notarium-search search` without a running service: the space opened
read-only as its writer (a service, `notarium-search index`) left it, and
the query answered as the service answers it (`answer.search`), with no
model (keywords and links).

Apart from offline.py (index, status), whose indexer, scanner and locks a
search does not need, and from the service, whose model, workers and HTTP
needs it has none of: a search from the shell imports what it reads (issue
34; docs/benchmarks.md, CLI start-up).
"""

from __future__ import annotations

from notarium_search import answer
from notarium_search.errors import UnknownSpace
from notarium_search.index.opening import NotIndexed, Role, open_space
from notarium_search.lexical.store import IndexUnreadable
from notarium_search.reading import reading
from notarium_search.settings import Settings
from notarium_search.storage.faults import StorageFault
from notarium_search.types import FeedFilter, SearchResponse

# What a read-only open of an index can meet: said in one line.
OPEN_FAILURES: tuple[type[Exception], ...] = (NotIndexed, IndexUnreadable, StorageFault)


def search(
    settings: Settings, name: str, text: str, filters: FeedFilter, limit: int, sort: str
) -> tuple[SearchResponse, list[str]]:
    """The answer, and when it is partial, what the index lacks by its
    writer's records. Raises one of OPEN_FAILURES when the space cannot be
    opened, a NotariumError when the query cannot be answered."""
    config = settings.space_config(name)
    if config is None:
        raise UnknownSpace(f"no space named {name}")
    space = open_space(config, settings, Role.READER, records=False)  # counted, not decoded
    with reading(space):
        response = answer.search(space, text, filters, limit, sort)
    return response, space.behind if response.partial else []
