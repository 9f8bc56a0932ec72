"""The benchmarks still run end to end (their timings are not checked here)."""

from __future__ import annotations

import pytest

from bench import load_while_indexing, perf_lexical
from tests.test_quality import collection


@pytest.mark.slow
def test_perf_lexical_smoke(tmp_path):
    eval_dir = collection("piaf-fr").parent
    results = perf_lexical.main(
        ["--notes", "500", "--quick", "--eval-dir", str(eval_dir), "--work", str(tmp_path / "work")]
    )
    assert results["index"]["indexed_docs"] == 500
    assert results["index"]["noop_reconcile_indexed"] == 0
    assert results["search"]["count"] > 0
    assert results["http"]["single"]["non_200"] == 0
    assert results["http"]["concurrent"]["non_200"] == 0
    assert results["http"]["server_memory"]["peak_rss_mb"] > 0


@pytest.mark.slow
def test_load_while_indexing_smoke():
    eval_dir = collection("piaf-fr").parent
    results = load_while_indexing.main(
        ["--notes", "300", "--seconds", "4", "--clients", "4", "--reindex-every", "1.5", "--eval-dir", str(eval_dir)]
    )
    assert results["requests"] > 0
    assert results["errors"] == {}  # not one 5xx, transport failure or other status
    assert results["stale_hits"] == 0
    assert results["reindex_requests"].get("202", 0) >= 1
    assert results["edits"] > 0
