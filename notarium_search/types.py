"""Types passed between pipeline stages.

Leaf module: imports nothing from the package. Every stage (scan, parse,
index, search, API) exchanges these frozen records, so a change of shape
is visible in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import msgspec

# What /status says while any channel of a space builds.
BUILDING_MESSAGE = "Building search index…"


class SourceFile(msgspec.Struct, frozen=True):
    """A candidate note found by the scanner (no content read yet)."""

    path: str  # POSIX, relative to the space root (a note's `path`)
    abs_path: str
    size: int
    mtime_ns: int
    # When the file was created, where the platform's os.stat says (macOS and
    # the BSDs: st_birthtime); None elsewhere (Linux with Python 3.11: no statx).
    birth_ns: int | None = None


class WikiLink(msgspec.Struct, frozen=True):
    """An outgoing `[[target#heading|alias]]` link as written in the note."""

    target: str
    heading: str | None = None
    alias: str | None = None


class NoteSummary(msgspec.Struct, frozen=True):
    """A note as returned to clients (stored fields, no body). The fields every
    note-shaped type shares are declared here once: `ParsedNote` adds what is
    read from the body, `bodies.NoteOut` is their JSON shape."""

    id: str
    path: str
    title: str
    tags: tuple[str, ...]
    folder: str
    created: datetime
    updated: datetime
    aliases: tuple[str, ...] = ()
    # Where `created` and `updated` come from: "frontmatter" (a date written
    # in the note) or "file" (the file's own times, which a git clone or a
    # sync sets to the day it ran): clients say which date they show.
    created_from: str = "file"
    updated_from: str = "file"


class ParsedNote(NoteSummary, frozen=True, kw_only=True):
    """Everything the indexes need from one note; produced by `parse`. Its
    `path` is POSIX and relative to the space root; its dates are always
    timezone-aware, and `folder` is "" for the space root."""

    headings: tuple[str, ...]
    links: tuple[WikiLink, ...]
    text: str  # body reduced to plain text
    warnings: tuple[str, ...] = ()
    sections: tuple[tuple[int, int, str], ...] = ()  # (offset in text, level, heading), in order
    code_blocks: tuple[tuple[int, int], ...] = ()  # [start, end) of fenced code blocks in text
    frontmatter: Mapping[str, Any] = msgspec.field(default_factory=dict)  # JSON-safe, bounded (parse.clean_frontmatter)
    collections: tuple[str, ...] = ()  # set by the indexer from the space's collections
    chunking: str = "paragraph"  # fragment mode of the note's collection (chunking.CHUNKING_MODES)
    lines: tuple[tuple[int, int, int], ...] = ()  # (offset in text, file line, column) per line: notes/location.py


class TextRange(msgspec.Struct, frozen=True):
    """A highlighted range, in Python string (code point) offsets."""

    start: int
    end: int


class Snippet(msgspec.Struct, frozen=True):
    text: str
    highlights: tuple[TextRange, ...]
    html: str
    at: int = -1  # offset in the note's plain text of its first highlight (else its start); -1: not in the body
    heading: tuple[str, ...] = ()  # the headings it sits under, outermost first
    line: int | None = None  # 1-based line in the file (frontmatter included) of `at`
    column: int | None = None  # 1-based column there (markup removed before it on that line may shift it)


class KnownName(msgspec.Struct, frozen=True):
    """The query names the note: it is one of the note's names (or, while the
    last word is typed, the start of one) once case, accents, punctuation and
    a ".md" suffix are folded away. Such notes come before every other hit,
    ordered by `order` (lexical/known.py)."""

    # Which name: "path", "file_name", "title", "alias" or "id"; "…_prefix" while
    # typing; "file_name_words", "title_words", "alias_words": its words start the name's.
    name: str
    order: tuple[int | str, ...]  # best first: exact before prefix, then as wiki-links resolve


@dataclass(frozen=True, slots=True)
class ChannelHit:
    """One note found by one channel, with what that channel knows about it."""

    note: NoteSummary | None  # None: the channel knows the note by id only (fetched if fusion keeps it)
    score: float
    snippets: tuple[Snippet, ...]
    exact: bool = False  # lexical: the title or text holds the whole query
    reason: str | None = None  # graph: why the note was brought in ("linked from: …")
    note_id: str = ""  # the note's id (set from `note` when given)
    # False: the hit alone does not justify listing the note (a fragment below
    # the model's similarity floor); it may only add to a note another channel found.
    confident: bool = True
    # What the channel needs to cut this hit's snippets later, if fusion keeps
    # it (`Channel.snippets`): only the channel that made it reads it.
    evidence: Any = field(default=None, compare=False, repr=False)
    known: KnownName | None = None  # lexical: the query names this note (fusion puts it first)
    language: str | None = None  # lexical, in a space of several languages: the note's, its words matched in

    def __post_init__(self) -> None:
        if self.note is not None and not self.note_id:
            object.__setattr__(self, "note_id", self.note.id)
        if not self.note_id:
            raise ValueError("a channel hit needs its note or its note id")


class ChannelResult(msgspec.Struct, frozen=True):
    """A channel's ranked answer (rank 1 first) plus its diagnostics."""

    channel: str
    hits: tuple[ChannelHit, ...]
    unmatched_terms: tuple[str, ...] = ()
    floor: float | None = None  # the score a hit needed to count on its own for this query (semantic)
    weight: float = 1.0  # how much fusion trusts this answer (times the configured weight): less when weak
    unrelated: float | None = None  # semantic: what unrelated text scores against this query
    unanswered: str | None = None  # why the channel could not answer this query (graph: its writer did not)


