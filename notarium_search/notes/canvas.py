"""JSON Canvas 1.0 (jsoncanvas.org), Obsidian's `.canvas` files, as a note
format (notes/formats.py's `NoteFormat`). Pure: no I/O.

A canvas is a JSON object whose `nodes` are cards laid out on a plane (text
cards of Markdown, file cards showing a file of the vault, link cards
showing a URL, groups: labelled rectangles around cards) and whose `edges`
join two cards, with an optional label. What is read of it (docs/notes.md,
"Canvases"):

- the title is the file's name without `.canvas`, the id its path, the dates
  the file's modification time (a canvas holds no frontmatter);
- each card is a section whose heading is the card's id, so that a hit's
  `anchor` (the last heading it sits under) names the card it is in; inside
  the section of its group (the smallest group whose rectangle holds the
  card's whole) when it has one: a group is a section of level 1 headed by
  its label (else its id), its cards sections of level 2; a card in no group
  is a section of level 1. Groups are not nested: a group inside a group is
  a section of level 1 of its own. The cards in no group come first, then
  each group; groups and the cards of each in reading order (by y, then x,
  then their place in the file);
- a text card's Markdown is read as a note's body (notes/markdown.py): its
  words, `#tags`, `[[wiki-links]]` and headings (in `headings`, not sections:
  a hit inside a card is anchored at the card); a file card's path and a link
  card's URL are its text, a group's label is a heading; an edge's label is
  the text of a section of level 1 headed by the edge's id, after the cards;
- a file card is a wiki-link to its file (`subpath` "#Heading" its heading),
  and so is an edge ending at one (its label the link's alias): the canvas
  is a backlink of the notes it arranges;
- `lines`: each card's text is tied to the line of the JSON file where the
  card's object starts, at the column of its `{` (Obsidian writes a card per
  line), so that `path:line` opens the file at the card; a column within a
  card is that column plus the distance into the card's text: approximate.

Bounded and linear: a canvas is read whole, up to MAX_CANVAS_BYTES (a cut
JSON is no JSON), its first MAX_NODES nodes and MAX_EDGES edges (the rest
ignored with a warning), cards matched with groups at most MAX_GROUP_CHECKS
times. The JSON is parsed by the standard library's C scanner, whose nesting
is bounded by the recursion limit (a RecursionError, refused as not JSON).
Nodes that are not objects, have no id or an unknown type are ignored; a
field of the wrong type is taken as missing.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import msgspec

from notarium_search.notes import markdown
from notarium_search.notes.parse import FILE, NotANote, decode_note, file_stem, nfc
from notarium_search.types import ParsedNote, WikiLink

# Bump when what `read` makes of some canvas changes: every space is rebuilt.
CANVAS_VERSION = 1
# A canvas is read whole or not at all: JSON cut at max_file_bytes is no JSON.
# 16 MiB is far beyond what Obsidian writes (a canvas of 1,000 cards of a
# paragraph each is about 400 KB) and parses in well under a second.
MAX_CANVAS_BYTES = 16 * 1024 * 1024
# Nodes and edges read; past them the rest of the array is ignored, with a
# warning. A canvas of thousands of cards is already past what anyone reads.
MAX_NODES = 10_000
MAX_EDGES = 10_000
# (card, group) rectangle tests in all: each card is tested against the groups,
# smallest first, until one holds it. Real canvases (50 groups, 500 cards)
# stay far below; past it the remaining cards are taken as in no group.
MAX_GROUP_CHECKS = 1_000_000
MAX_ID_CHARS = 200  # a node's or an edge's id, a section's heading
MAX_NAME_CHARS = 80  # of a card named in `shown`'s list of labelled edges
# Coordinates past this are clamped (a JSON integer may have 4,300 digits).
MAX_COORDINATE = 1e15
KINDS = ("text", "file", "link", "group")
TEXT, FILE_CARD, LINK, GROUP = KINDS
_BLANKS = re.compile(r"[ \t\n\r]*")
_SURROGATES = re.compile("[\ud800-\udfff]")  # "\ud800" in JSON decodes to a lone surrogate, which UTF-8 cannot hold
_DECODER = json.JSONDecoder()


class Card(msgspec.Struct, frozen=True):
    """A node of the canvas, its fields checked. `body`: a text card's
    Markdown, a file card's path, a link card's URL, a group's label."""

    index: int  # its place in the file's `nodes` array, from 0
    id: str
    kind: str
    body: str
    subpath: str = ""  # a file card's "#Heading" (or "#^block"), else ""
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0
    line: int = 1  # where its object starts in the file: 1-based line and column
    column: int = 1

    def holds(self, card: Card) -> bool:
        """This group's rectangle holds the whole of `card`'s."""
        return (
            self.x <= card.x
            and self.y <= card.y
            and card.x + card.width <= self.x + self.width
            and card.y + card.height <= self.y + self.height
        )

    def name(self) -> str:
        """How `shown` names the card in an edge: a text card's first line, a file, a URL, a label."""
        first = next((line for line in self.body.splitlines() if line.strip()), "")
        if self.kind == TEXT:  # "# Objectifs" is named "Objectifs"
            first = markdown.to_plain_text(first[: 4 * MAX_NAME_CHARS])
        name = " ".join(first.split()) or self.id
        return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


