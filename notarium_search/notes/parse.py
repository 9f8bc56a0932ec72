"""Note bytes → `ParsedNote`. Pure: the caller reads the file.

Known traps handled here (each has a test): a UTF-8 BOM hides frontmatter
from python-frontmatter; YAML errors; impossible dates (PyYAML raises
ValueError on 2024-02-30, so timestamps are parsed by us, not by YAML); dates
as `date`, naive or aware `datetime`, `str` or `int`; `tags: a, b` is one
string; YAML 1.1 scalars (`no`, `on`, `0012`, `0x1F`: read as written, YAML
1.2 style); non-mapping frontmatter; binary and non-UTF-8 files; combining
marks by the thousand, which Unicode normalisation sorts in quadratic time
(`nfc`).
"""

from __future__ import annotations

import codecs
import math
import posixpath
import re
import unicodedata
from collections.abc import Iterable
from datetime import MAXYEAR, MINYEAR, UTC, date, datetime
from typing import Any

from notarium_search.notes import location, markdown
from notarium_search.types import ParsedNote

# The Markdown format's version: bump it when what parse_note (or markdown,
# location) makes of some file changes, and every space is rebuilt (its part
# of the index fingerprint, notes/formats.py). 11: numbered headings are sections.
# 12: where a note's dates come from (`created_from`, `updated_from`).
PARSER_VERSION = 12
BINARY_SNIFF_BYTES = 8192  # a NUL byte in the first 8 KiB means "not a text note"
MAX_ID_LENGTH = 512
_DATE_FORMATS = (
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
    "%d/%m/%Y",
    "%d/%m/%Y %H:%M",
)
_COMPACT_FORMATS = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
# The date-only shapes `to_datetime` reads (ISO, YAML's one-digit month or day,
# slashes either way, compact): eight digits are never epoch seconds (< 1e8).
MAX_TITLE_CHARS = 1000
MAX_INT_BITS = 256  # bigger frontmatter ints are noise (and str() refuses past ~4,300 digits)
MAX_EPOCH_MS = 1e13  # beyond year 2286 in milliseconds: not a timestamp
# Bounds of the frontmatter kept with a note (clean_frontmatter): values counted
# over the whole tree; beyond them frontmatter is data dumped in a note.
MAX_META_ITEMS = 500
MAX_META_DEPTH = 4
MAX_META_KEY_CHARS = 100
MAX_META_VALUE_CHARS = 500
_TAG_SPLIT_RE = re.compile(r"[,\s]+")
# Stream-Safe Text Format (Unicode UAX #15, section 13): at most 30 combining
# marks in a row, then U+034F COMBINING GRAPHEME JOINER, which no text needs
# more of. CPython's NFC sorts a run of marks by insertion: 50,000 marks out
# of order took 3.2 s (12,500: 0.19 s), and a million of them would take hours.
MAX_MARKS_IN_A_ROW = 30
_GRAPHEME_JOINER = "\u034f"
# Where such a run may be: every combining mark (ccc > 0, 912 in Unicode 14)
# is neither ASCII, nor a word character, nor a blank.
_MARKS_RUN_RE = re.compile(rf"[^\w\s\x00-\x7f]{{{MAX_MARKS_IN_A_ROW + 1},}}")
# Where a note's dates come from (ParsedNote.created_from, .updated_from).
FRONTMATTER, FILE = "frontmatter", "file"
_CREATED_KEYS = ("created", "date_created", "creation_date", "date")
_UPDATED_KEYS = ("updated", "modified", "last_modified", "date_modified", "date")


class NotANote(ValueError):
    """The file cannot be read as a text note; the message is the reason."""


class ReadLater(RuntimeError):
    """The file cannot be read now, through no fault of its own (a reader's
    process stopped from outside, a machine too busy): not skipped, tried
    again at the next pass; the message is why."""


