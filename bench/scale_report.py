"""What `bench/scale.py` reports: the embedding model's own ceiling on this
machine, the targets of the 50,000-note space, the comparison table with
ratios, and the PNG plots."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from notarium_search.semantic.embedding import Embedder

CEILING_BATCHES = (1, 4, 16)  # the raw model is timed at each; the best is its ceiling
TARGET_SIZE = "50000"
# (path in a size's results, target, True when the value must be at least the target)
TARGETS: dict[str, tuple[tuple[str, ...], float, bool]] = {
    "lexical HTTP p50 ms (1 client)": (("http", "lexical", "single", "p50_ms"), 5.0, False),
    "lexical HTTP p99 ms (1 client)": (("http", "lexical", "single", "p99_ms"), 25.0, False),
    "lexical HTTP q/s (16 clients)": (("http", "lexical", "clients", "16", "queries_per_second"), 400.0, True),
    "hybrid HTTP p50 ms (1 client)": (("http", "hybrid", "single", "p50_ms"), 35.0, False),
    "lexical index notes/s": (("lexical", "index", "notes_per_second"), 1_500.0, True),
    "semantic index fragments/s": (("embedding", "fragments_per_second"), 40.0, True),
    "edit → lexical ms": (("http", "incremental", "lexical_visible_ms"), 1_000.0, False),
    "edit → semantic ms": (("http", "incremental", "semantic_visible_ms"), 3_000.0, False),
    "server peak RSS MiB (hybrid+graph, loaded)": (
        ("http", "hybrid_graph", "server_memory_after_load", "peak_rss_mb"),
        1_000 / 1.048576,  # 1 GB
        False,
    ),
    "cold start → first lexical answer s": (("http", "lexical", "cold_start_first_answer_s"), 3.0, False),
    "in-process lexical vs FTS5 speed-up (p50)": (("ratios", "fts5_over_lexical_p50"), 5.0, True),
}


# -- the model's ceiling -----------------------------------------------------------


def model_ceiling(model_dir: Path, embedder: Embedder, texts: Sequence[str]) -> dict[str, Any]:
    """The model alone (onnxruntime on pre-tokenised, length-sorted batches,
    nothing else timed) against our embedder on the same fragment texts: how
    close the pipeline comes to what the model can do on this CPU."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    config = embedder.config
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(config.max_tokens)
    ids = sorted((e.ids for e in tokenizer.encode_batch([config.passage_prefix + t for t in texts])), key=len)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 0
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    raw = {str(b): len(ids) / _time_raw(session, inputs, ids, b) for b in CEILING_BATCHES}
    started = time.perf_counter()
    embedder.embed_passages(list(texts))
    ours = len(texts) / (time.perf_counter() - started)
    best = max(raw.values())
    return {
        "fragments": len(texts),
        "mean_tokens": round(sum(map(len, ids)) / len(ids), 1),
        "raw_fragments_per_second_by_batch": {b: round(v, 2) for b, v in raw.items()},
        "raw_fragments_per_second": round(best, 2),
        "embedder_fragments_per_second": round(ours, 2),
        "embedder_share_of_raw": round(ours / best, 3),
    }


def _time_raw(session: Any, inputs: set[str], ids: list[list[int]], batch: int) -> float:
    elapsed = 0.0
    for start in range(0, len(ids), batch):
        rows = ids[start : start + batch]
        width = max(map(len, rows))
        matrix = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(matrix)
        for i, row in enumerate(rows):
            matrix[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": matrix, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(matrix)
        started = time.perf_counter()
        session.run(None, feed)
        elapsed += time.perf_counter() - started
    return elapsed


# -- targets and ratios ---------------------------------------------------------


def add_ratios(size: dict[str, Any]) -> None:
    """Side-by-side ratios of one size (>1: ours is faster / smaller)."""
    lexical, fts5, flat = size["lexical"], size["fts5"], size["flat_scan"]
    size["ratios"] = {
        "fts5_over_lexical_p50": _ratio(fts5["search"]["p50_ms"], lexical["search"]["p50_ms"]),
        "fts5_over_lexical_p99": _ratio(fts5["search"]["p99_ms"], lexical["search"]["p99_ms"]),
        "lexical_over_fts5_index_rate": _ratio(lexical["index"]["notes_per_second"], fts5["index"]["notes_per_s"]),
        "flat_over_usearch_p50": _ratio(flat["latency"]["exact"]["p50_ms"], flat["latency"]["usearch"]["p50_ms"]),
    }


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, 2)