class Edge(msgspec.Struct, frozen=True):
    id: str
    from_node: str
    to_node: str
    label: str
    line: int = 1
    column: int = 1


class Canvas(msgspec.Struct):
    """A canvas as read: its cards (groups aside), groups, edges, and what was ignored."""

    cards: list[Card] = msgspec.field(default_factory=list)
    groups: list[Card] = msgspec.field(default_factory=list)
    edges: list[Edge] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)

    def arranged(self) -> list[tuple[Card | None, list[Card]]]:
        """(group, its cards) in reading order: the cards in no group first
        (group None), then each group; each in order of y, x, place in the file."""
        placed = _placed(self.cards, self.groups, self.warnings)
        members: dict[int, list[Card]] = {group.index: [] for group in self.groups}
        loose: list[Card] = []
        for card in self.cards:
            group = placed.get(card.index)
            (loose if group is None else members[group]).append(card)
        blocks: list[tuple[Card | None, list[Card]]] = [(None, sorted(loose, key=_reading_order))] if loose else []
        blocks += [(g, sorted(members[g.index], key=_reading_order)) for g in sorted(self.groups, key=_reading_order)]
        return blocks


def _reading_order(card: Card) -> tuple[float, float, int]:
    return card.y, card.x, card.index


def _placed(cards: Sequence[Card], groups: Sequence[Card], warnings: list[str]) -> dict[int, int]:
    """Each card's group (their `index`es), the smallest group holding it,
    within MAX_GROUP_CHECKS rectangle tests."""
    if not groups:
        return {}
    smallest_first = sorted(groups, key=lambda g: (g.width * g.height, g.index))
    placed: dict[int, int] = {}
    checks = MAX_GROUP_CHECKS
    for done, card in enumerate(cards):
        for group in smallest_first:
            if checks == 0:
                left = len(cards) - done
                warnings.append(
                    f"{left} cards taken as in no group: past {MAX_GROUP_CHECKS} tests of a card in a group"
                )
                return placed
            checks -= 1
            if group.holds(card):
                placed[card.index] = group.index
                break
    return placed