def decode_note(raw: bytes, truncated: bool = False) -> str:
    """Bytes → text, or `NotANote` with the reason. A BOM is dropped."""
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        raise NotANote("binary file (NUL byte)")
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    body = memoryview(raw)[skip:]
    try:
        return str(body, "utf-8")
    except UnicodeDecodeError as exc:
        # A truncation may cut a multi-byte character in half: drop the tail.
        if truncated and exc.start >= len(body) - 3:
            return str(body[: exc.start], "utf-8")
        raise NotANote(f"not UTF-8 (invalid byte at offset {exc.start + skip})") from exc


def parse_note(text: str, rel_path: str, mtime: datetime) -> ParsedNote:
    """Parse a decoded note. Never raises on content: problems become warnings.

    The text is taken in NFC first: a note saved decomposed (NFD, as macOS
    tools and some sync tools write it) would otherwise be split by the
    tokenizer at each combining accent, and `é` typed in a query would not
    find it. The path is kept as given (it maps back to the file), so is an id
    derived from it; a title derived from it is shown to people, so NFC."""
    warnings: list[str] = []
    text = nfc(text)
    meta, body = _split_frontmatter(text, warnings)
    parts = markdown.analyse(body)
    start = len(text) - len(body) if text.endswith(body) else max(text.find(body), 0)
    lines = location.line_anchors(body, parts.plain_text, text.count("\n", 0, start) + 1)
    stem = file_stem(rel_path)
    title = _first_str(meta.get("title")) or parts.first_h1 or stem
    tags = _tag_list(meta.get("tags", meta.get("tag"))) + tuple(t.lower() for t in parts.tags)
    unreadable: set[str] = set()
    written_updated = _frontmatter_date(meta, _UPDATED_KEYS, unreadable)
    written_created = _frontmatter_date(meta, _CREATED_KEYS, unreadable)
    updated = written_updated or mtime
    created = written_created or updated  # the indexer may take the file's creation time instead
    warnings.extend(f"unreadable date in frontmatter field {k!r}: {_preview(meta[k])}" for k in sorted(unreadable))
    return ParsedNote(
        id=_note_id(meta.get("id"), rel_path),
        path=rel_path,
        title=title.strip()[:MAX_TITLE_CHARS],
        aliases=_string_list(meta.get("aliases", meta.get("alias"))),
        tags=tuple(dict.fromkeys(tags)),
        folder=posixpath.dirname(rel_path),
        created=created,
        updated=updated,
        created_from=FRONTMATTER if written_created or written_updated else FILE,
        updated_from=FRONTMATTER if written_updated else FILE,
        headings=parts.headings,
        links=parts.links,
        text=parts.plain_text,
        warnings=tuple(warnings),
        sections=parts.sections,
        code_blocks=parts.code_blocks,
        frontmatter=clean_frontmatter(meta),
        lines=lines,
    )


def file_stem(rel_path: str) -> str:
    """The file name without its suffix, in NFC: the title of a note that gives none."""
    return unicodedata.normalize("NFC", posixpath.splitext(posixpath.basename(rel_path))[0])


class MarkdownFormat:
    """The built-in note format (notes/formats.py's `NoteFormat`): UTF-8
    Markdown with YAML frontmatter, as Obsidian writes it."""

    name = "markdown"
    suffixes = (".md",)
    version = PARSER_VERSION
    max_bytes = None  # a note too big is cut at max_file_bytes (or skipped: `oversize`)

    def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool = False) -> ParsedNote:
        return parse_note(decode_note(raw, truncated=truncated), path, mtime)

    def shown(self, raw: bytes, path: str, *, truncated: bool = False) -> str:
        return decode_note(raw, truncated=truncated)

    def link_text(self, path: str, heading: str) -> str:
        return path.removesuffix(".md") + (f"#{heading}" if heading else "")


MARKDOWN = MarkdownFormat()


def body_of(text: str) -> str:
    """A note's Markdown without its frontmatter (as `parse_note` splits it)."""
    return _split_frontmatter(nfc(text), [])[1]


