"""The language detector's scores walked for all bytes at once
(notes/feature_walk.py) are py3langid's own, to the bit."""

from __future__ import annotations

import random

import numpy as np
import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from notarium_search.notes import feature_walk, language

PARAGRAPHS = (
    "Le Conseil d'État a rendu son avis sur le projet de loi relatif à l'énergie, "
    "après que les députés eurent adopté l'amendement en première lecture.",
    "The boundary layer thickens downstream of the leading edge, and transition to "
    "turbulence occurs earlier when the pressure gradient is adverse.",
    "ÉTÉ CHAUD À PARIS : LES FONTAINES SONT OUVERTES JUSQU'À MINUIT",
    "Die Bundesregierung hat am Mittwoch beschlossen, die Förderung für Wärmepumpen zu erhöhen.",
    "Москва — столица России, крупнейший по численности населения город страны.",
    "東京都は日本の首都であり、世界最大級の都市圏を形成している。",
    "def parse(text):\n    return [line.strip() for line in text.splitlines() if line]\n",
    "qu'on l'ait vu ou non, c'est-à-dire — « peut-être » — l’œuvre d’Œdipe",
    "#tag [[Note cible|alias]] **gras** _italique_ `code` https://example.org/a?b=c",
)
ALPHABETS = (
    (0x20, 0x7F),  # ASCII
    (0xA0, 0x17F),  # Latin-1 and Latin Extended-A: French, German, Polish letters
    (0x370, 0x3FF),  # Greek
    (0x400, 0x4FF),  # Cyrillic
    (0x600, 0x6FF),  # Arabic
    (0x4E00, 0x4FFF),  # CJK
    (0x1F300, 0x1F5FF),  # emoji: four UTF-8 bytes each
)


def texts() -> list[str]:
    """Real sentences whole, cut at every length up to past the window, and
    in pieces; random strings of mixed scripts of every length up to 300."""
    found = list(PARAGRAPHS)
    for paragraph in PARAGRAPHS:
        found += [paragraph[:size] for size in range(2 * feature_walk.WINDOW_BYTES)]
        found += [paragraph[start : start + 40] for start in range(0, len(paragraph), 7)]
    found.append(" ".join(PARAGRAPHS))
    rng = random.Random(20261207)
    for size in range(301):
        low, high = rng.choice(ALPHABETS)
        mixed = [chr(rng.randrange(*rng.choice(ALPHABETS))) for _ in range(size // 3)]
        found.append("".join(chr(rng.randrange(low, high)) for _ in range(size)))
        found.append("".join(chr(rng.randrange(*rng.choice(ALPHABETS))) for _ in range(size)))
        found.append("".join(mixed) + rng.choice(PARAGRAPHS)[: size // 2])
    return found


@pytest.fixture(scope="module")
def detector() -> LanguageIdentifier:
    detector = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    detector.set_languages(["en", "fr"])
    return detector


@pytest.fixture(scope="module")
def automaton(detector: LanguageIdentifier) -> tuple[int, list[bytes]]:
    """The depth of the model's automaton, breadth first from its start
    state (each state stands for a suffix as long as its depth), and the
    bytes that lead to each of its deepest states."""
    moves = np.frombuffer(detector.tk_nextmove, dtype=np.uint32)
    rows = np.asarray(detector._rowbase, dtype=np.intp)
    path: dict[int, bytes] = {0: b""}
    frontier = [0]
    while True:
        following: list[int] = []
        for state in frontier:
            targets = moves[rows[state] : rows[state] + 256]
            for byte in np.flatnonzero(targets != 0):
                target = int(targets[byte])
                if target not in path:
                    path[target] = path[state] + bytes([int(byte)])
                    following.append(target)
        if not following:
            break
        frontier = following
    assert len(path) == len(rows)  # every state reached
    depth = max(len(found) for found in path.values())
    return depth, [found for found in path.values() if len(found) == depth]


def test_the_window_is_as_deep_as_the_model_s_automaton(automaton: tuple[int, list[bytes]]):
    """A model with longer n-grams than WINDOW_BYTES would make the walk miss features."""
    depth, _ = automaton
    assert depth == feature_walk.WINDOW_BYTES


def test_the_walk_s_scores_are_py3langid_s_to_the_bit(detector: LanguageIdentifier, automaton: tuple[int, list[bytes]]):
    walked = feature_walk.raw_scores(detector)
    cases = [detector._encode(text) for text in texts()]
    # The deepest n-grams, alone and in a row: what a shorter window would miss.
    _, deepest = automaton
    cases += deepest[:200] + [b" ".join(deepest[start : start + 40]) for start in range(0, len(deepest), 40)]
    for data in cases:
        expected, got = LanguageIdentifier._raw_score(detector, data), walked(data)
        assert got.dtype == expected.dtype, data
        assert np.array_equal(got, expected), data
    assert len(cases) > 1_000


def test_notes_are_told_apart_by_the_walk_as_by_py3langid(detector: LanguageIdentifier):
    ours = language._identifier(("en", "fr"))
    assert isinstance(ours, feature_walk.WalkingIdentifier)
    for text in texts():
        assert ours.classify(text) == detector.classify(text), text


def test_features_are_counted_in_the_order_they_first_occur():
    """What py3langid's Counter gives: each feature once, where it first
    occurs, with its count (np.unique's, put in that order)."""
    generator = np.random.default_rng(7)
    for size in (1, 2, 3, 17, 300, 2_000):
        for span in (1, 5, 1_000, 100_000):
            found = generator.integers(0, span, size).astype(np.intp)
            features, counts = feature_walk._counted_in_order(found)
            expected: dict[int, int] = {}
            for value in found.tolist():
                expected[value] = expected.get(value, 0) + 1
            assert features.tolist() == list(expected)
            assert counts.tolist() == list(expected.values())