class CanvasFormat:
    """JSON Canvas 1.0, as Obsidian writes it (`.canvas`)."""

    name = "canvas"
    suffixes = (".canvas",)
    version = CANVAS_VERSION
    max_bytes = MAX_CANVAS_BYTES

    def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool = False) -> ParsedNote:
        canvas = load(raw, truncated=truncated)
        note = _Note()
        for group, cards in canvas.arranged():
            level = 1
            if group is not None:
                note.group(group)
                level = 2
            for card in cards:
                note.card(card, level)
        files = {card.id: card for card in canvas.cards if card.kind == FILE_CARD}
        for edge in canvas.edges:
            note.edge(edge, files.get(edge.to_node))
        stem = file_stem(path)
        return ParsedNote(
            id=path,
            path=path,
            title=stem,
            tags=tuple(dict.fromkeys(note.tags)),
            folder=posixpath.dirname(path),
            created=mtime,
            updated=mtime,
            created_from=FILE,
            updated_from=FILE,
            headings=tuple(note.headings),
            links=tuple(dict.fromkeys(note.links)),
            text="".join(note.parts),
            warnings=tuple(canvas.warnings),
            sections=tuple(note.sections),
            code_blocks=tuple(note.code_blocks),
            lines=tuple(note.lines),
        )

    def shown(self, raw: bytes, path: str, *, truncated: bool = False) -> str:
        """The cards as Markdown: each group a `## label` (a rule when it has
        none), each card a block (a text card's Markdown as written, a file
        card `![[file]]` or `[[file#subpath]]`, a link card `<url>`), then the
        labelled edges after a rule, one item each: `A → B: label`."""
        canvas = load(raw, truncated=truncated)
        blocks: list[str] = []
        for group, cards in canvas.arranged():
            if group is not None:
                label = " ".join(group.body.split())
                blocks.append(f"## {label}" if label else "---")
            blocks.extend(_shown_card(card) for card in cards)
        names = {card.id: card.name() for card in (*canvas.groups, *canvas.cards)}
        labelled = [
            f"- {names.get(e.from_node, e.from_node)} → {names.get(e.to_node, e.to_node)}: {' '.join(e.label.split())}"
            for e in canvas.edges
            if e.label.strip()
        ]
        if labelled:
            blocks += ["---", "\n".join(labelled)]
        return "\n\n".join(blocks) + "\n" if blocks else ""

    def link_text(self, path: str, heading: str) -> str:
        """The canvas's path: Obsidian opens a canvas by its file, and has no link to a card."""
        return path


CANVAS = CanvasFormat()


def _shown_card(card: Card) -> str:
    if card.kind == FILE_CARD:
        return f"[[{card.body}{card.subpath}]]" if card.subpath else f"![[{card.body}]]"
    if card.kind == LINK:
        return f"<{card.body}>" if not any(c.isspace() or c in "<>" for c in card.body) else card.body
    return card.body


class _Note(msgspec.Struct):
    """The parsed note's pieces, built card by card."""

    parts: list[str] = msgspec.field(default_factory=list)
    size: int = 0
    sections: list[tuple[int, int, str]] = msgspec.field(default_factory=list)
    lines: list[tuple[int, int, int]] = msgspec.field(default_factory=list)
    headings: list[str] = msgspec.field(default_factory=list)
    tags: list[str] = msgspec.field(default_factory=list)
    links: list[WikiLink] = msgspec.field(default_factory=list)
    code_blocks: list[tuple[int, int]] = msgspec.field(default_factory=list)

    def _start(self, heading: str, level: int, line: int, column: int) -> int:
        """A new section here (after a paragraph break when text precedes it): its offset."""
        if self.size:
            self.parts.append("\n\n")
            self.size += 2
        self.sections.append((self.size, level, heading))
        self.lines.append((self.size, line, column))
        return self.size

    def _add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def group(self, group: Card) -> None:
        label = " ".join(group.body.split())
        self._start(label or group.id, 1, group.line, group.column)
        if label:
            self.headings.append(label)
            self._add(label)

    def card(self, card: Card, level: int) -> None:
        if card.kind == TEXT:
            parts = markdown.analyse(card.body)
            self.headings.extend(parts.headings)
            self.tags.extend(tag.lower() for tag in parts.tags)
            self.links.extend(parts.links)
            if not parts.plain_text.strip():
                return
            at = self._start(card.id, level, card.line, card.column)
            self.code_blocks.extend((start + at, end + at) for start, end in parts.code_blocks)
            self._add(parts.plain_text)
            return
        if card.kind == FILE_CARD:
            self.links.append(WikiLink(card.body, _heading(card.subpath)))
        self._start(card.id, level, card.line, card.column)
        self._add(card.body + card.subpath)

    def edge(self, edge: Edge, to_file: Card | None) -> None:
        label = " ".join(edge.label.split())
        if to_file is not None:
            self.links.append(WikiLink(to_file.body, _heading(to_file.subpath), label or None))
        if label:
            self._start(edge.id, 1, edge.line, edge.column)
            self._add(label)