class ChannelQuery(msgspec.Struct, frozen=True):
    """What every channel is asked: the same shape for each, so that the
    service drives them alike. A channel reads the fields it has a use for."""

    text: str
    filters: FeedFilter
    depth: int  # how many notes to rank
    snippet_depth: int  # how many of the first get snippets now; the others by `Channel.snippets`, if kept
    phrase_depth: int = 0  # how many of the first are tested for the exact phrase (fused answers: fusion.py)
    vector: Any = None  # the query's embedding (a numpy vector), for a channel that needs "vector"
    seeds: tuple[NoteSummary, ...] = ()  # for a channel that needs "seeds": the others' best notes, fused


class ChannelTrace(msgspec.Struct, frozen=True):
    """One channel's part in a fused score."""

    rank: int  # 1-based rank of the note in the channel
    score: float  # the channel's own score (BM25, cosine similarity, graph weight)
    contribution: float  # what it adds to the fused score: weight / (k + rank)
    confident: bool = True  # False: below the channel's floor, it only adds to a note another channel found
    language: str | None = None  # lexical, in a space of several languages: the one the note matched in


class SearchHit(msgspec.Struct, frozen=True):
    note: NoteSummary
    score: float
    snippets: tuple[Snippet, ...]
    channels: dict[str, int]  # channel name -> 1-based rank in that channel
    trace: dict[str, ChannelTrace] = msgspec.field(default_factory=dict)  # contributions sum to score
    reason: str | None = None  # graph channel: "linked from: …"
    open_url: str | None = None  # opens the note in its editor (the space's open_url template)
    known: str | None = None  # the note's name the query is (KnownName.name), if any

    def placed(self) -> Snippet | None:
        """Where the best match is: the first snippet placed in the note's body (None: title only, no body)."""
        return next((s for s in self.snippets if s.at >= 0), None)


class TypedFilter(msgspec.Struct, frozen=True):
    """A filter typed in the query (`tag:x`, `-tag:x`, `folder:x`, `path:x`,
    `file:x`, `section:x`, `after:…`, `before:…`, `created-after:…`,
    `created-before:…`; typed_filters.py): its name and value, for clients to show."""

    name: str
    value: str


class SearchResponse(msgspec.Struct, frozen=True):
    query: str
    results: tuple[SearchHit, ...]
    channels_used: tuple[str, ...]
    degraded: dict[str, str]  # channel -> why it did not answer
    unmatched_terms: tuple[str, ...]
    partial: bool  # the space was still indexing: answered from what is committed
    took_ms: float
    # channel -> why its answer counts less for this query
    caveats: dict[str, str] = msgspec.field(default_factory=dict)
    filters: tuple[TypedFilter, ...] = ()  # typed in the query, in order


class FeedFilter(msgspec.Struct, frozen=True):
    """Filters shared by search, feed, related and metadata queries; all optional."""

    folder: str | None = None
    tags: tuple[str, ...] = ()
    since: datetime | None = None  # updated at or after
    until: datetime | None = None  # updated at or before
    tags_any: bool = False  # any of `tags` (default: all of them)
    created_since: datetime | None = None
    fields: tuple[tuple[str, str | None], ...] = ()  # frontmatter (field, value); None: has the field
    activated: bool | None = None  # has (True) / lacks (False) one of `activation_fields`
    activation_fields: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()  # in any of these collections
    exclude_tags: tuple[str, ...] = ()  # none of these tags (nested: `-tag:projet` also leaves out projet/x)
    created_until: datetime | None = None  # created at or before
    # Each must be found, ignoring case, in the note's path / file name / one of its headings.
    paths: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            (self.folder or "").strip("/")
            or self.tags
            or self.since
            or self.until
            or self.created_since
            or self.fields
            or self.activated is not None
            or self.collections
            or self.exclude_tags
            or self.created_until
            or self.paths
            or self.files
            or self.sections
        )


class Activation(msgspec.Struct, frozen=True):
    """One recorded use of a note (notes/activation.py)."""

    where: str
    date: datetime  # the entry's date, else the note's last update
    dated: bool  # whether the date was written in the entry


class NoteRecord(msgspec.Struct, frozen=True):
    """A note's metadata as structured queries return it."""

    note: NoteSummary
    frontmatter: Mapping[str, Any]
    collections: tuple[str, ...]
    activations: tuple[Activation, ...]  # newest first


class NotesPage(msgspec.Struct, frozen=True):
    items: tuple[NoteRecord, ...]
    next_cursor: str | None
    partial: bool