def check_targets(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The issue's targets, on the 50,000-note space (or the largest measured)."""
    sizes = results["sizes"]
    key = TARGET_SIZE if TARGET_SIZE in sizes else max(sizes, key=int)
    checked = {}
    for name, (path, target, at_least) in TARGETS.items():
        value = _dig(sizes[key], path)
        met = value is not None and (value >= target if at_least else value <= target)
        checked[name] = {"size": int(key), "value": value, "target": round(target, 1), "met": met}
    return checked


def _dig(tree: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


# -- table -------------------------------------------------------------------------

ROWS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("lexical index, notes/s", ("lexical", "index", "notes_per_second"), "{:,.0f}"),
    ("semantic index, fragments/s", ("embedding", "fragments_per_second"), "{:.1f}"),
    ("fragments", ("embedding", "vectors"), "{:,}"),
    ("index on disk, MiB", ("disk", "total_bytes"), "mib"),
    ("in-process lexical p50 / p99 ms", ("lexical", "search"), "p50p99"),
    ("in-process hybrid p50 / p99 ms", ("hybrid",), "p50p99"),
    ("in-process hybrid+graph p50 / p99 ms", ("hybrid_graph",), "p50p99"),
    ("in-process feed p50 / p99 ms", ("lexical", "feed", "query"), "p50p99"),
    ("HTTP lexical p50 / p99 ms", ("http", "lexical", "single"), "p50p99"),
    ("HTTP hybrid p50 / p99 ms", ("http", "hybrid", "single"), "p50p99"),
    ("HTTP hybrid+graph p50 / p99 ms", ("http", "hybrid_graph", "single"), "p50p99"),
    ("HTTP feed p50 / p99 ms", ("http", "lexical", "feed"), "p50p99"),
    ("HTTP lexical q/s at 1 / 4 / 16 clients", ("http", "lexical", "clients"), "qps"),
    ("HTTP hybrid q/s at 1 / 4 / 16 clients", ("http", "hybrid", "clients"), "qps"),
    ("HTTP hybrid+graph q/s at 1 / 4 / 16", ("http", "hybrid_graph", "clients"), "qps"),
    ("edit → lexical / semantic, ms", ("http", "incremental"), "edit"),
    ("cold start → lexical answer, s", ("http", "lexical", "cold_start_first_answer_s"), "{:.2f}"),
    ("cold start → semantic ready, s", ("http", "hybrid", "ready_s"), "{:.2f}"),
    ("RSS idle / loaded, lexical, MiB", ("http", "lexical"), "rss"),
    ("RSS idle / loaded, hybrid+graph, MiB", ("http", "hybrid_graph"), "rss"),
    ("FTS5 index, notes/s", ("fts5", "index", "notes_per_s"), "{:,.0f}"),
    ("FTS5 in-process p50 / p99 ms", ("fts5", "search"), "p50p99"),
    ("FTS5 p50 ÷ ours (×)", ("ratios", "fts5_over_lexical_p50"), "{:.1f}"),
    ("exact scan p50 / p99 ms", ("flat_scan", "latency", "exact"), "p50p99"),
    ("usearch p50 / p99 ms", ("flat_scan", "latency", "usearch"), "p50p99"),
    ("usearch recall@10 vs exact (mean)", ("flat_scan", "recall_at_k", "mean"), "{:.4f}"),
    ("usearch recall@10 vs exact (worst query)", ("flat_scan", "recall_at_k", "min"), "{:.2f}"),
    ("vectors in memory: exact / usearch, MiB", ("flat_scan", "memory"), "vecmem"),
    ("exact scan ÷ usearch p50 (×)", ("ratios", "flat_over_usearch_p50"), "{:.1f}"),
)


def table(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    labels = [label for label, _, _ in ROWS]
    width = max(map(len, labels))
    lines = [f"{'notes':<{width}}  " + "  ".join(f"{int(k):>20,}" for k in sizes)]
    for label, path, shape in ROWS:
        cells = [_cell(_dig(size, path), shape) for size in sizes.values()]
        lines.append(f"{label:<{width}}  " + "  ".join(f"{c:>20}" for c in cells))
    lines.append("")
    for name, quality in results.get("quality", {}).items():
        lines.append(f"nDCG@10 on {name}: {_quality(quality)}")
    ceiling = results.get("model_ceiling")
    if ceiling:
        lines.append(
            f"model ceiling here: {ceiling['raw_fragments_per_second']} fragments/s raw onnxruntime, "
            f"{ceiling['embedder_fragments_per_second']} through our embedder "
            f"({ceiling['mean_tokens']} tokens per fragment on average)"
        )
    lines.append("targets:")
    for name, target in results.get("targets", {}).items():
        verdict = "ok" if target["met"] else "MISSED"
        lines.append(f"  {name:<44} {target['value']} vs {target['target']}  {verdict}")
    return "\n".join(lines)


def _cell(value: Any, shape: str) -> str:
    if value is None:
        return "—"
    if shape == "p50p99":
        return f"{value['p50_ms']:.2f} / {value['p99_ms']:.2f}" if value.get("count") else "—"
    if shape == "qps":
        return " / ".join(f"{value[n]['queries_per_second']:,.0f}" for n in ("1", "4", "16") if n in value)
    if shape == "edit":
        return f"{value['lexical_visible_ms']} / {value['semantic_visible_ms']}"
    if shape == "rss":
        return f"{value['server_memory_idle']['rss_mb']:.0f} / {value['server_memory_after_load']['peak_rss_mb']:.0f}"
    if shape == "vecmem":
        return f"{value['exact_matrix_bytes'] / 2**20:.0f} / {value['usearch_memory_bytes'] / 2**20:.0f}"
    if shape == "mib":
        return f"{value / 2**20:,.1f}"
    return str(shape.format(value))


def _quality(quality: dict[str, Any]) -> str:
    ours, fts5 = quality["tantivy"], quality["fts5"]
    return (
        f"Tantivy {ours['ndcg@10']:.3f}, FTS5 {fts5['ndcg@10']:.3f}; full-depth query p50"
        f" {ours['latency']['p50_ms']:.2f} vs {fts5['latency']['p50_ms']:.2f} ms"
    )


# -- plots ---------------------------------------------------------------------------


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    """Latency against vault size, and throughput against clients (largest size)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    counts = [int(k) for k in sizes]
    written = []
    figure, axis = plt.subplots(figsize=(7, 4.5))
    series = {
        "lexical (HTTP)": ("http", "lexical", "single", "p50_ms"),
        "hybrid (HTTP)": ("http", "hybrid", "single", "p50_ms"),
        "hybrid + graph (HTTP)": ("http", "hybrid_graph", "single", "p50_ms"),
        "feed (HTTP)": ("http", "lexical", "feed", "p50_ms"),
        "SQLite FTS5 (in-process)": ("fts5", "search", "p50_ms"),
        "lexical (in-process)": ("lexical", "search", "p50_ms"),
    }
    for label, path in series.items():
        axis.plot(counts, [_dig(sizes[str(n)], path) for n in counts], marker="o", label=label)
    axis.set(xscale="log", yscale="log", xlabel="notes in the space", ylabel="p50 latency (ms)")
    axis.set_title("Query latency against vault size")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    written.append(_save(figure, out / "latency-vs-size.png"))
    largest = str(max(counts))
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for mode, label in (("lexical", "lexical"), ("hybrid", "hybrid"), ("hybrid_graph", "hybrid + graph")):
        clients = _dig(sizes[largest], ("http", mode, "clients")) or {}
        xs = sorted(int(n) for n in clients)
        axis.plot(xs, [clients[str(n)]["queries_per_second"] for n in xs], marker="o", label=label)
    axis.set(xscale="log", xlabel="concurrent clients", ylabel="queries per second")
    axis.set_xticks([1, 4, 16], labels=["1", "4", "16"])
    axis.set_title(f"HTTP throughput against clients ({int(largest):,} notes)")
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    written.append(_save(figure, out / "throughput-vs-clients.png"))
    return written


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(figure)  # pyplot keeps every figure it made until closed
    return path