def _heading(subpath: str) -> str | None:
    """A file card's `subpath` as a wiki-link's heading: "#Plan" → "Plan" (as `[[file#Plan]]`)."""
    return subpath[1:].strip() or None


# -- the file -------------------------------------------------------------


def load(raw: bytes, *, truncated: bool = False) -> Canvas:
    """The canvas in a file's bytes, or `NotANote` with the reason."""
    if truncated:
        raise NotANote(f"a canvas is read whole: cut short, it is no JSON (larger than {MAX_CANVAS_BYTES} bytes)")
    text = decode_note(raw)
    if not text.strip():  # a canvas Obsidian has just made, before its first card
        return Canvas()
    top, starts = _parse(text)
    nodes, edges = top.get("nodes", []), top.get("edges", [])
    if not isinstance(nodes, list):
        raise NotANote(f"not a JSON Canvas: `nodes` is {_json_type(nodes)}, not a list")
    canvas = Canvas()
    if len(nodes) > MAX_NODES:
        canvas.warnings.append(f"{len(nodes)} nodes: the first {MAX_NODES} read, the rest ignored")
    places = _positions(text, starts.get("nodes", [])[:MAX_NODES])
    for index, (node, (line, column)) in enumerate(zip(nodes[:MAX_NODES], places, strict=False)):
        card = _card(node, index, line, column)
        if card is not None:
            (canvas.groups if card.kind == GROUP else canvas.cards).append(card)
    if not isinstance(edges, list):
        canvas.warnings.append(f"`edges` is {_json_type(edges)}, not a list: ignored")
        return canvas
    if len(edges) > MAX_EDGES:
        canvas.warnings.append(f"{len(edges)} edges: the first {MAX_EDGES} read, the rest ignored")
    places = _positions(text, starts.get("edges", [])[:MAX_EDGES])
    for item, (line, column) in zip(edges[:MAX_EDGES], places, strict=False):
        edge = _edge(item, line, column)
        if edge is not None:
            canvas.edges.append(edge)
    return canvas


