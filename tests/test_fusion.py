"""Reciprocal Rank Fusion: a pure function."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from notarium_search.fusion import Fused, rrf
from notarium_search.settings import FusionConfig

RRF_K = FusionConfig().k


def fuse(rankings: Mapping[str, Sequence[str]], **options: Any) -> list[Fused]:
    """rrf with the default [fusion] k."""
    return rrf(rankings, RRF_K, **options)


def test_scores_and_trace():
    fused = fuse({"lexical": ["a", "b", "c"], "semantic": ["b", "d"]})
    by_id = {f.note_id: f for f in fused}
    assert by_id["b"].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert by_id["b"].trace["lexical"].rank == 2
    assert by_id["b"].trace["semantic"].rank == 1
    for f in fused:
        assert f.score == pytest.approx(sum(c.amount for c in f.trace.values()))
    assert fused[0].note_id == "b"  # found by both


def test_weights_and_missing_channels():
    fused = fuse({"lexical": ["a"], "semantic": ["b"]}, weights={"semantic": 2.0})
    assert [f.note_id for f in fused] == ["b", "a"]
    assert fuse({}) == []
    assert [f.note_id for f in fuse({"lexical": ["a", "b"], "semantic": []})] == ["a", "b"]


def test_ties_are_deterministic():
    fused = fuse({"lexical": ["x", "y"], "semantic": ["y", "x"]})
    assert fused[0].score == pytest.approx(fused[1].score)
    assert [f.note_id for f in fused] == ["x", "y"]  # same best rank: smaller id first
    assert [f.note_id for f in fuse({"semantic": ["y", "x"], "lexical": ["x", "y"]})] == ["x", "y"]


def test_duplicates_in_a_channel_count_once():
    (only,) = fuse({"lexical": ["a", "a"]})
    assert only.trace["lexical"].rank == 1


def test_score_floor_one_is_plain_rrf():
    rankings = {"lexical": ["a", "b", "c"], "semantic": ["c", "a"]}
    scores = {"lexical": [9.0, 2.0, 1.0], "semantic": [0.9, 0.1]}
    plain = fuse(rankings)
    same = fuse(rankings, scores=scores, score_floor=1.0)
    assert [(f.note_id, f.score) for f in plain] == [(f.note_id, f.score) for f in same]


def test_scores_modulate_contributions_within_a_channel():
    # b is a close second lexically, c far behind: with scores, c loses more of its rank contribution.
    rankings = {"lexical": ["a", "b", "c"]}
    scores = {"lexical": [10.0, 9.5, 1.0]}
    fused = {f.note_id: f for f in fuse(rankings, scores=scores, score_floor=0.2)}
    assert fused["a"].trace["lexical"].modulation == pytest.approx(1.0)
    assert fused["c"].trace["lexical"].modulation == pytest.approx(0.2)
    assert fused["b"].trace["lexical"].modulation == pytest.approx(0.2 + 0.8 * 8.5 / 9.0)
    for f in fused.values():
        assert f.score == pytest.approx(sum(c.amount for c in f.trace.values()))
        assert f.trace["lexical"].amount == pytest.approx(
            f.trace["lexical"].modulation / (RRF_K + f.trace["lexical"].rank)
        )


def test_a_confident_channel_outweighs_a_flat_one():
    # Lexical is sure of "x" (a wide score gap), semantic barely prefers "y" over "x"
    # (both far above "z"): x wins. Rank-only RRF ties them (then the id decides).
    rankings = {"lexical": ["x", "y", "z"], "semantic": ["y", "x", "z"]}
    scores = {"lexical": [12.0, 1.5, 1.0], "semantic": [0.81, 0.80, 0.40]}
    plain = fuse(rankings)
    assert plain[0].score == pytest.approx(plain[1].score)
    fused = fuse(rankings, scores=scores, score_floor=0.2)
    assert [f.note_id for f in fused][:2] == ["x", "y"]
    assert fused[0].score > fused[1].score * 1.1
    # Equal scores in a channel carry no information: that channel stays rank-only.
    flat = fuse({"lexical": ["p", "q"]}, scores={"lexical": [3.0, 3.0]}, score_floor=0.2)
    assert [c.trace["lexical"].modulation for c in flat] == [1.0, 1.0]


def test_scores_must_pair_with_rankings():
    with pytest.raises(ValueError, match="pair"):
        fuse({"lexical": ["a", "b"]}, scores={"lexical": [1.0]}, score_floor=0.5)
