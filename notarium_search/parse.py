"""Note bytes → `ParsedNote`. Pure: the caller reads the file.

Known traps handled here (each has a test): a UTF-8 BOM hides frontmatter
from python-frontmatter; YAML errors; impossible dates (PyYAML raises
ValueError on 2024-02-30, so timestamps are parsed by us, not by YAML); dates
as `date`, naive or aware `datetime`, `str` or `int`; `tags: a, b` is one
string; non-mapping frontmatter; binary and non-UTF-8 files.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from notarium_search import markdown
from notarium_search.models import ParsedNote

BINARY_SNIFF_BYTES = 8192  # a NUL byte in the first 8 KiB means "not a text note"
MAX_ID_LENGTH = 512
_DATE_FORMATS = (
    "%Y-%m-%d %H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
    "%d/%m/%Y",
    "%d/%m/%Y %H:%M",
    "%Y%m%d%H%M%S",
    "%Y%m%d%H%M",
)
_TAG_SPLIT_RE = re.compile(r"[,\s]+")
_CREATED_KEYS = ("created", "date_created", "creation_date", "date")
_UPDATED_KEYS = ("updated", "modified", "last_modified", "date_modified", "date")


class NotANote(ValueError):
    """The file cannot be read as a text note; the message is the reason."""


class _NoTimestampLoader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as strings: PyYAML raises on impossible
    dates and returns naive datetimes; both are handled in `to_datetime`."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _Handler(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        return yaml.load(fm, Loader=_NoTimestampLoader)  # noqa: S506 - a SafeLoader subclass


_HANDLER = _Handler()


def decode_note(raw: bytes, truncated: bool = False) -> str:
    """Bytes → text, or `NotANote` with the reason. A BOM is dropped."""
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        raise NotANote("binary file (NUL byte)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # A truncation may cut a multi-byte character in half: drop the tail.
        if truncated and exc.start >= len(raw) - 3:
            return raw[: exc.start].decode("utf-8-sig")
        raise NotANote(f"not UTF-8 (invalid byte at offset {exc.start})") from exc


def parse_note(text: str, rel_path: str, mtime: datetime) -> ParsedNote:
    """Parse a decoded note. Never raises on content: problems become warnings."""
    warnings: list[str] = []
    meta, body = _split_frontmatter(text, warnings)
    stem = posixpath.splitext(posixpath.basename(rel_path))[0]
    title = _first_str(meta.get("title")) or markdown.first_h1(body) or stem
    folder = posixpath.dirname(rel_path)
    tags = _tag_list(meta.get("tags", meta.get("tag"))) + tuple(t.lower() for t in markdown.inline_tags(body))
    updated = _frontmatter_date(meta, _UPDATED_KEYS, warnings) or mtime
    created = _frontmatter_date(meta, _CREATED_KEYS, warnings) or updated
    return ParsedNote(
        id=_note_id(meta.get("id"), rel_path),
        rel_path=rel_path,
        title=title.strip()[:1000],
        aliases=_string_list(meta.get("aliases", meta.get("alias"))),
        tags=tuple(dict.fromkeys(tags)),
        folder=folder,
        created=created,
        updated=updated,
        headings=markdown.headings(body),
        links=markdown.wikilinks(body),
        text=markdown.to_plain_text(body),
        warnings=tuple(warnings),
    )


def _split_frontmatter(text: str, warnings: list[str]) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    try:
        meta, body = frontmatter.parse(text, handler=_HANDLER)
    except Exception as exc:  # noqa: BLE001 - any YAML failure keeps the note as body text
        warnings.append(f"malformed frontmatter ({type(exc).__name__}): indexed as body text")
        return {}, text
    if not isinstance(meta, dict):
        warnings.append("frontmatter is not a mapping: indexed as body text")
        return {}, text
    return {str(k).lower(): v for k, v in meta.items()}, body


def _note_id(value: Any, rel_path: str) -> str:
    if isinstance(value, str | int) and not isinstance(value, bool):
        text = str(value).strip()
        if text and len(text) <= MAX_ID_LENGTH and text.isprintable():
            return text
    return rel_path


def _first_str(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None or isinstance(value, dict):
        return None
    text = str(value).strip()
    return text or None


def _string_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items: Iterable[Any] = value if isinstance(value, list | tuple) else str(value).split(",")
    return tuple(dict.fromkeys(s for s in (str(v).strip() for v in items if v is not None) if s))


def _tag_list(value: Any) -> tuple[str, ...]:
    """Tags in every frontmatter shape: list, "a, b", "a b", "#a", single value."""
    if value is None:
        return ()
    raw: Iterable[Any] = value if isinstance(value, list | tuple) else [value]
    tags: list[str] = []
    for item in raw:
        if item is None or isinstance(item, dict):
            continue
        for part in _TAG_SPLIT_RE.split(str(item)):
            tag = part.strip().lstrip("#").strip("/").lower()
            if tag:
                tags.append(tag)
    return tuple(tags)


def _frontmatter_date(meta: dict[str, Any], keys: tuple[str, ...], warnings: list[str]) -> datetime | None:
    for key in keys:
        if key in meta and meta[key] not in (None, ""):
            parsed = to_datetime(meta[key])
            if parsed is None:
                warnings.append(f"unreadable date in frontmatter field {key!r}: {meta[key]!r}")
                continue
            return parsed
    return None


def to_datetime(value: Any) -> datetime | None:
    """Any YAML date shape → aware datetime (naive values are taken as UTC)."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _from_number(float(value)) or (to_datetime(str(value)) if isinstance(value, int) else None)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.isdigit() and len(text) >= 9:
        return _from_number(float(text))
    try:
        return to_datetime(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _from_number(value: float) -> datetime | None:
    if value > 1e11:  # milliseconds since the epoch
        value /= 1000
    if 1e8 < value < 1e10:  # plausibly seconds since the epoch (1973..2286)
        return datetime.fromtimestamp(value, tz=UTC)
    return None
