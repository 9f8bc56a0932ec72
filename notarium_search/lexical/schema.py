"""The Tantivy schema of a space and the mapping from `ParsedNote` to a document.

Bump `SCHEMA_VERSION` whenever fields, analyzers or what goes into them
change: the version is part of the index fingerprint, and a mismatch forces a
rebuild from the files.
"""

from __future__ import annotations

import unicodedata
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import msgspec
import tantivy

from notarium_search.lexical import known
from notarium_search.lexical.analysis import LANGUAGE_FIELD, MAX_TOKEN_CHARS, STEMS_TOKENIZER, analyzers
from notarium_search.notes import location
from notarium_search.notes.language import DETECTOR, note_language
from notarium_search.notes.parse import flatten_meta
from notarium_search.types import NoteSummary, ParsedNote, WikiLink

SCHEMA_VERSION = 11  # 8: the names and headings of a note as whole terms (lexical/known.py), its file name searched
# 9: folders matched ignoring case, path and file name kept folded (path:, file:), tags, folders and file names
# counted (lexical/values.py), where the dates come from (PayloadHead.created_from)
# 10: a note's names from each of their later words on (lexical/known.py: word starts)
# 11: each note's language (`lang`, Payload.language); with several, its stems made by its own (notes/language.py)

# Tantivy stores a date as i64 nanoseconds since the epoch and refuses any
# other (a document, or a range query bound): a note dated 1515 is indexed as
# the earliest date it can hold. Its payload keeps the real date.
INDEX_DATE_MIN = datetime(1677, 9, 22, tzinfo=UTC)
INDEX_DATE_MAX = datetime(2262, 4, 11, tzinfo=UTC)
# The feed orders on one i64 fast field: the update time in milliseconds (44
# bits with the sign, over Tantivy's date range), then 19 bits of a hash of the
# note's id, so that notes saved in the same millisecond (a git clone, a sync,
# a frontmatter date shared by a whole import) rarely tie and a page never has
# to read a whole group of them.
FEED_TIE_BITS = 19
STEMMED_FIELDS = ("title", "aliases", "headings", "file_name", "text")
# The folded forms of a note's folders (each ancestor), of its path and of its file name.
FOLDER_KEY = "folder_key"
PATH_KEY = "path_key"
FILE_KEY = "file_key"


def fingerprint(languages: tuple[str, ...]) -> str:
    """Part of the index fingerprint: what decides which terms are indexed
    (the languages, and with several of them the detector choosing among them)."""
    detector = f"-{DETECTOR}" if len(languages) > 1 else ""
    return f"lexical-v{SCHEMA_VERSION}-{'+'.join(languages)}{detector}-max{MAX_TOKEN_CHARS}"


