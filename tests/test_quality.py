"""Retrieval quality on the shared judged collections, through the real search path.

The collections live outside the repository (`../shared/eval`, or
`NOTARIUM_EVAL_DIR`). Locally they may be absent (the test skips); in CI
(`CI=true`) their absence is a failure, never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bench.eval_collection import (
    SPACE,
    build,
    evaluate,
    hybrid_ranker,
    lexical_ranker,
    load_judgments,
    score,
    semantic_ranker,
)
from bench.graph_hubs import run as run_linked_vault
from bench.known_items import eval_collection, exact_names, service_ranker
from bench.known_items import open_service as open_known_items
from bench.noanswer import TOP, load_noanswer, measure, open_service, prepare
from notarium_search.settings import RankingConfig, Settings
from tests.conftest import models_dir

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Embedder

ROOT = Path(__file__).resolve().parents[1]
EVAL_DIR = Path(os.environ.get("NOTARIUM_EVAL_DIR", ROOT.parent / "shared" / "eval"))


def collection(name: str) -> Path:
    path = EVAL_DIR / name
    if not (path / "corpus.jsonl").exists():
        if os.environ.get("CI"):
            pytest.fail(f"evaluation collection missing in CI: {path}")
        pytest.skip(f"evaluation collection not found: {path} (set NOTARIUM_EVAL_DIR)")
    return path


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~20 s unloaded for piaf-fr's 3,835 queries: ten times that fits with room
# piaf-fr measured 0.8250 (0.8144 before the French exact-form and proximity
# boosts: the threshold fails without them), cranfield 0.3892. Tantivy's
# ranking is deterministic: no margin for luck is needed, only for edits.
@pytest.mark.parametrize(("name", "language", "minimum"), [("piaf-fr", "fr", 0.82), ("cranfield", "en", 0.385)])
def test_lexical_ndcg(tmp_path: Path, name: str, language: str, minimum: float):
    path = collection(name)
    service, _ = build(path, tmp_path, language, RankingConfig())
    try:
        queries, qrels = load_judgments(path)
        result = evaluate(service, "eval", queries, qrels)
    finally:
        service.stop()
    assert result["ndcg@10"] >= minimum, result


# piaf-fr's 3,835 questions run three ways take minutes on 2 cores; a fixed
# sample of 1,000 keeps the margin (hybrid − lexical ≈ +0.03 nDCG@10 on all
# of them, docs/ranking.md) far above the sampling noise. cranfield runs whole.
HYBRID_QUERY_SAMPLE = 1000
# Issue 14's acceptance (docs/relevance.md: 98.3 % on both collections and 0.33
# notes measured on 2026-12-02; 96.7 % and 0.27 on another embedding of cranfield).
MIN_NONSENSE_EMPTY_PCT = 95.0
MAX_OUT_OF_DOMAIN_SEMANTIC_ONLY = 0.5
LANGUAGE = {"piaf-fr": "fr", "cranfield": "en"}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Settings, Embedder]]:
    """A collection indexed and embedded with the real e5 pack once for this
    module's tests: the settings to open it in any mode, and the embedder."""
    prepared: dict[str, tuple[Settings, Embedder]] = {}

    def get(name: str) -> tuple[Settings, Embedder]:
        if name not in prepared:
            work = tmp_path_factory.mktemp(name)
            prepared[name] = prepare(
                collection(name), work, LANGUAGE[name], models_dir() / "multilingual-e5-small-int8"
            )
        return prepared[name]

    return get


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~1 min unloaded (embedding the collection): ten times that fits with room
# The hybrid's own floor: measured 0.8779 on this sample of piaf-fr (0.8602 on
# every question) and 0.4122 on cranfield (docs/ranking.md, "Fusion
# re-tuned"). Re-embedding the same fragments moves nDCG@10 by ~0.002 (the
# pack quantises per batch), so the floors sit ~0.007 below: a regression of
# the ranking fails, the embedding's own noise does not.
@pytest.mark.parametrize(("name", "minimum"), [("piaf-fr", 0.87), ("cranfield", 0.405)])
def test_hybrid_is_at_least_the_best_single_channel(
    embedded: Callable[[str], tuple[Settings, Embedder]], name: str, minimum: float
):
    """The real e5 pack, the real vector index: fusion must not lose to either
    channel alone (docs/ranking.md has the figures on every query), nor fall
    below what it measured."""
    settings, embedder = embedded(name)
    service = open_service(settings, embedder, vector_search=True, graph_boost=False)
    try:
        queries, qrels = load_judgments(collection(name))
        queries = dict(sorted(queries.items())[:HYBRID_QUERY_SAMPLE])
        runs = {
            "lexical": score(lexical_ranker(service, SPACE), queries, qrels),
            "semantic": score(semantic_ranker(service, SPACE, embedder), queries, qrels),
            "hybrid": score(hybrid_ranker(service, SPACE), queries, qrels),
        }
    finally:
        service.stop()
    ndcg = {mode: run["ndcg@10"] for mode, run in runs.items()}
    assert runs["hybrid"]["degraded_queries"] == 0, runs
    assert ndcg["hybrid"] >= max(ndcg["lexical"], ndcg["semantic"]), ndcg
    assert ndcg["hybrid"] >= minimum, ndcg


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name", ["piaf-fr", "cranfield"])
def test_queries_nothing_answers_get_nothing(embedded: Callable[[str], tuple[Settings, Embedder]], name: str):
    """VECTOR_SEARCH and GRAPH_BOOST on, the shared no-answer queries: made-up
    words get no result, everyday questions on an aerodynamics corpus get no
    note only the semantic channel found (they matched nothing but similarity
    noise: 0 % and 8.9 notes per top 10 before the relevance floor)."""
    settings, embedder = embedded(name)
    service = open_service(settings, embedder, vector_search=True, graph_boost=True)
    try:
        found = measure(service, load_noanswer(collection(name), EVAL_DIR), TOP)
    finally:
        service.stop()
    assert found["nonsense"]["degraded_queries"] == 0, found
    assert found["nonsense"]["empty_pct"] >= MIN_NONSENSE_EMPTY_PCT, found
    if "out_of_domain" in found:
        assert found["out_of_domain"][f"mean_semantic_only_top{TOP}"] <= MAX_OUT_OF_DOMAIN_SEMANTIC_ONLY, found