def nfc(text: str) -> str:
    """The text in NFC, in linear time: a run of more than MAX_MARKS_IN_A_ROW
    combining marks (a "Zalgo" text) first gets a grapheme joiner after every
    MAX_MARKS_IN_A_ROW marks, as the Stream-Safe Text Format has it, so that
    normalisation never sorts more than that many at once. Real text never
    holds such a run: for it this is `unicodedata.normalize("NFC", text)`."""
    return unicodedata.normalize("NFC", _MARKS_RUN_RE.sub(_joined_marks, text))


def _joined_marks(match: re.Match[str]) -> str:
    run = match.group()
    if not max(map(unicodedata.combining, run)):  # box drawing, emoji, CJK punctuation…
        return run
    out: list[str] = []
    marks = 0
    for char in run:
        if not unicodedata.combining(char):
            marks = 0
        elif marks == MAX_MARKS_IN_A_ROW:
            out.append(_GRAPHEME_JOINER)
            marks = 1
        else:
            marks += 1
        out.append(char)
    return "".join(out)


def clean_frontmatter(meta: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter as JSON-safe data (str, int, float, bool, None, lists,
    mappings with text keys), bounded, because it is user input stored with
    the note: structured queries and activations read it."""
    budget = [MAX_META_ITEMS]
    cleaned = _clean(meta, 0, budget)
    return cleaned if isinstance(cleaned, dict) else {}


def _clean(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_META_DEPTH:
        return None
    if isinstance(value, dict):
        return {
            nfc(str(k).strip().lower())[:MAX_META_KEY_CHARS]: _clean(v, depth + 1, budget)
            for k, v in list(value.items())[:MAX_META_ITEMS]
        }
    if isinstance(value, list | tuple | set):
        return [_clean(v, depth + 1, budget) for v in list(value)[:MAX_META_ITEMS]]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        return value if value.bit_length() <= MAX_INT_BITS // 4 else None
    text = _scalar_text(value)
    return text[:MAX_META_VALUE_CHARS] if text else None


def flatten_meta(frontmatter: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Cleaned frontmatter as (field, value) text pairs for structured queries:
    lists give one pair per item, nested mappings dotted fields (`source.url`),
    booleans "true"/"false", dates their text as written."""
    pairs: list[tuple[str, str]] = []
    _flatten_into(pairs, "", frontmatter)
    return tuple(dict.fromkeys(pairs))


def _flatten_into(pairs: list[tuple[str, str]], key: str, value: Any) -> None:
    if isinstance(value, dict):
        for sub, item in value.items():
            _flatten_into(pairs, f"{key}.{sub}" if key else sub, item)
    elif isinstance(value, list):
        for item in value:
            _flatten_into(pairs, key, item)
    elif key and value is not None:
        pairs.append((key, ("true" if value else "false") if isinstance(value, bool) else str(value)))


def _split_frontmatter(text: str, warnings: list[str]) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    # PyYAML (~20 ms to import): when a note is read, not when a search from the shell starts.
    from notarium_search.notes import yaml_frontmatter

    try:
        raw_meta, body = yaml_frontmatter.split(text)
    except ValueError:  # an opening --- and no closing one: a thematic break, not frontmatter
        return {}, text
    try:
        meta = yaml_frontmatter.load(raw_meta)
    except Exception as exc:  # noqa: BLE001 - any YAML failure keeps the note as body text
        warnings.append(f"malformed frontmatter ({type(exc).__name__}): indexed as body text")
        return {}, text
    if meta is None:
        return {}, body
    if not isinstance(meta, dict):
        warnings.append("frontmatter is not a mapping: indexed as body text")
        return {}, text
    return {str(k).lower(): v for k, v in meta.items()}, body


def _scalar_text(value: Any) -> str | None:
    """A frontmatter scalar as text; None for lists, mappings and absurd numbers
    (an int of thousands of digits cannot even be turned into a string)."""
    if value is None or isinstance(value, list | tuple | dict | set):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        return None
    text = str(value).strip()
    return text or None


def _note_id(value: Any, rel_path: str) -> str:
    if isinstance(value, str | int) and not isinstance(value, bool):
        text = _scalar_text(value)
        if text and len(text) <= MAX_ID_LENGTH and text.isprintable():
            return text
    return rel_path


def _first_str(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return _scalar_text(value)


def _string_list(value: Any) -> tuple[str, ...]:
    """Texts in NFC: a YAML escape (`"\\u0301"`) is decoded after the note was
    taken to NFC, and the graph normalises each alias again (links.normalise,
    NFKD: 3.1 s for an alias of 40,000 escaped marks, 0.2 s at 10,000)."""
    items: Iterable[Any] = value if isinstance(value, list | tuple) else (_scalar_text(value) or "").split(",")
    return tuple(dict.fromkeys(nfc(s) for s in (_scalar_text(v) for v in items) if s))


def _tag_list(value: Any) -> tuple[str, ...]:
    """Tags in every frontmatter shape: list, "a, b", "a b", "#a", single value."""
    raw: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    tags: list[str] = []
    for item in raw:
        for part in _TAG_SPLIT_RE.split(_scalar_text(item) or ""):
            tag = part.strip().lstrip("#").strip("/").lower()
            if tag:
                tags.append(tag)
    return tuple(tags)


def _frontmatter_date(meta: dict[str, Any], keys: tuple[str, ...], unreadable: set[str]) -> datetime | None:
    for key in keys:
        if key in meta and meta[key] not in (None, ""):
            parsed = to_datetime(meta[key])
            if parsed is None:
                unreadable.add(key)
                continue
            return parsed
    return None


def _preview(value: Any) -> str:
    text = _scalar_text(value) or type(value).__name__
    return repr(text[:80])


def to_datetime(value: Any) -> datetime | None:
    """Any YAML date shape → aware datetime (naive values are taken as UTC).
    Digit strings are compact dates first (20240105, 202401051030,
    20240105103000: Zettelkasten ids), epoch seconds or milliseconds second.
    The result can always be converted to UTC (see `_convertible`)."""
    if isinstance(value, datetime):
        return _convertible(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, float):
        return _from_epoch(value)
    text = _scalar_text(value) or ""
    if text.isascii() and text.isdigit():  # "¹" and "٣" are digits to isdigit(), not to int()
        return _from_compact(text) or _from_epoch(int(text))
    try:
        return to_datetime(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    timestamp = _from_yaml_timestamp(text)
    if timestamp is not None:
        return to_datetime(timestamp)
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _convertible(value: datetime) -> datetime:
    """The aware datetime itself, or datetime's first or last instant in UTC
    when its offset carries it past year 1 or 9999 in UTC: such a date is
    valid as written, but every caller converts to UTC, which would raise."""
    if MINYEAR < value.year < MAXYEAR:
        return value
    try:
        value.astimezone(UTC)
    except OverflowError:
        return (datetime.min if value.year == MINYEAR else datetime.max).replace(tzinfo=UTC)
    return value


def _from_yaml_timestamp(text: str) -> date | None:
    """YAML's own timestamp shapes that fromisoformat refuses: a space before
    the offset, a one-digit offset hour (`2001-12-14 21:59:43.10 -5`, the YAML
    spec's example), one-digit month or day. PyYAML's regexp and constructor,
    so that we read exactly what YAML calls a timestamp."""
    from notarium_search.notes import yaml_frontmatter  # PyYAML: as in _split_frontmatter

    return yaml_frontmatter.timestamp(text)


def _from_compact(digits: str) -> datetime | None:
    fmt = _COMPACT_FORMATS.get(len(digits))
    if fmt is None:
        return None
    try:
        return datetime.strptime(digits, fmt).replace(tzinfo=UTC)
    except ValueError:
        return None


def _from_epoch(value: float) -> datetime | None:
    if not math.isfinite(value) or not 0 < value < MAX_EPOCH_MS:
        return None
    if value > 1e11:  # milliseconds since the epoch
        value /= 1000
    if 1e8 < value < 1e10:  # plausibly seconds since the epoch (1973..2286)
        return datetime.fromtimestamp(value, tz=UTC)
    return None
