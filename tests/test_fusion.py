"""Reciprocal Rank Fusion: a pure function."""

from __future__ import annotations

import pytest

from notarium_search.fusion import RRF_K, rrf


def test_scores_and_trace():
    fused = rrf({"lexical": ["a", "b", "c"], "semantic": ["b", "d"]})
    by_id = {f.note_id: f for f in fused}
    assert by_id["b"].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert by_id["b"].trace["lexical"].rank == 2
    assert by_id["b"].trace["semantic"].rank == 1
    for f in fused:
        assert f.score == pytest.approx(sum(c.score for c in f.trace.values()))
    assert fused[0].note_id == "b"  # found by both


def test_weights_and_missing_channels():
    fused = rrf({"lexical": ["a"], "semantic": ["b"]}, weights={"semantic": 2.0})
    assert [f.note_id for f in fused] == ["b", "a"]
    assert rrf({}) == []
    assert [f.note_id for f in rrf({"lexical": ["a", "b"], "semantic": []})] == ["a", "b"]


def test_ties_are_deterministic():
    fused = rrf({"lexical": ["x", "y"], "semantic": ["y", "x"]})
    assert fused[0].score == pytest.approx(fused[1].score)
    assert [f.note_id for f in fused] == ["x", "y"]  # same best rank: smaller id first
    assert [f.note_id for f in rrf({"semantic": ["y", "x"], "lexical": ["x", "y"]})] == ["x", "y"]


def test_duplicates_in_a_channel_count_once():
    (only,) = rrf({"lexical": ["a", "a"]})
    assert only.trace["lexical"].rank == 1
