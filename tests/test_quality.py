"""Retrieval quality on the shared judged collections, through the real search path.

The collections live outside the repository (`../shared/eval`, or
`NOTARIUM_EVAL_DIR`). Locally they may be absent (the test skips); in CI
(`CI=true`) their absence is a failure, never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.eval_collection import build, evaluate, load_judgments
from notarium_search.settings import RankingConfig

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