# bench/graph_hubs.py, all 3,835 questions (docs/relevance.md): the home note
# is in 1.0 % of the answers with hubs weighed down, 5.6 % with every link
# equal (99.9 % at graph weight 1).
MAX_HOME_NOTE_PCT = 2.5
# The graph measured 0.8246 against 0.8243 for the lexical channel alone; 0.001
# is about one question's worth of nDCG@10 over 3,835, so that a tie ordered
# differently by some later change does not fail this, while the regression it
# is here for (0.8189 at weight 0.25) does; every link equal (0.8240) fails
# on the home note.
LINKED_VAULT_TOLERANCE = 0.001


@pytest.mark.slow
@pytest.mark.timeout(1200)  # ~20 s unloaded (two indexes, 3,835 questions twice): ten times that fits with room
def test_graph_channel_does_not_lose_to_the_lexical_channel_on_a_linked_vault(tmp_path: Path):
    """piaf-fr turned into a linked vault with a home note and maps of content,
    GRAPH_BOOST on: the graph's neighbours must not push answers out (at weight
    0.25 it fell to 0.8189 against 0.8243 for the lexical channel alone once
    French queries gained their exact-form clauses), nor hubs enter the answers.
    No model: the lexical channel and the graph are deterministic."""
    result = run_linked_vault(collection("piaf-fr"), tmp_path, None, alternatives=False)
    graph, lexical = result["graph_hubs_weighed_down"], result["lexical"]
    assert graph["ndcg@10"] >= lexical["ndcg@10"] - LINKED_VAULT_TOLERANCE, result
    assert graph["home_in_top10_pct"] <= MAX_HOME_NOTE_PCT, result


# bench/known_items.py, cranfield: each document's title typed as the query, the
# document ranked first, over the 1,350 titles no other document shares
# (docs/ranking.md, "Known items"). Measured 99.9 % on ee9f45a and cc0c3d1 (1,347; the one
# missed holds "-dash", read as an exclusion) and 99.3 % on bcd5839, before
# known items came first (1,339): the floor fails there. The lexical channel is
# deterministic, so the margin is not for luck: 0.4 point is 5 titles, room for
# a later change that moves a few ties, not for losing the known-item ranking.
MIN_CRANFIELD_TITLE_FIRST_PCT = 99.5


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~30 s unloaded (1,400 queries)
def test_cranfield_titles_find_their_document_first(tmp_path: Path):
    """A known-item floor: a title typed whole finds its document first."""
    collection("cranfield")
    known = eval_collection("cranfield", EVAL_DIR, tmp_path)
    service = open_known_items(known, tmp_path / "index", vector_search=False, graph_boost=False)
    try:
        found = exact_names(known, service_ranker(service))
    finally:
        service.stop()
    assert found["exact_name_first_unique_pct"] >= MIN_CRANFIELD_TITLE_FIRST_PCT, found