def _parse(text: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """The top-level object, and where each element of its `nodes` and `edges`
    arrays starts in the text: the object is walked key by key, those two
    arrays element by element, every value decoded by the C scanner (one pass)."""
    try:
        return _walk(text)
    except NotANote:
        raise
    except RecursionError as exc:
        raise NotANote("not JSON: nested too deep") from exc
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise NotANote(f"not JSON ({str(exc)[:200]})") from exc


def _walk(text: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    pos = _blank(text, 0)
    if not text.startswith("{", pos):
        value = json.loads(text)  # not JSON: its error; else not an object
        raise NotANote(f"not a JSON Canvas: the file holds {_json_type(value)}, not an object")
    top: dict[str, Any] = {}
    starts: dict[str, list[int]] = {}
    pos = _blank(text, pos + 1)
    if text.startswith("}", pos):
        return top, _end(text, pos + 1, starts)
    while True:
        if not text.startswith('"', pos):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
        key, pos = _DECODER.raw_decode(text, pos)  # a string: it starts with `"`
        pos = _blank(text, pos)
        if not text.startswith(":", pos):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
        pos = _blank(text, pos + 1)
        if key in ("nodes", "edges") and text.startswith("[", pos):
            top[key], starts[key], pos = _array(text, pos)
        else:
            top[key], pos = _DECODER.raw_decode(text, pos)
            starts.pop(key, None)  # a key written twice: the last one counts, as for json.loads
        pos = _blank(text, pos)
        if text.startswith(",", pos):
            pos = _blank(text, pos + 1)
        elif text.startswith("}", pos):
            return top, _end(text, pos + 1, starts)
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


def _array(text: str, pos: int) -> tuple[list[Any], list[int], int]:
    """The array at `pos` (a `[`), where each of its elements starts, and the offset after it."""
    items: list[Any] = []
    starts: list[int] = []
    pos = _blank(text, pos + 1)
    if text.startswith("]", pos):
        return items, starts, pos + 1
    while True:
        starts.append(pos)
        item, pos = _DECODER.raw_decode(text, pos)
        items.append(item)
        pos = _blank(text, pos)
        if text.startswith(",", pos):
            pos = _blank(text, pos + 1)
        elif text.startswith("]", pos):
            return items, starts, pos + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


def _end(text: str, pos: int, starts: dict[str, list[int]]) -> dict[str, list[int]]:
    pos = _blank(text, pos)
    if pos != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return starts


def _blank(text: str, pos: int) -> int:
    match = _BLANKS.match(text, pos)
    return match.end() if match is not None else pos


def _positions(text: str, offsets: Sequence[int]) -> Iterator[tuple[int, int]]:
    """The 1-based line and column of each offset (ascending), in one pass over the text."""
    line, line_start, counted = 1, 0, 0
    for at in offsets:
        newlines = text.count("\n", counted, at)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", counted, at) + 1
        counted = at
        yield line, at - line_start + 1


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a boolean" if isinstance(value, bool) else "a number"


# -- nodes and edges ------------------------------------------------------


def _card(node: Any, index: int, line: int, column: int) -> Card | None:
    """The node as a card; None when it is no object, has no id or an unknown type."""
    if not isinstance(node, dict):
        return None
    ident = _ident(node.get("id"))
    kind = node.get("type")
    if not ident or kind not in KINDS:
        return None
    subpath = ""
    if kind == TEXT:
        body = _text(node.get("text"))
    elif kind == FILE_CARD:
        body = " ".join(_text(node.get("file")).split())
        written = _text(node.get("subpath")).strip()
        subpath = written if written.startswith("#") and len(written) > 1 else ""
    elif kind == LINK:
        body = _text(node.get("url")).strip()
    else:
        body = _text(node.get("label"))
    if not body and kind in (FILE_CARD, LINK):
        return None
    x, y = _number(node.get("x")), _number(node.get("y"))
    width, height = max(_number(node.get("width")), 0.0), max(_number(node.get("height")), 0.0)
    return Card(index, ident, kind, body, subpath, x, y, width, height, line, column)


def _edge(item: Any, line: int, column: int) -> Edge | None:
    if not isinstance(item, dict):
        return None
    ident = _ident(item.get("id"))
    if not ident:
        return None
    return Edge(ident, _ident(item.get("fromNode")), _ident(item.get("toNode")), _text(item.get("label")), line, column)


def _text(value: Any) -> str:
    """A string field's text in NFC (lone surrogates, which JSON escapes may
    write and UTF-8 cannot hold, replaced); "" for any other type."""
    if not isinstance(value, str):
        return ""
    if _SURROGATES.search(value):
        value = _SURROGATES.sub("\ufffd", value)
    return nfc(value)


def _ident(value: Any) -> str:
    return " ".join(_text(value).split())[:MAX_ID_CHARS]


def _number(value: Any) -> float:
    """A coordinate or size: a JSON number, finite and within ±MAX_COORDINATE; else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    if isinstance(value, int):
        return float(max(min(value, MAX_COORDINATE), -MAX_COORDINATE))
    return max(min(value, MAX_COORDINATE), -MAX_COORDINATE) if math.isfinite(value) else 0.0
