"""The fragments of one space waiting for their embedding (semantic/index.py):
per note, those planned `first` (the edits a pass saw) before the backlog,
and the backlog from a window of its next fragments, longest first.
Only the space's writer thread uses it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from notarium_search.types import Fragment

# The backlog (fragments not planned `first`) is embedded from a window of its
# next fragments, longest first, so that the fragments of one `embed_pending`
# call, which the embedder batches together padded to the longest, are of
# similar length. Taken in plan order, 64-fragment calls ran 4.1 % more tokens
# than the fragments hold (6.3 % more attention); sorted by characters in
# windows of 1,024 it is 1.3 % (2.1 %), and 2,048 gains only 0.1 % more
# (the 22,467 fragments of the 10,000-note benchmark, e5-small's tokenizer).
# Timed on 2 cores (load 3.5-6), the same 2,048 fragments in 64-fragment
# calls alternating call by call: 4.4 % and 11.1 % faster than in plan order
# (two samples; the sessions run 3.5 % fewer batches and 4 % less attention).
# The window only orders what is taken: edits still go first, and a fragment
# re-planned or dropped meanwhile is taken as it is now, or not at all.
LENGTH_WINDOW_FRAGMENTS = 1_024


class PendingFragments:
    def __init__(self) -> None:
        # note id → {fragment id → fragment to embed}: planning one note must not
        # scan every pending fragment of the space (that made a 10k-note plan quadratic).
        self._by_note: dict[str, dict[str, Fragment]] = {}
        self._count = 0
        # Notes whose fragments go before the others: edits seen by a pass wait
        # neither for a long build's backlog nor for the plan of every note.
        self._first: dict[str, None] = {}
        self._window: list[Fragment] = []  # of the backlog, shortest first (taken from the end)

    def __len__(self) -> int:
        """Fragments waiting."""
        return self._count

    def notes(self) -> list[str]:
        return list(self._by_note)

    @property
    def has_first(self) -> bool:
        """Whether fragments planned `first` wait."""
        return bool(self._first)

    def set(self, note_id: str, fragments: dict[str, Fragment], first: bool = False) -> None:
        """The note's fragments to embed now (none: it leaves both queues);
        `first`: before every fragment planned without it."""
        self._count -= len(self._by_note.pop(note_id, {}))
        if fragments:
            self._by_note[note_id] = fragments
            self._count += len(fragments)
            if first:
                self._first[note_id] = None
        else:
            self._first.pop(note_id, None)

    def take(self, budget: int) -> list[Fragment]:
        """Up to `budget` pending fragments: those planned `first`, in plan
        order, then the backlog's from the length window (longest first)."""
        taken = {f.id: f for f in itertools.islice(self._first_fragments(), budget)}
        while len(taken) < budget:
            if not self._window:
                backlog = (f for f in self._backlog_fragments() if f.id not in taken)
                self._window = sorted(
                    itertools.islice(backlog, LENGTH_WINDOW_FRAGMENTS), key=lambda f: len(f.embed_text)
                )
                if not self._window:
                    break
            candidate = self._window.pop()
            fragment = self._by_note.get(candidate.note_id, {}).get(candidate.id)
            if fragment is not None:  # still wanted, in its current version
                taken.setdefault(fragment.id, fragment)
        return list(taken.values())

    def done(self, batch: Sequence[Fragment]) -> None:
        """These fragments are embedded: a note whose last one they are leaves both queues."""
        for fragment in batch:
            fragments = self._by_note.get(fragment.note_id, {})
            if fragments.pop(fragment.id, None) is not None:
                self._count -= 1
            if not fragments:
                self.set(fragment.note_id, {})

    def _first_fragments(self) -> Iterator[Fragment]:
        for note_id in self._first:
            yield from self._by_note[note_id].values()

    def _backlog_fragments(self) -> Iterator[Fragment]:
        for note_id, fragments in self._by_note.items():
            if note_id not in self._first:
                yield from fragments.values()
