"""Response bodies (bodies.py)."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from notarium_search.bodies import DatesOut, NoteOut, _note_fields, note_out
from notarium_search.types import NoteSummary


def test_note_fields_are_note_outs_fields_in_order():
    when = datetime(2024, 5, 1, tzinfo=UTC)
    note = NoteSummary("a", "a.md", "A", ("x", "y/z"), "", when, when, aliases=("b",))
    assert list(_note_fields(note)) == [f.name for f in fields(NoteOut)]
    assert note_out(note) == NoteOut("a", "a.md", "A", ["x", "y/z"], "", when, when, DatesOut("file", "file"))
