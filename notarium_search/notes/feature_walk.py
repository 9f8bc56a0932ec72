"""py3langid's scores of a text, its automaton walked over every byte at once.

py3langid finds the byte n-grams of a text it knows by walking an
Aho-Corasick automaton over the text's bytes in a Python loop
(`visit_counts`), then sums each found feature's log-count times its row of
weights. On a note's first 300 characters that loop was ~60 % of the
detector's time and the detector ~13 % of a note's parse, the stage a first
index waits on (docs/benchmarks.md, "The first index's language detection").

The state the automaton is in after a byte depends only on the last
`WINDOW_BYTES` bytes read: a state stands for the longest suffix of the text
read so far that is a prefix of one of its n-grams, and none is longer than
that. So every position's state is found by WINDOW_BYTES steps, each a numpy
gather over all positions at once, instead of one Python step per byte. The
features are then counted in the order they first occur, as py3langid's
`Counter` does, so that the weighted sum adds the same numbers in the same
order: the scores are py3langid's to the bit (tests/notes/test_feature_walk.py
compares them over random and real texts, and checks WINDOW_BYTES against the
model's automaton).

Pure; imported with the detector's model (notes/language.py), never before:
numpy and py3langid cost ~100 ms to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from py3langid.langid import LanguageIdentifier

# The longest n-gram py3langid's model holds, in bytes: the depth of its
# automaton's deepest state (py3langid 0.3 and 0.4's model.plzma).
WINDOW_BYTES = 6

Vector = np.ndarray[tuple[int], np.dtype[np.float32]]
Indices = np.ndarray[tuple[int], np.dtype[np.intp]]
Scores = Callable[[bytes], Vector]


class WalkingIdentifier(LanguageIdentifier):  # type: ignore[misc]
    """py3langid's detector, its scores from `raw_scores` once `walk` is called."""

    __slots__ = ("_scores",)

    def walk(self) -> None:
        """Scores from now on by the walk over all bytes at once, with the
        model as it is now (after `set_languages`, whose columns it keeps)."""
        self._scores = raw_scores(self)

    def _raw_score(self, text: bytes) -> Vector:
        scores: Scores | None = getattr(self, "_scores", None)
        return LanguageIdentifier._raw_score(self, text) if scores is None else scores(text)


def raw_scores(detector: Any) -> Scores:
    """`detector._raw_score` (its classes' naive Bayes scores for a text's
    UTF-8 bytes), computed with the automaton walked for all bytes at once."""
    moves = np.asarray(detector.tk_nextmove)  # a view of py3langid's array, in its own item type
    rows = np.asarray(detector._rowbase, dtype=np.intp)
    outputs = np.asarray(detector.tk_output, dtype=np.intp)
    weights, priors = detector.nb_ptc, detector.nb_pc
    own = LanguageIdentifier._raw_score  # py3langid's own walk, not a subclass's

    def scores(text: bytes) -> Vector:
        data = np.frombuffer(text, dtype=np.uint8)
        size = len(data)
        states = np.zeros(size, dtype=np.intp)
        # Position i's state: the WINDOW_BYTES bytes up to i walked from the
        # start state, the oldest first; the first positions have fewer.
        for back in range(min(WINDOW_BYTES, size) - 1, -1, -1):
            states[back:] = moves[rows[states[back:]] + data[: size - back]]
        found = outputs[states]
        found = found[found >= 0]
        if not len(found):
            empty: Vector = own(detector, text)
            return empty  # py3langid's answer for a text without features
        features, counts = _counted_in_order(found)
        summed: Vector = np.log1p(counts.astype(np.float32)) @ weights[features] + priors
        return summed

    return scores


def _counted_in_order(found: Indices) -> tuple[Indices, Indices]:
    """Each distinct value of `found` in the order it first occurs, with how
    often it occurs: `np.unique`'s values, counts and first places, the
    values then put in order of their first places, in fewer numpy calls
    (np.unique's own steps for every option cost 35 µs a note here, these 21:
    a tenth of the detector's time)."""
    size = len(found)
    by_value = found.argsort(kind="stable")  # stable: each value's run starts at its first place
    ordered = found[by_value]
    starts = np.empty(size, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    run_starts = starts.nonzero()[0]
    counts = np.empty(len(run_starts), dtype=np.intp)
    counts[:-1] = run_starts[1:] - run_starts[:-1]
    counts[-1] = size - run_starts[-1]
    in_order = by_value[run_starts].argsort()
    return ordered[run_starts[in_order]], counts[in_order]
