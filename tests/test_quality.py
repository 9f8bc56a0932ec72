"""Retrieval quality on the shared judged collections, through the real search path.

The collections live outside the repository (`../shared/eval`, or
`NOTARIUM_EVAL_DIR`). Locally they may be absent (the test skips); in CI
(`CI=true`) their absence is a failure, never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.eval_collection import (
    SPACE,
    build,
    build_vectors,
    evaluate,
    hybrid_ranker,
    lexical_ranker,
    load_embedder_from,
    load_judgments,
    score,
    semantic_ranker,
)
from notarium_search.settings import RankingConfig
from tests.conftest import models_dir

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
@pytest.mark.parametrize(("name", "language", "minimum"), [("piaf-fr", "fr", 0.80), ("cranfield", "en", 0.37)])
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


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~1 min unloaded (embedding the collection): ten times that fits with room
@pytest.mark.parametrize(("name", "language"), [("piaf-fr", "fr"), ("cranfield", "en")])
def test_hybrid_is_at_least_the_best_single_channel(tmp_path: Path, name: str, language: str):
    """The real e5 pack, the real vector index: fusion must not lose to either
    channel alone (docs/ranking.md has the figures on every query)."""
    path = collection(name)
    model = models_dir() / "multilingual-e5-small-int8"
    service, _ = build(path, tmp_path, language, RankingConfig(), vector_search=True)
    try:
        embedder = load_embedder_from(model, service.settings)
        build_vectors(service, embedder)
        queries, qrels = load_judgments(path)
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
