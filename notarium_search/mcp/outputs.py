"""The structured content of each MCP tool, declared: the SDK publishes each
as the tool's `outputSchema` (and checks every answer against it), and
mcp/tools.py builds the answers from them, so the schema cannot drift from
what is sent. Each is the HTTP API's body for the same data (bodies.py) plus
what the tool adds: the space it answered for, and its own fields."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any, get_type_hints

from pydantic import BaseModel, create_model

from notarium_search.bodies import (
    ActivationsBody,
    LinkedNoteOut,
    LinkOut,
    NoteBody,
    NoteRecordOut,
    NotesBody,
    RelatedNote,
    SearchBody,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchNotesOutput(SearchBody):
    space: str
    lexical_only: str | None  # why the semantic channel did not answer; null when it did


@dataclass(frozen=True, slots=True)
class RelatedOutput:
    space: str
    note: NoteRecordOut
    related: list[RelatedNote]  # the semantic neighbours, closest first
    semantic_unavailable: str | None  # why there are none: the channel off or building; null when it answered
    links: list[LinkOut]
    backlinks: list[LinkedNoteOut]
    dangling: list[LinkOut]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontmatterOutput(NotesBody):
    space: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivationsOutput(ActivationsBody):
    space: str
    days: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NoteOutput(NoteBody):
    space: str
    content_offset: int  # where `content` starts in the note's text
    content_chars: int  # the whole text's length
    truncated: bool  # more text follows: call again with offset = content_offset + len(content)


def schema_model(output: type[Any]) -> type[BaseModel]:
    """The output as a pydantic model, for the SDK to publish and check: it
    reads a plain class's fields with getattr, which on our slotted
    dataclasses finds the slot descriptors and takes them for defaults."""
    hints = get_type_hints(output)
    spec: dict[str, Any] = {f.name: (hints[f.name], ... if f.default is MISSING else f.default) for f in fields(output)}
    model: type[BaseModel] = create_model(output.__name__, __doc__=output.__doc__, **spec)
    return model


def fields_of(body: Any) -> dict[str, Any]:
    """A body's fields, not deep-copied: to build the output that extends it."""
    return {f.name: getattr(body, f.name) for f in fields(body)}