def build_schema(languages: tuple[str, ...]) -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("path", tokenizer_name="raw", index_option="basic")
    sb.add_text_field(LANGUAGE_FIELD, tokenizer_name="raw", index_option="basic")
    # The title, aliases, headings, the file name's words (when they are not
    # the title's: `Accueil.md` titled "Aide Obsidian" is found by "accueil",
    # ranking.file_name_boost) and everything a reader would search, stemmed:
    # by the space's language, or with several, each note's stems made by its
    # own (`_stems`). One combined `text` field beat separate title/body
    # fields on piaf-fr (docs/ranking.md).
    stemmed = analyzers(languages[0]).stemmed_name if len(languages) == 1 else STEMS_TOKENIZER
    for name in STEMMED_FIELDS:
        sb.add_text_field(name, tokenizer_name=stemmed)
    # Every name of the note, folded, each one whole term: known items.
    sb.add_text_field(known.FIELD, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(known.HEADINGS_FIELD, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(known.WORD_STARTS_FIELD, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("plain", tokenizer_name=analyzers(languages[0]).plain_name)
    sb.add_text_field("tags", tokenizer_name="raw", index_option="basic")
    # Fast (a column of term ids): value completion counts notes per tag,
    # folder and file name in one pass (lexical/values.py). Folders and file
    # names as written, for completion to show; their folded forms filter.
    sb.add_text_field("tag_path", tokenizer_name="raw", index_option="basic", fast=True)
    sb.add_text_field("folder_path", tokenizer_name="raw", index_option="basic", fast=True)
    sb.add_text_field("file", tokenizer_name="raw", index_option="basic", fast=True)
    sb.add_text_field(FOLDER_KEY, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(PATH_KEY, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(FILE_KEY, tokenizer_name="raw", index_option="basic")
    # Frontmatter for structured queries: "field=value" terms (value casefolded)
    # and the names of the fields a note has (see meta_term).
    sb.add_text_field("meta", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("collections", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("meta_keys", tokenizer_name="raw", index_option="basic")
    sb.add_date_field("created", indexed=True, fast=True)
    sb.add_date_field("updated", indexed=True, fast=True)
    sb.add_integer_field("feed_key", indexed=True, fast=True)
    sb.add_bytes_field("payload", stored=True)
    return sb.build()


class PayloadHead(msgspec.Struct, frozen=True, array_like=True):
    """The leading fields of a `Payload`: what a listed note needs. Decoding
    a stored payload as a head skips the text, links and frontmatter (3x faster)."""

    id: str
    path: str
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    folder: str
    created: float  # epoch seconds
    updated: float
    created_from: str  # "frontmatter" or "file": NoteSummary.created_from
    updated_from: str
    language: str  # the language its words were analysed in (notes/language.py)

    def summary(self) -> NoteSummary:
        return NoteSummary(
            id=self.id,
            path=self.path,
            title=self.title,
            tags=self.tags,
            folder=self.folder,
            created=datetime.fromtimestamp(self.created, tz=UTC),
            updated=datetime.fromtimestamp(self.updated, tz=UTC),
            aliases=self.aliases,
            created_from=self.created_from,
            updated_from=self.updated_from,
        )


class PayloadLinks(PayloadHead, frozen=True, array_like=True):
    """A head and the note's links as written: what the link graph reads.
    Decoded so, a stored payload's text, sections and frontmatter are skipped:
    the writer's graph of 50,000 notes was built from whole payloads, whose
    texts, decoded and dropped, fragmented the heap around the graph's entries."""

    links: tuple[tuple[str, str | None, str | None], ...]

    def wikilinks(self) -> tuple[WikiLink, ...]:
        return tuple(WikiLink(t, h, a) for t, h, a in self.links)


class Payload(PayloadLinks, frozen=True, array_like=True):
    """What a hit needs back from the store, in one stored field (one decode).
    Its fields come after the head's and the links', in the same array."""

    text: str
    sections: tuple[tuple[int, int, str], ...] = ()
    code_blocks: tuple[tuple[int, int], ...] = ()
    frontmatter: dict[str, Any] = {}
    collections: tuple[str, ...] = ()
    chunking: str = "paragraph"
    lines: bytes = b""  # line anchors, packed (notes/location.pack): decoded only for the hits that are shown

    def to_note(self) -> ParsedNote:
        """The parsed note back (headings aside), for stages that work from the
        committed lexical state, such as chunking for the semantic channel."""
        summary = self.summary()
        return ParsedNote(
            id=self.id,
            path=self.path,
            title=self.title,
            aliases=self.aliases,
            tags=self.tags,
            folder=self.folder,
            created=summary.created,
            updated=summary.updated,
            created_from=self.created_from,
            updated_from=self.updated_from,
            headings=tuple(h for _, _, h in self.sections),
            links=self.wikilinks(),
            text=self.text,
            sections=self.sections,
            code_blocks=self.code_blocks,
            frontmatter=self.frontmatter,
            collections=self.collections,
            chunking=self.chunking,
        )


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Payload)
_HEAD_DECODER = msgspec.json.Decoder(PayloadHead)
_LINKS_DECODER = msgspec.json.Decoder(PayloadLinks)


def decode_payload(raw: bytes) -> Payload:
    return _DECODER.decode(raw)


def decode_head(raw: bytes) -> PayloadHead:
    return _HEAD_DECODER.decode(raw)


def decode_links(raw: bytes) -> PayloadLinks:
    return _LINKS_DECODER.decode(raw)


def index_date(moment: datetime) -> datetime:
    """`moment` (aware: every date comes from `parse.to_datetime`, which keeps
    it convertible to UTC, or from a file's mtime) in UTC, within the dates
    Tantivy can index."""
    return min(max(moment.astimezone(UTC), INDEX_DATE_MIN), INDEX_DATE_MAX)


def feed_key(updated: datetime, note_id: str) -> int:
    """The feed's sort key: newest first, then a fixed order among notes of the same millisecond."""
    millis = int(index_date(updated).timestamp() * 1000)
    return (millis << FEED_TIE_BITS) | (zlib.crc32(note_id.encode()) & ((1 << FEED_TIE_BITS) - 1))


def _epoch(moment: datetime) -> float:
    """Epoch seconds that decode back to a datetime: a day inside year 1 and year 9999."""
    return min(max(moment.timestamp(), _EPOCH_MIN), _EPOCH_MAX)


_EPOCH_MIN = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_EPOCH_MAX = datetime(9999, 12, 30, tzinfo=UTC).timestamp()
FEED_KEY_MIN = feed_key(INDEX_DATE_MIN, "") & ~((1 << FEED_TIE_BITS) - 1)
FEED_KEY_MAX = feed_key(INDEX_DATE_MAX, "") | ((1 << FEED_TIE_BITS) - 1)


def folded(name: str) -> str:
    """A folder or a path as the `folder:`, `path:` and `file:` filters
    compare it: NFC (a path is kept as the file system gives it, NFD from
    some macOS tools, and a query is typed NFC), then case folded."""
    return unicodedata.normalize("NFC", name).casefold()


def meta_term(field: str, value: str) -> str:
    """The indexed form of one frontmatter pair: queries match it exactly,
    without regard to case."""
    return f"{field.strip().casefold()}={value.strip().casefold()}"


def ancestors(path: str) -> list[str]:
    """ "a/b/c" → ["a", "a/b", "a/b/c"]: lets a term query match sub-folders and nested tags."""
    parts = [p for p in path.split("/") if p]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _stems(language: str, several: bool) -> Callable[[str], str]:
    """What goes into a stemmed field: the text itself in a space of one
    language (its field's analyzer stems it), else the stems of the note's
    language, made here (analysis.STEMS_TOKENIZER)."""
    if not several:
        return lambda text: text
    analyze = analyzers(language).stemmed.analyze
    return lambda text: " ".join(analyze(text))


class DocumentParts(NamedTuple):
    """A note's document as plain values: what a process parsing ahead sends
    (index/parse_ahead.py). A tantivy.Document pickles through its own
    serialisation, 85 µs to make and 107 µs to read back for a 1.6 kB note;
    these, ~20 µs in all, and `document` builds it in ~30 µs."""

    texts: list[tuple[str, str]]  # (field, value), in the order the values are added
    created: datetime
    updated: datetime
    feed_key: int
    payload: bytes


def to_document(note: ParsedNote, languages: tuple[str, ...]) -> tantivy.Document:
    """The note's document, its words stemmed in its language among `languages` (the first: the fallback)."""
    return document(document_parts(note, languages))


def document(parts: DocumentParts) -> tantivy.Document:
    doc = tantivy.Document()
    for field, value in parts.texts:
        doc.add_text(field, value)
    doc.add_date("created", parts.created)
    doc.add_date("updated", parts.updated)
    doc.add_integer("feed_key", parts.feed_key)
    doc.add_bytes("payload", parts.payload)
    return doc


def document_parts(note: ParsedNote, languages: tuple[str, ...]) -> DocumentParts:
    """What `to_document` puts in the note's document."""
    language = note_language(note.frontmatter, note.text, note.code_blocks, languages)
    stems = _stems(language, len(languages) > 1)
    texts: list[tuple[str, str]] = []
    add = texts.append
    add(("id", note.id))
    add(("path", note.path))
    add((LANGUAGE_FIELD, language))
    add(("title", stems(note.title)))
    for alias in note.aliases:
        add(("aliases", stems(alias)))
    for heading in note.headings:
        add(("headings", stems(heading)))
    names = known.note_names(note.id, note.path, note.title, note.aliases)
    stem = note.path.rsplit("/", 1)[-1].removesuffix(".md")
    if known.name_key(stem) != known.name_key(note.title):
        add(("file_name", stems(stem)))
    for name in names:
        add((known.FIELD, name))
    for rest in known.word_starts(note.path, note.title, note.aliases):
        add((known.WORD_STARTS_FIELD, rest))
    for heading in dict.fromkeys(known.name_key(h) for h in note.headings[: known.HEADINGS_PER_NOTE]):
        if heading:
            add((known.HEADINGS_FIELD, heading))
    # Headings are already part of the body text; tags become words too.
    searchable = "\n".join((note.title, *note.aliases, " ".join(note.tags), note.text))
    add(("text", stems(searchable)))
    add(("plain", "\n".join((note.title, *note.aliases, note.text))))
    for tag in note.tags:
        add(("tags", tag))
    for tag in {p for t in note.tags for p in ancestors(t)}:
        add(("tag_path", tag))
    for folder in ancestors(note.folder):
        add(("folder_path", folder))
        add((FOLDER_KEY, folded(folder)))
    add(("file", unicodedata.normalize("NFC", note.path.rsplit("/", 1)[-1])))
    add((PATH_KEY, folded(note.path)))
    add((FILE_KEY, folded(note.path.rsplit("/", 1)[-1])))
    pairs = flatten_meta(dict(note.frontmatter))
    for field, value in pairs:
        add(("meta", meta_term(field, value)))
    for field in {f.casefold() for f, _ in pairs}:
        add(("meta_keys", field))
    payload = Payload(
        id=note.id,
        path=note.path,
        title=note.title,
        aliases=note.aliases,
        tags=note.tags,
        folder=note.folder,
        created=_epoch(note.created),
        updated=_epoch(note.updated),
        created_from=note.created_from,
        updated_from=note.updated_from,
        links=tuple((link.target, link.heading, link.alias) for link in note.links),
        text=note.text,
        sections=note.sections,
        code_blocks=note.code_blocks,
        frontmatter=dict(note.frontmatter),
        collections=note.collections,
        chunking=note.chunking,
        lines=location.pack(note.lines),
        language=language,
    )
    for collection in note.collections:
        add(("collections", collection))
    return DocumentParts(
        texts,
        index_date(note.created),
        index_date(note.updated),
        feed_key(note.updated, note.id),
        _ENCODER.encode(payload),
    )
