"""Note formats: which reader turns a file of the space into a `ParsedNote`.

One extension point, one function (as datasette's hookspecs): a format is
an object with the shape of `NoteFormat`, and `register` adds it. The
built-in Markdown format is registered here through that same function, so
it has no path of its own through the indexer: `for_path` picks a file's
format by its suffix, `default_include` is what `include` means when a
space does not set it (settings cannot import this layer: it gives `()`,
resolved in `notes/scan`), and `fingerprint` puts each format's version in
the index's fingerprint, so changing what a format reads rebuilds the spaces.

A file whose suffix no format reads is never parsed as something else (a
JSON Canvas read as Markdown): the indexer skips it, with `unread_reason`
in the log and in status.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Protocol

from notarium_search.notes.canvas import CANVAS
from notarium_search.notes.parse import MARKDOWN, NotANote, ReadLater
from notarium_search.notes.pdf import PDF
from notarium_search.types import ParsedNote

__all__ = [
    "MARKDOWN",
    "NotANote",
    "NoteFormat",
    "ReadLater",
    "byte_limit",
    "default_include",
    "fingerprint",
    "for_path",
    "include_patterns",
    "link_text",
    "register",
    "registered",
    "shown",
    "unread_reason",
    "unregister",
]

# One suffix, as os.path.splitext gives it and in lower case: a dot and no
# other, nothing a glob pattern would read as a wildcard.
_SUFFIX_RE = re.compile(r"\.[a-z0-9_+-]+")
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
# Markdown's part of the fingerprint predates the registry ("parser11"): kept
# as it was, so that a refactor does not rebuild every Markdown space.
_LEGACY_TOKENS = {"markdown": "parser"}


class NoteFormat(Protocol):
    """What a note format is. `read` is pure (the indexer opens the file,
    bounds its size, times the read and skips what takes too long) and must
    never raise on content but `NotANote`, whose message is the reason shown
    in status; anything else it raises is logged as an internal error and
    the file retried at the next pass."""

    @property
    def name(self) -> str:
        """Lower case, a letter then letters, digits or `_`: in logs and the index fingerprint."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The file suffixes it reads (".md"), lower case; a file's is matched ignoring case."""
        ...

    @property
    def version(self) -> int:
        """Bump it whenever what `read` returns for some file changes: every space is rebuilt."""
        ...

    @property
    def max_bytes(self) -> int | None:
        """None: a file is read up to `max_file_bytes`, the rest cut off
        (`oversize`). An int: the format needs whole files (a cut PDF is no
        PDF) and reads them up to that size; a bigger one is skipped."""
        ...

    def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool) -> ParsedNote:
        """The note in `raw`, the file's bytes (only its first `max_file_bytes`
        when `truncated`); `path` is POSIX and relative to the space, `mtime`
        the file's modification time (aware), a note's date when it has none."""
        ...

    def shown(self, raw: bytes, path: str, *, truncated: bool) -> str:
        """The note as Markdown for people (the note view, MCP `get_note`'s
        `content`): a Markdown note's own text, a canvas's cards, a PDF's
        pages under `## page N`. Raises `NotANote` as `read` does."""
        ...

    def link_text(self, path: str, heading: str) -> str:
        """Obsidian's link text for the note at `heading` ("" for the note
        itself), as its `[[…]]` links and URIs write it: `notes/a#Intro` for a
        Markdown note, `paper.pdf#page=3` for a PDF's page."""
        ...


_BY_SUFFIX: dict[str, NoteFormat] = {}  # in the order the formats were registered


def register(fmt: NoteFormat) -> NoteFormat:
    """Add a format; returns it. A suffix another format already reads is a
    ValueError: which one reads a file must never depend on import order."""
    if not isinstance(fmt.name, str) or not _NAME_RE.fullmatch(fmt.name):
        raise ValueError(f"a note format's name must match {_NAME_RE.pattern}, got {fmt.name!r}")
    if any(other.name == fmt.name for other in registered()):
        raise ValueError(f"a note format named {fmt.name!r} is already registered")
    if isinstance(fmt.version, bool) or not isinstance(fmt.version, int) or fmt.version < 0:
        raise ValueError(f"note format {fmt.name}: version must be an int >= 0, got {fmt.version!r}")
    if isinstance(fmt.suffixes, str) or not fmt.suffixes:
        raise ValueError(f"note format {fmt.name}: suffixes must be a non-empty tuple, got {fmt.suffixes!r}")
    for suffix in fmt.suffixes:
        if not isinstance(suffix, str) or not _SUFFIX_RE.fullmatch(suffix):
            raise ValueError(f"note format {fmt.name}: {suffix!r} is not a lower-case suffix such as '.md'")
        if suffix in _BY_SUFFIX:
            raise ValueError(f"note format {fmt.name}: {suffix} files are read by {_BY_SUFFIX[suffix].name}")
    for suffix in fmt.suffixes:
        _BY_SUFFIX[suffix] = fmt
    return fmt


