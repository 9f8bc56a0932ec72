"""The graph channel's ranking: the neighbours of a query's seeds, scored by
the seeds' ranks, and why each was found (graph/ranking.py)."""

from __future__ import annotations

import pytest

from notarium_search.fusion import GRAPH_SEEDS
from notarium_search.graph.links import LinkGraph
from notarium_search.graph.ranking import GraphHit, Via, explain
from tests.graph.test_links import K, graph_of, neighbours, note


def _chain() -> LinkGraph:
    # s1 → n1, s1 → shared, s2 → shared, n2 → s2, s1 ↔ mutual, s1 → s2, s3 → n3
    return graph_of(
        note("s1", "S1.md", links=("N1", "Shared", "Mutual", "S2")),
        note("s2", "S2.md", links=("Shared",)),
        note("s3", "S3.md", links=("N3",)),
        note("n1", "N1.md"),
        note("n2", "N2.md", links=("S2",)),
        note("n3", "N3.md"),
        note("shared", "Shared.md"),
        note("mutual", "Mutual.md", links=("S1",)),
        note("far", "Far.md", links=("N1",)),
    )


def test_rank_neighbours_scores_and_vias():
    hits = {hit.note_id: hit for hit in neighbours(_chain(), ["s1", "s2"])}
    r1, r2 = 1 / (K + 1), 1 / (K + 2)
    assert set(hits) == {"n1", "shared", "mutual", "s2", "s1", "n2"}  # "far" is two steps away
    assert hits["shared"].score == pytest.approx(r1 + r2)  # accumulates over seeds
    assert hits["shared"].via == (Via("s1", 1, "linked_from"), Via("s2", 2, "linked_from"))
    assert hits["n1"].score == pytest.approx(r1)
    assert hits["n2"].score == pytest.approx(r2)
    assert hits["n2"].via == (Via("s2", 2, "links_to"),)
    # Both ways between the same pair: listed twice, counted once.
    assert hits["mutual"].score == pytest.approx(r1)
    assert hits["mutual"].via == (Via("s1", 1, "linked_from"), Via("s1", 1, "links_to"))
    # Seeds linked with one another are boosted.
    assert hits["s2"].via == (Via("s1", 1, "linked_from"),)
    assert hits["s1"].via == (Via("s2", 2, "links_to"),)


def test_rank_neighbours_order():
    hits = neighbours(_chain(), ["s1", "s2"])
    assert [hit.note_id for hit in hits] == ["shared", "mutual", "n1", "s2", "n2", "s1"]
    # Same score: the better best seed, then the id.
    assert hits[1].score == hits[2].score == hits[3].score
    assert hits[4].score == hits[5].score
    assert [hit.note_id for hit in neighbours(_chain(), ["s2", "s1"])] == [
        "shared",
        "n2",
        "s1",
        "mutual",
        "n1",
        "s2",
    ]
    for ranked in (hits, neighbours(_chain(), ["s3", "s1"])):
        assert ranked == sorted(ranked, key=lambda h: (-h.score, h.via[0].seed_rank, h.note_id))


def test_rank_neighbours_equal_scores_go_to_the_better_seed_before_the_id():
    graph = graph_of(
        note("top", "Top.md", links=("Zulu",)),
        note("second", "Second.md", links=("Able",)),
        note("tenth", "Tenth.md", links=("Able",)),
        note("zulu", "Zulu.md"),
        note("able", "Able.md"),
    )
    seeds = ["top", "second", *(f"pad{i}" for i in range(7)), "tenth"]
    # k = 2: 1/(2+1) == 1/(2+2) + 1/(2+10) exactly, in floats too.
    hits = neighbours(graph, seeds, k=2)
    assert [(hit.note_id, hit.score) for hit in hits] == [("zulu", 1 / 3), ("able", 1 / 3)]
    assert hits[1].via == (Via("second", 2, "linked_from"), Via("tenth", 10, "linked_from"))


def test_rank_neighbours_weights_by_seed_rank():
    hits = neighbours(_chain(), ["s3", "zz", "s1"], k=0)
    assert hits[0] == GraphHit("n3", 1.0, (Via("s3", 1, "linked_from"),))
    # An unknown seed still takes its rank: s1 is third.
    assert {hit.score for hit in hits[1:]} == {1 / 3}


def test_rank_neighbours_honours_max_seeds_and_empty_input():
    graph = _chain()
    assert neighbours(graph, []) == []
    assert neighbours(graph, ["unknown"]) == []
    assert neighbours(graph, ["s1"], max_seeds=0) == []
    assert {hit.note_id for hit in neighbours(graph, ["s3", "s1"], max_seeds=1)} == {"n3"}
    many = ["s3"] * 3 + [f"pad{i}" for i in range(GRAPH_SEEDS)] + ["s1"]
    # Duplicate seeds count once, and s1 falls beyond GRAPH_SEEDS.
    (only,) = neighbours(graph, many)
    assert only.via == (Via("s3", 1, "linked_from"),)
    assert only.score == pytest.approx(1 / (K + 1))


def test_explain():
    hit = GraphHit(
        "x",
        0.1,
        (
            Via("a", 1, "linked_from"),
            Via("b", 2, "links_to"),
            Via("g", 3, "linked_from"),
            Via("a", 1, "linked_from"),
        ),
    )
    titles = {"a": "Alpha", "b": "Beta", "g": "Gamma"}
    assert explain(hit, titles) == "linked from: Alpha, Gamma; links to: Beta"
    assert explain(GraphHit("x", 0.1, (Via("b", 1, "links_to"),)), titles) == "links to: Beta"
    assert explain(GraphHit("x", 0.1, (Via("a", 1, "linked_from"),)), titles) == "linked from: Alpha"
    assert explain(GraphHit("x", 0.1, (Via("q", 1, "linked_from"),)), titles) == "linked from: q"  # untitled: its id
