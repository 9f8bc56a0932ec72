"""The MCP tools' answers as compact text: what an assistant reads to choose
its next call (ids to open, why a channel is missing, how to page on).
Pure functions of the Service's results (mcp/tools.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from notarium_search.types import (
    Activation,
    NoteDetail,
    NoteLink,
    NoteRecord,
    NotesPage,
    NoteSummary,
    SearchHit,
    SearchResponse,
    Snippet,
)

if TYPE_CHECKING:
    from notarium_search.types import Echo

FRONTMATTER_PREVIEW_CHARS = 300  # per note in query_frontmatter's text; the structured content has it all
MARK = "**"  # around highlighted words: Markdown bold, which assistants read as emphasis


def search_text(
    space_name: str,
    response: SearchResponse,
    lexical_only: str | None,
    indexed: int | None = None,
    stalled: str | None = None,
) -> str:
    """`indexed`: how many notes the space's index holds, said while it is
    partial (what was searched), since none of its "no note…" is final then.
    `stalled`: why indexing cannot go on (the space's folder unreadable…):
    said instead of "under way", which would never end."""
    found = len(response.results)
    channels = ", ".join(response.channels_used) or "none"
    searched = f'"{response.query}"'
    if found:
        head = f"{_notes(found)} for {searched} in space {space_name}, best first (channels: {channels})."
    elif response.partial:
        indexing = "stopped" if stalled else "under way"
        head = f"Indexing is {indexing} in space {space_name}: searched {searched} in {_so_far(indexed)}; none matches."
    else:
        head = f"No note matches {searched} in space {space_name}."
    lines = [head]
    if response.partial and stalled:
        lines.append(f"Indexing cannot go on: {stalled}.")
    if response.filters:
        lines.append("Filters typed in the query: " + ", ".join(f"{f.name}:{f.value}" for f in response.filters) + ".")
    if lexical_only:
        lines.append(f"Lexical-only answer (matched words, not meaning): {lexical_only}.")
    others = {channel: why for channel, why in response.degraded.items() if channel != "semantic"}
    if others:
        lines.append("Also missing: " + "; ".join(f"{channel}: {why}" for channel, why in others.items()) + ".")
    # While the space is indexing, every "no note" is of the notes indexed so far: never a definitive
    # claim (an assistant repeats it), and the answer says what was searched.
    so_far = " indexed so far" if response.partial else ""
    if response.partial and found:
        lines.append(_partial(indexed))
    elif response.partial:
        lines.append("Search again once indexing ends: the notes not yet indexed may match.")
    if response.unmatched_terms:
        lines.append(f"No note{so_far} contains: {', '.join(response.unmatched_terms)}.")
    if "relevance floor" in response.caveats.get("semantic", "") and not found:
        lines.append(f"No note{so_far} is closer in meaning than unrelated text is.")
    for rank, hit in enumerate(response.results, start=1):
        lines.extend(_hit_lines(rank, hit))
    return "\n".join(lines)


# What a hit's `known` says, for an assistant: why this note comes first.
_NAMES = {
    "path": "its path",
    "file_name": "its file name",
    "title": "its title",
    "alias": "an alias",
    "id": "its id",
    "heading": "one of its headings",
}


def _named(known: str) -> str:
    if known.endswith("_words"):  # lexical/known.py: the query's words start its words
        name = known.removesuffix("_words")
        return f"the start of words of {_NAMES.get(name, name)}"
    name = known.removesuffix("_prefix")
    what = _NAMES.get(name, name)
    return f"the start of {what}" if known != name else what


def _hit_lines(rank: int, hit: SearchHit) -> list[str]:
    found_by = ", ".join(f"{channel} #{place}" for channel, place in hit.channels.items())
    lines = [
        f"{rank}. {hit.note.title}",
        f"   {_where(hit.note)} | score {hit.score:.4g} | found by: {found_by or '-'}",
        f"   {_dates_and_tags(hit.note)}",
    ]
    best = hit.placed()
    if best is not None and best.line is not None:
        section = f" ({' > '.join(best.heading)})" if best.heading else ""
        lines.append(f"   at: {hit.note.path}:{best.line}{section}")
    if hit.reason:
        lines.append(f"   why: {hit.reason}")
    if hit.known:
        lines.append(f"   named: the query is {_named(hit.known)}")
    if hit.open_url:
        lines.append(f"   open: {hit.open_url}")
    lines.extend(f"   > {_marked(snippet)}" for snippet in hit.snippets)
    return lines


def related_text(space_name: str, detail: NoteDetail, echoes: Sequence[Echo], unavailable: str | None) -> str:
    note = detail.record.note
    lines = [f'Notes related to "{note.title}" (id: {note.id}) in space {space_name}.']
    if unavailable:
        lines.append(f"Semantic neighbours unavailable: {unavailable}.")
    elif not echoes:
        lines.append("Semantic neighbours: none found.")
    else:
        lines.append("Semantic neighbours, closest first (similarity: cosine of the best pair of fragments):")
    for rank, echo in enumerate(echoes, start=1):
        lines.append(f"{rank}. {echo.note.title}")
        lines.append(f"   {_where(echo.note)} | similarity {echo.similarity:.3f} | updated {_day(echo.note.updated)}")
        lines.append(f"   their fragment: > {_marked(echo.fragment)}")
        lines.append(f"   this note's fragment: > {_marked(echo.source)}")
    lines.extend(_link_lines(detail))
    return "\n".join(lines)


def _link_lines(detail: NoteDetail) -> list[str]:
    lines = [
        f"Links from this note: {_linked(link.note for link in detail.links)}",
        f"Backlinks (notes linking here): {_linked(detail.backlinks)}",
    ]
    if detail.dangling:
        lines.append(f"Dangling links (no such note): {', '.join(_written(link) for link in detail.dangling)}")
    return lines


def frontmatter_text(space_name: str, page: NotesPage, criteria: str) -> str:
    if page.items:
        lines = [f"{_notes(len(page.items))} in space {space_name} ({criteria}), most recently updated first."]
    elif page.partial:
        lines = [f"No note indexed so far in space {space_name} matches ({criteria})."]
    else:
        lines = [f"No note in space {space_name} matches ({criteria})."]
    if page.partial:
        lines.append(_partial())
    for rank, record in enumerate(page.items, start=1):
        lines.extend(_record_lines(rank, record))
    if page.next_cursor:
        lines.append(
            f'More notes match: call query_frontmatter again with the same filters and cursor="{page.next_cursor}".'
        )
    return "\n".join(lines)


def _record_lines(rank: int, record: NoteRecord) -> list[str]:
    fields = json.dumps(dict(record.frontmatter), ensure_ascii=False, default=str)
    if len(fields) > FRONTMATTER_PREVIEW_CHARS:
        fields = fields[:FRONTMATTER_PREVIEW_CHARS] + "… (truncated; the structured content has every field)"
    return [
        f"{rank}. {record.note.title}",
        f"   {_where(record.note)} | {_dates_and_tags(record.note)}",
        f"   used in: {_uses(record.activations)}",
        f"   frontmatter: {fields}",
    ]


def activations_text(
    space_name: str, days: int, since: datetime, found: Sequence[NoteRecord], partial: bool = False
) -> str:
    """`partial`: the space is still indexing."""
    window = f"in the last {days} days (since {_day(since)})"
    if not found:
        if partial:
            return f"No note indexed so far in space {space_name} records a use {window}.\n{_partial()}"
        return f"No note of space {space_name} records a use {window}."
    lines = [f"{_notes(len(found))} of space {space_name} used {window}, most recent use first."]
    if partial:
        lines.append(_partial())
    for rank, record in enumerate(found, start=1):
        lines.append(f"{rank}. {record.note.title}")
        lines.append(f"   {_where(record.note)}")
        lines.append(f"   used in: {_uses(record.activations)}")
    return "\n".join(lines)


def note_text(space_name: str, detail: NoteDetail, piece: str | None, offset: int, total: int, bound: int) -> str:
    record = detail.record
    note = record.note
    lines = [f"# {note.title}", f"{_where(note)} | space: {space_name}", _dates_and_tags(note)]
    if note.aliases:
        lines.append(f"aliases: {', '.join(note.aliases)}")
    if record.collections:
        lines.append(f"collections: {', '.join(record.collections)}")
    lines.append(f"used in: {_uses(record.activations)}")
    lines.extend(_link_lines(detail))
    lines.append("")
    if piece is None:
        lines.append("(The note's file could not be read: it is gone, or no longer inside the space.)")
        return "\n".join(lines)
    end = offset + len(piece)
    whole = offset == 0 and end == total
    lines.append(
        f"--- note text ({total} characters) ---"
        if whole
        else f"--- note text, characters {offset}-{end} of {total} ---"
    )
    lines.append(piece)
    if end < total:
        lines.append(
            f"--- truncated at character {end} of {total} (get_note returns at most {bound} characters a call):"
            f" call get_note with offset={end} for the rest ---"
        )
    return "\n".join(lines)


def _notes(count: int) -> str:
    return f"{count} note" if count == 1 else f"{count} notes"


def _so_far(indexed: int | None) -> str:
    if not indexed:  # None: not counted
        return "the notes indexed so far" + (" (none yet)" if indexed == 0 else "")
    return f"the {_notes(indexed)} indexed so far"


def _partial(indexed: int | None = None) -> str:
    were = "was" if indexed == 1 else "were"
    return f"Indexing is under way: only {_so_far(indexed)} {were} searched; more may match once it ends."


def _where(note: NoteSummary) -> str:
    return f"id: {note.id} | path: {note.path}"


def _dates_and_tags(note: NoteSummary) -> str:
    tags = f"tags: {', '.join(note.tags)} | " if note.tags else ""
    return f"{tags}created {_day(note.created)} | updated {_day(note.updated)}"


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


def _uses(activations: Sequence[Activation]) -> str:
    if not activations:
        return "never (no use recorded)"
    return "; ".join(
        f"{a.where} ({_day(a.date)})"
        if a.dated
        else f"{a.where} (undated; counted as of the last update, {_day(a.date)})"
        for a in activations
    )


def _linked(notes: Iterable[NoteSummary | None]) -> str:
    shown = [f"{note.title} (id: {note.id})" for note in notes if note is not None]
    return ", ".join(shown) or "none"


def _written(link: NoteLink) -> str:
    return f"[[{link.target}]]"


def _marked(snippet: Snippet) -> str:
    """The snippet's text with its highlighted ranges in bold."""
    text = snippet.text
    out: list[str] = []
    cursor = 0
    for piece in sorted(snippet.highlights, key=lambda r: r.start):
        if piece.start < cursor:  # overlapping ranges: the first one already covers it
            continue
        out.extend((text[cursor : piece.start], MARK, text[piece.start : piece.end], MARK))
        cursor = piece.end
    out.append(text[cursor:])
    return "".join(out).replace("\n", " ")
