"""The benchmarks still run end to end (their timings are not checked here)."""

from __future__ import annotations

import pytest

from bench import load_while_indexing, mixed_languages, perf_lexical
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
def test_mixed_languages_smoke(tmp_path):
    """piaf-fr and cranfield in one space set to "auto" (their first 20
    questions and the notes they judge): every configuration scored, and each
    note's detected language right for at least 99 % of each collection (the
    whole collections: docs/ranking.md, "Languages of the notes")."""
    eval_dir = collection("piaf-fr").parent
    results = mixed_languages.main(["--smoke", "--eval-dir", str(eval_dir), "--work", str(tmp_path / "work")])
    for name in ("piaf-fr", "cranfield"):
        assert results["detection"][name]["correct_pct"] >= 99.0, results["detection"][name]
        scores = results["comparison"][name]["lexical"]
        assert {"alone", "auto", "fr", "en"} <= set(scores)


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


# The smallest vault the benchmark takes: 100 notes (232 fragments, one long
# note, links, English notes) still go through every phase, in ~50 s here
# unloaded; the 1,000-note run embedded 2,300 fragments, 15 min at the
# 2.5 fragments/s of a loaded CI machine.
SCALE_SMOKE_NOTES = 100
# The smoke run checks that every phase works, not the query-embedding deadline
# (tests/semantic/test_channel.py does): at the default 300 ms a loaded machine answers
# hybrid queries lexically, and edits never show in the semantic channel.
SMOKE_QUERY_EMBED_TIMEOUT_MS = 60_000


@pytest.mark.slow
@pytest.mark.timeout(900)  # 7 min measured with the whole run held to 10 % of one core
def test_scale_benchmark_smoke(tmp_path):
    """`python -m bench.scale` at 100 notes with the small English pack:
    every phase runs and reports, the plots are written (timings unchecked)."""
    from bench import scale
    from tests.conftest import models_dir

    eval_dir = collection("piaf-fr").parent
    model = models_dir() / "all-minilm-l6-v2-int8"
    out = tmp_path / "out"
    argv = ["--sizes", str(SCALE_SMOKE_NOTES), "--quick", "--model", str(model), "--eval-dir", str(eval_dir)]
    argv += ["--query-embed-timeout-ms", str(SMOKE_QUERY_EMBED_TIMEOUT_MS)]
    results = scale.main([*argv, "--work", str(tmp_path / "work"), "--out", str(out)])
    size = results["sizes"][str(SCALE_SMOKE_NOTES)]
    assert size["corpus"]["long_notes"] >= 1  # the vault still holds a long note with sections
    assert size["lexical"]["index"]["indexed_docs"] == SCALE_SMOKE_NOTES
    assert size["embedding"]["fragments_per_second"] > 0  # the smallest size always embeds from scratch
    assert size["fts5"]["search"]["count"] == size["lexical"]["search"]["count"]
    assert size["flat_scan"]["recall_at_k"]["mean"] >= 0.95
    for mode in ("lexical", "hybrid", "hybrid_graph"):
        http = size["http"][mode]
        assert http["single"]["non_200"] == 0, mode
        assert all(run["non_200"] == 0 for run in http["clients"].values()), mode
        assert http["cold_start_first_answer_s"] > 0
    assert size["http"]["hybrid"]["single"]["degraded"] == {}  # the model answered every query
    assert size["hybrid"]["degraded_answers"] == 0
    edits = size["http"]["incremental"]
    assert edits["lexical_visible_ms"] is not None
    assert edits["semantic_visible_ms"] is not None
    for name in ("piaf-fr", "cranfield"):
        assert 0 < results["quality"][name]["tantivy"]["ndcg@10"] <= 1
    assert set(results["targets"]) == set(scale_report_targets())
    assert (out / "scale-quick.json").is_file()
    assert (out / "latency-vs-size.png").stat().st_size > 0
    assert (out / "throughput-vs-clients.png").stat().st_size > 0


