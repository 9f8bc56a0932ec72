"""The per-space calibration of the relevance floor (docs/relevance.md).

The model's margin (semantic/calibration.py) was measured on two collections,
French Wikipedia and aerodynamics abstracts. It does not transfer: on a
dictionary of scientific terms, a made-up word cut into sub-word pieces lands
near genus, drug and compound names, and its best note scores above unrelated
text by more than the margin (`pifevonimp` → a methylphenidate paper). So
each space measures, when its vectors are built, how far above unrelated
text *noise* gets against its own fragments: probe queries of made-up words,
half of them spliced from pieces of the space's own words (what makes a
made-up word land near real ones). Their excess over unrelated text (best
fragment − mean similarity to the reference passages, as for a query) is
kept with the vectors (the manifest), and the floor of every query is raised
to a high share of it when the space's noise reaches above the model's
margin. Queries pay nothing: the probes are embedded once per calibration.

Pure and deterministic (a fixed seed, the space's words in a fixed order): no
I/O, no model. semantic/index.py runs the probes; semantic/channel.py decides when.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

import msgspec

CALIBRATION_VERSION = 1
PROBES = 48  # probe queries per calibration (~1 s of e5-small on 2 cores, then 48 searches)
SEED = 1729
# The space's margin: the excess that 1 probe in 20 reaches (QUANTILE) plus
# PAD, where that is above the model's margin. Measured with e5-small
# (bench/heldout.py, bench/noanswer.py; docs/relevance.md): the probes' 95th
# percentile is 0.052 on piaf-fr (so its margin stays the model's 0.07), 0.069
# on cranfield (→ 0.079, below the lowest judged question's best relevant note,
# 0.082), 0.080 on a computing and a scientific dictionary (→ 0.090: their
# made-up words answered with nothing 70 → 95 % and 78 → 95 %, everyday
# questions' notes found by meaning alone 0.87 → 0.13 and 0.67 → 0.10 per top
# 10). PAD 0.005 left those two at 95 % by the semantic channel alone, before
# the lexical channel's own stray answers.
QUANTILE = 0.95
PAD = 0.01
# A space whose vector count has moved by this share since its calibration is
# calibrated again when the writer is next idle: geometric, so a space grown
# note by note is calibrated O(log n) times.
REFRESH_SHARE = 0.25
MIN_WORD = 6  # letters: a source word for spliced probes
SAMPLE_NOTES = 48  # notes whose words feed the spliced probes
_WORD = re.compile(r"[^\W\d_]+")
_ONSETS = ("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "w", "z", "ch", "gl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ie", "eu", "au")
_CODAS = ("", "", "", "l", "n", "r", "s", "t", "x", "nd", "rk")


class Calibration(msgspec.Struct, frozen=True):
    """What noise scores against one space, kept in its vector manifest."""

    version: int
    vectors: int  # the space's vector count when measured
    excess: tuple[float, ...]  # each probe's best fragment minus its unrelated score, ascending

    def margin(self, quantile: float = QUANTILE, pad: float = PAD) -> float:
        """The margin this space's noise asks for: a high quantile of the probes' excess."""
        if not self.excess:
            return 0.0
        at = min(len(self.excess) - 1, max(0, round(quantile * (len(self.excess) - 1))))
        return self.excess[at] + pad

    def stale(self, vectors: int) -> bool:
        """Whether the space has changed enough since (or the rule has) to measure again."""
        if self.version != CALIBRATION_VERSION:
            return True
        return abs(vectors - self.vectors) > REFRESH_SHARE * max(self.vectors, 1)


def source_words(texts: Iterable[str], limit: int = 400) -> list[str]:
    """Distinct lowercase words of MIN_WORD letters or more, in order of appearance."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in _WORD.findall(text.lower()):
            if len(word) >= MIN_WORD:
                seen.setdefault(word, None)
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)


def _made_up(rng: random.Random) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.choice((2, 3, 3, 4)))) + rng.choice(
        _CODAS
    )


def _spliced(rng: random.Random, words: Sequence[str]) -> str:
    """The head of one of the space's words joined to the tail of another:
    sub-word pieces of its own vocabulary, in an order no note has."""
    first, second = rng.choice(words), rng.choice(words)
    return first[: rng.randint(2, max(2, len(first) // 2))] + second[rng.randint(len(second) // 2, len(second) - 2) :]


def probe_queries(words: Sequence[str], count: int = PROBES, seed: int = SEED) -> list[str]:
    """`count` queries of 1-3 made-up words none of which is in `words`: half
    from syllables, half spliced from `words` (all from syllables without them)."""
    rng = random.Random(seed)  # noqa: S311 - probes, not secrets: the same every time
    known = set(words)
    queries = []
    for number in range(count):
        splice = bool(words) and number % 2 == 1
        size = (1, 1, 2, 3)[number % 4 if not splice else (number // 2) % 4]
        parts: list[str] = []
        while len(parts) < size:
            word = _spliced(rng, words) if splice else _made_up(rng)
            if word not in known and len(word) >= 4:
                parts.append(word)
        queries.append(" ".join(parts))
    return queries


def measured(vectors: int, excess: Iterable[float]) -> Calibration:
    return Calibration(CALIBRATION_VERSION, vectors, tuple(sorted(round(e, 4) for e in excess)))
