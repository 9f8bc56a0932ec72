"""How many of a space's fragments the saved vectors hold, read from the
vector manifest and the notes, with no model, numpy or usearch loaded: what
`notarium-search status` shows beside a running service (offline.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from notarium_search.semantic.chunking import CHUNKING_FINGERPRINT, chunk_note
from notarium_search.semantic.manifest import ManifestUnreadable, Record, saved_records
from notarium_search.types import ParsedNote


@dataclass(frozen=True, slots=True)
class EmbeddedCount:
    """How many of the notes' fragments have their vector in a saved index."""

    embedded: int
    total: int
    stale: str | None = None  # why none counts (vectors of another model or chunking), else None


def count_embedded(directory: Path, model_fingerprint: str | None, notes: Iterable[ParsedNote]) -> EmbeddedCount:
    """Read-only, from the saved manifest and the notes (no model loaded): the
    fragments `plan` would want for `notes`, and how many of them the saved
    vectors hold. What `notarium-search status` shows beside a service.
    `model_fingerprint` None: the vectors are counted whatever model made them."""
    try:
        fingerprint, saved = saved_records((directory / "vectors.json").read_bytes())
    except FileNotFoundError:
        return _count(notes, {}, None)
    except (OSError, ManifestUnreadable) as exc:
        return _count(notes, {}, f"vector manifest unreadable ({exc}): rebuilt by the service")
    if model_fingerprint is not None and fingerprint != f"{model_fingerprint}-{CHUNKING_FINGERPRINT}":
        return _count(notes, {}, "vectors made with another model or chunking: every fragment is embedded again")
    return _count(notes, saved, None)


def _count(notes: Iterable[ParsedNote], saved: Mapping[str, list[Record]], stale: str | None) -> EmbeddedCount:
    embedded = total = 0
    for note in notes:
        wanted = {f.id for f in chunk_note(note)}
        total += len(wanted)
        embedded += sum(1 for record in saved.get(note.id, ()) if record.id in wanted)
    return EmbeddedCount(embedded, total, stale)