def scale_report_targets() -> list[str]:
    from bench.scale_report import TARGETS

    return list(TARGETS)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_side_by_side_smoke(tmp_path):
    """`python -m bench.side_by_side` on a 100-note vault, this checkout
    against itself with one worker: every row is measured for both trees,
    and the remote-embedding benchmark it runs reports (timings unchecked)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from bench import side_by_side
    from bench.perf_lexical import build_space, load_corpora
    from tests.conftest import models_dir

    eval_dir = collection("piaf-fr").parent
    model = models_dir() / "all-minilm-l6-v2-int8"
    root, vectors = tmp_path / "root", tmp_path / "vectors"
    build_space(root / "s", SCALE_SMOKE_NOTES, load_corpora(eval_dir))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NOTARIUM_")},
        "NOTARIUM_SPACES_ROOT": str(root),
        "NOTARIUM_INDEX_DIR": str(vectors),
        "VECTOR_SEARCH": "1",
        "NOTARIUM_MODEL_DIR": str(model),
    }
    subprocess.run([sys.executable, "-m", "notarium_search", "index", "s"], env=env, check=True, capture_output=True)
    checkout = Path(side_by_side.__file__).resolve().parents[1]
    argv = ["--root", str(root), "--vectors", str(vectors), "--cli-root", str(root), "--model", str(model)]
    argv += ["--tree", f"this={checkout}", "--tree", f"one-worker={checkout},NOTARIUM_WORKERS=1"]
    argv += ["--modes", "lexical,hybrid", "--seconds", "1", "--queries", "20", "--settle", "0.5"]
    argv += ["--build-notes", "10", "--cli-runs", "1", "--remote-passages", "16", "--eval-dir", str(eval_dir)]
    argv += ["--index-runs", "2"]
    report = side_by_side.main([*argv, "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out.json")])
    trees = report["trees"]
    assert set(trees) == {"this", "one-worker"}
    for tree in trees.values():
        for mode in ("lexical", "hybrid"):
            assert tree[mode]["one_client"]["queries"] == 20
            assert tree[mode]["many_clients"]["qps"] > 0
            # The server's CPU a query: a second of 16 clients always costs some.
            assert tree[mode]["many_clients"]["cpu_ms"] > 0
            assert tree[mode]["one_client"]["cpu_ms"] >= 0
            assert tree[mode]["memory_mib"]["idle_rss"] > 0
        assert tree["lexical"]["many_clients_mix"]["qps"] > 0  # perf_lexical's mix, the lexical tier only
        assert tree["lexical"]["many_clients_mix"]["cpu_ms"] > 0
        assert "many_clients_mix" not in tree["hybrid"]
        assert 0 < tree["build"]["share_in_model"] <= 1
        assert tree["build"]["fragments"] > 0
        build = tree["build"]
        assert build["vault_fragments"] > SCALE_SMOKE_NOTES  # the vault's, from the vectors' manifest
        projected = build["vault_fragments"] / build["fragments_per_s"] / 60
        assert build["vault_minutes"] == pytest.approx(projected, abs=0.01)
        assert tree["cli_search_ms"] > 0
        first = tree["first_index"]
        assert len(first["runs_s"]) == 2  # one checkout, indexed twice; its variant shares them
        assert first["seconds"] == pytest.approx(sum(first["runs_s"]) / 2, abs=0.1)
    assert trees["one-worker"]["env"] == {"NOTARIUM_WORKERS": "1"}
    # One checkout: its remote-embedding run once, whose lines are the report alone.
    (lines,) = [lines for lines in report["remote_embedding"].values() if lines]
    assert lines
    assert all(line.startswith("round ") for line in lines)
    assert (tmp_path / "out.json").is_file()


def test_side_by_side_rounds_are_reported_by_their_medians():
    """`--serve-rounds`: each figure of a tree's servings is their median,
    whole numbers stay whole, labels are kept, and every serving is kept."""
    from bench.side_by_side import medians

    rounds: list[dict[str, object]] = [
        {"ready_s": 2.0, "one_client": {"p50_ms": 3.5, "queries": 1000}, "memory_mib": {"idle_rss": 200}},
        {"ready_s": 4.0, "one_client": {"p50_ms": 2.9, "queries": 1000}, "memory_mib": {"idle_rss": 190}},
        {"ready_s": 3.0, "one_client": {"p50_ms": 4.4, "queries": 1000}, "memory_mib": {"idle_rss": 231}},
    ]
    merged = medians(rounds)
    assert merged["ready_s"] == 3.0
    assert merged["one_client"] == {"p50_ms": 3.5, "queries": 1000}
    assert merged["memory_mib"] == {"idle_rss": 200}
    assert merged["rounds"] == rounds
    assert medians(rounds[:1]) == rounds[0]  # one serving: reported as it was
    assert medians(rounds[:2])["one_client"] == {"p50_ms": 3.2, "queries": 1000}


def test_word_table_memory_smoke(capsys: pytest.CaptureFixture[str]):
    from bench import word_table_memory
    from tests.conftest import models_dir

    eval_dir = collection("piaf-fr").parent
    argv = [str(models_dir() / "multilingual-e5-small-int8"), "--rounds", "1", "--queries", "8", "--passages", "4"]
    assert word_table_memory.main([*argv, "--eval-dir", str(eval_dir)]) == 0
    printed = capsys.readouterr().out
    assert "in-graph: load" in printed
    assert "from-file: load" in printed