def unregister(fmt: NoteFormat) -> None:
    """Remove a format (tests); its files are skipped from the next pass on."""
    for suffix in [s for s, f in _BY_SUFFIX.items() if f is fmt]:
        del _BY_SUFFIX[suffix]


def registered() -> tuple[NoteFormat, ...]:
    """The formats, each once, in the order they were registered."""
    return tuple({id(f): f for f in _BY_SUFFIX.values()}.values())


def _suffix(rel_path: str) -> str:
    return posixpath.splitext(rel_path)[1].lower()


def for_path(rel_path: str) -> NoteFormat | None:
    """The format that reads this file, by its suffix (case ignored); None: none does."""
    return _BY_SUFFIX.get(_suffix(rel_path))


def unread_reason(rel_path: str) -> str:
    """Why a file `for_path` has no format for is not indexed."""
    suffix = _suffix(rel_path)
    what = f"{suffix} files" if suffix else "files without a suffix"
    return f"no note format reads {what} (formats read: {', '.join(_BY_SUFFIX)})"


def byte_limit(fmt: NoteFormat, max_file_bytes: int) -> int:
    """How many bytes of a file of this format are read (`max_bytes`)."""
    return max_file_bytes if fmt.max_bytes is None else fmt.max_bytes


def shown(raw: bytes, path: str, *, truncated: bool) -> str:
    """The file as Markdown for people, by its format (`NotANote` when none
    reads it). What a format other than Markdown shows is kept for the last
    files asked (a PDF's pages cost a PDFium run, a 15 MB canvas seconds):
    a note opened again, or by several people, costs nothing more."""
    fmt = for_path(path)
    if fmt is None:
        raise NotANote(unread_reason(path))
    if fmt is MARKDOWN:
        return fmt.shown(raw, path, truncated=truncated)
    key = (fmt.name, truncated, hashlib.blake2b(raw, digest_size=16).digest())
    found = _SHOWN.get(key)
    if found is None:
        found = fmt.shown(raw, path, truncated=truncated)
        _SHOWN.put(key, found)
    return found


class _ShownCache:
    """The last SHOWN_KEPT texts `shown` made, at most SHOWN_KEPT_CHARS in all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: OrderedDict[tuple[str, bool, bytes], str] = OrderedDict()
        self._chars = 0

    def get(self, key: tuple[str, bool, bytes]) -> str | None:
        with self._lock:
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
            return text

    def put(self, key: tuple[str, bool, bytes], text: str) -> None:
        if len(text) > SHOWN_KEPT_CHARS // 2:
            return
        with self._lock:
            if key in self._texts:
                return
            self._texts[key] = text
            self._chars += len(text)
            while len(self._texts) > SHOWN_KEPT or self._chars > SHOWN_KEPT_CHARS:
                self._chars -= len(self._texts.popitem(last=False)[1])


# Texts kept by `shown`: a few notes open at once in a few browsers.
SHOWN_KEPT = 16
SHOWN_KEPT_CHARS = 16_000_000
_SHOWN = _ShownCache()


def link_text(path: str, heading: str = "") -> str:
    """Obsidian's link text for `path` at `heading`, by its format (a file no
    format reads: its path, then `#` and the heading)."""
    fmt = for_path(path)
    if fmt is None:
        return path + (f"#{heading}" if heading else "")
    return fmt.link_text(path, heading)


def default_include() -> tuple[str, ...]:
    """`include` when a space does not set it: every file of a registered format."""
    return tuple(f"**/*{suffix}" for suffix in _BY_SUFFIX)


def include_patterns(include: tuple[str, ...]) -> tuple[str, ...]:
    """The patterns `include` stands for: `()` (not set) is `default_include()`."""
    return include or default_include()


def fingerprint(include: tuple[str, ...]) -> str:
    """The formats' part of the index fingerprint: each one's name and version
    (Markdown's as "parser" and its version, as before the registry), and, when `include`
    may match files no format reads, a mark: an index built before those were
    skipped (when every file was read as Markdown) is rebuilt once."""
    tokens = [
        _LEGACY_TOKENS.get(f.name, f.name) + str(f.version)
        for f in sorted(registered(), key=lambda f: (f.name not in _LEGACY_TOKENS, f.name))
    ]
    if include and not all(pattern.lower().endswith(tuple(_BY_SUFFIX)) for pattern in include):
        tokens.append("unformatted_skipped")
    return "-".join(tokens)


for _built_in in (MARKDOWN, PDF, CANVAS):
    register(_built_in)