class NoteLink(msgspec.Struct, frozen=True):
    """An outgoing wiki-link as written, and the note it resolves to."""

    target: str
    heading: str | None
    alias: str | None
    note: NoteSummary | None  # None: dangling (no note of that name)


class NoteDetail(msgspec.Struct, frozen=True):
    record: NoteRecord
    links: tuple[NoteLink, ...]  # resolved outgoing links, in order
    dangling: tuple[NoteLink, ...]  # outgoing links to no note
    backlinks: tuple[NoteSummary, ...]  # notes linking here
    content: str | None  # the note's Markdown, when asked for
    body: str | None = None  # the same without its frontmatter (what a preview renders), when asked for
    open_url: str | None = None  # opens the note in its editor (the space's open_url template)


class FeedPage(msgspec.Struct, frozen=True):
    items: tuple[NoteSummary, ...]
    next_cursor: str | None
    partial: bool
    filters: tuple[TypedFilter, ...] = ()  # typed in the query, in order
    # Per note id: where the words occur, or the note's opening lines.
    excerpts: Mapping[str, Snippet] = msgspec.field(default_factory=dict)
    # Per note id: the link that opens it in its editor, when the space has an open_url.
    open_urls: Mapping[str, str] = msgspec.field(default_factory=dict)


class IndexState(StrEnum):
    BUILDING = "building"
    READY = "ready"
    FAILED = "failed"


class ChannelState(StrEnum):
    DISABLED = "disabled"
    UNAVAILABLE = "unavailable"
    BUILDING = "building"
    READY = "ready"


class BuildStep(msgspec.Struct, frozen=True):
    """How far `Space.build` has come in one of its stages: "notes" (the
    lexical pass) or "fragments" (embedding). `total` is None until known."""

    stage: str
    done: int
    total: int | None


class IndexProgress(msgspec.Struct):
    """Mutable progress counters of one indexing run (owned by the writer)."""

    state: IndexState = IndexState.BUILDING
    total: int = 0
    done: int = 0
    indexed: int = 0  # notes actually (re)written this run
    skipped: int = 0
    deleted: int = 0
    started_at: float = 0.0  # time.monotonic()
    finished_at: float | None = None
    last_indexed: datetime | None = None
    error: str | None = None
    changed_ids: set[str] = msgspec.field(default_factory=set)  # notes (re)indexed this run, for later stages
    deleted_ids: set[str] = msgspec.field(default_factory=set)


class ChannelStatus(msgspec.Struct, frozen=True):
    state: ChannelState
    reason: str | None = None  # why unavailable, or what was repaired
    embedded: int | None = None  # semantic: fragments embedded / total of the current build
    total: int | None = None
    per_second: float | None = None
    eta_seconds: float | None = None
    relevance_margin: float | None = None  # semantic: the model's margin over unrelated text; None: no floor
    links: int | None = None  # graph: wiki-links written in the space
    dangling: int | None = None  # graph: links whose target is no note


class LexicalStatus(msgspec.Struct, frozen=True):
    state: IndexState
    indexed: int  # changed notes processed in the current (or last) run
    total: int  # changed notes to process in that run
    notes_per_second: float | None
    eta_seconds: float | None
    last_indexed: datetime | None
    error: str | None
    repaired: str | None = None  # the index was found damaged and rebuilt from the notes: why


class SkippedNote(msgspec.Struct, frozen=True):
    """A file of the space that is not in the index, and why (binary, too
    large, set aside after it stopped the indexer…)."""

    path: str
    reason: str


class SpaceStatus(msgspec.Struct, frozen=True):
    space: str
    path: str
    language: str
    notes: int
    skipped: int
    lexical: LexicalStatus
    semantic: ChannelStatus
    graph: ChannelStatus
    message: str | None
    collections: dict[str, int] = msgspec.field(default_factory=dict)  # notes per collection
    languages: dict[str, int] = msgspec.field(default_factory=dict)  # notes per analyzer language (notes/language.py)
    watch: str | None = None  # "watching", "polling every N s (why)" or "off (why)"
    skipped_notes: tuple[SkippedNote, ...] = ()  # the first SKIPPED_SHOWN of `skipped`, by path
    # Every registered channel's status by name, in the space's order (lexical
    # first): `semantic` and `graph` above are two of them, kept for the
    # documented body; a plug-in channel appears here only.
    channels: dict[str, ChannelStatus] = msgspec.field(default_factory=dict)


class Fragment(msgspec.Struct, frozen=True):
    """A piece of a note embedded as one vector (produced by `chunking`)."""

    id: str  # hex digest of the note id and the embedded text: same text, same id
    key: int  # uint64 key of the vector in the space's vector index
    note_id: str
    start: int  # [start, end) in the note's plain text
    end: int
    text: str  # the note's own words (what snippets show)
    embed_text: str  # title and heading path, then the text (what the model sees)


class Echo(msgspec.Struct, frozen=True):
    """A note related to another, with the pair of fragments that resonated."""

    note: NoteSummary
    similarity: float
    fragment: Snippet  # of the related note
    source: Snippet  # of the note asked about
