"""Issue 17's table, for several source trees side by side, in one run.

    python -m bench.side_by_side --root ROOT --vectors INDEX --cli-root ROOT10K \\
        --tree before=../before --tree after=. --tree after-1-worker=.,NOTARIUM_WORKERS=1 \\
        --model ../shared/models/multilingual-e5-small-int8 --out docs/benchmarks/side_by_side.json

ROOT holds one space (`s`) of bench/perf_lexical.py's vault (50,000 notes
for the issue's table); INDEX is an index folder of that space whose
vectors were embedded with `--model` (`notarium-search index s` with
VECTOR_SEARCH=1: over an hour at 50,000 notes on 2 cores, so they are made
once and copied); without `--vectors` (and `--model`), only the lexical tier
is measured. A tree is a source checkout put first on PYTHONPATH,
then `,KEY=VALUE` settings of its own. Each tree gets its own lexical index
(built here by that tree: schemas differ between commits; its first index
of ROOT is timed, process start to exit; with `--index-runs N`, N times,
the trees' order reversed at every other round, so that neither always
indexes first, and the median kept) and a copy of the
vectors (their format and fingerprint are the same across the trees
compared; a tree that disagreed would re-embed and never get ready).

For each channel set (lexical; hybrid; hybrid + graph), the trees take
turns serving it (`python -m notarium_search serve`, neither watching nor
polling the files; with `--serve-rounds N`, N turns, the trees' order
reversed every other turn,
and each figure the median of its tree's N servings, every serving's kept
in the JSON: the same tree's one-client p50 was 2.95 ms in one run and
4.53 in another on the 2-vCPU machine of docs/benchmarks.md):
ready, settled, the process tree's memory (sum of RSS, and of PSS); one
keep-alive client for `--queries` searches (p50, p99); `--clients` clients
for `--seconds` (queries/s, and the memory at the end: the peak under
load); for the lexical tier, the clients again for `--seconds` with
bench/perf_lexical.py's mix (French and English questions and
as-you-type prefixes: issue 34's "bench's mix"). Each of these loads also
reports the server's CPU a query (`cpu_ms`: the process tree's, from
/proc), which a shared machine's drift moves less than the clients' timings.
With the model, the server is started again between the two: the clients
ask the one client's questions again, which a tree that keeps its query
embeddings (issue 34) would answer from them. Answers whose `degraded` is
not empty are counted (a query embedding past its deadline is answered
lexically). Then, per tree: a semantic build
of `--build-notes` notes (the first notes of ROOT), its fragments/s and the
share of its time inside the embedder's `embed_passages` (timed around the
method, from the first call to the end of the command), and the vault's
first embedding projected from them (its fragments at that rate); `notarium-search
search` from process start to printed results on CLI-ROOT (a 10,000-note
vault; median of `--cli-runs`, trees alternated). Last, for trees that have
it, bench/remote_embedding.py: fragments/s through an embedding server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cli_startup import timed_search
from bench.http_tail import questions, wait_ready
from bench.perf_lexical import FULL, build_queries, load_corpora
from bench.workers import Load, load, percentile, tree_cpu_seconds, tree_memory

SPACE = "s"
MODES = {"lexical": {}, "hybrid": {"VECTOR_SEARCH": "1"}, "hybrid + graph": {"VECTOR_SEARCH": "1", "GRAPH_BOOST": "1"}}

# Timed around the embedder's method in the tree's own process: the same
# measure for a tree that has bench/embedding_build.py's counters and one that
# has not. The first call is the first model call of the build.
_BUILD_DRIVER = """
import json, sys, time
from notarium_search.semantic import embedding
timed = {"model_seconds": 0.0, "first": None, "fragments": 0}
original = embedding.OnnxEmbedder.embed_passages
def embed_passages(self, texts):
    started = time.perf_counter()
    if timed["first"] is None:
        timed["first"] = started
    try:
        return original(self, texts)
    finally:
        timed["model_seconds"] += time.perf_counter() - started
        timed["fragments"] += len(texts)
embedding.OnnxEmbedder.embed_passages = embed_passages
from notarium_search.cli import main
code = main(["index", "s"])
ended = time.perf_counter()
semantic = ended - timed["first"]
print("BENCH " + json.dumps({
    "code": code, "fragments": timed["fragments"], "semantic_seconds": round(semantic, 2),
    "fragments_per_s": round(timed["fragments"] / semantic, 2),
    "share_in_model": round(timed["model_seconds"] / semantic, 4),
}), flush=True)
"""


@dataclass
class Tree:
    name: str
    path: Path
    env: dict[str, str]
    index: Path = Path()
    cli_index: Path = Path()
    results: dict[str, object] = field(default_factory=dict)


def parse_tree(text: str) -> Tree:
    name, rest = text.split("=", 1)
    path, *settings = rest.split(",")
    return Tree(name, Path(path).resolve(), dict(setting.split("=", 1) for setting in settings))


def tree_env(tree: Tree, root: Path, index: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment a tree's command runs with: nothing of the caller's settings.
    Its commands also run in the tree (`cwd`): `python -m` and `-c` put the
    working folder before PYTHONPATH."""
    return {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith("NOTARIUM_") and k not in ("VECTOR_SEARCH", "GRAPH_BOOST")
        },
        "PYTHONPATH": str(tree.path),
        "NOTARIUM_SPACES_ROOT": str(root),
        "NOTARIUM_INDEX_DIR": str(index),
        **extra,
        **tree.env,
    }


def index_lexically(tree: Tree, root: Path, index: Path) -> float:
    """A first lexical index of `root` into `index`: its seconds, process start to exit."""
    env = tree_env(tree, root, index, {"VECTOR_SEARCH": "0"})
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "notarium_search", "index", SPACE],
        cwd=tree.path,
        env=env,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree.name}: index failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - started


def prepare(trees: list[Tree], args: argparse.Namespace, work: Path) -> None:
    """One lexical index per source path (variants of a tree share it), the
    vectors copied in; the first index timed `--index-runs` times, in turns."""
    made: dict[Path, Tree] = {}
    for tree in trees:
        if tree.path in made:
            tree.index, tree.cli_index = made[tree.path].index, made[tree.path].cli_index
            continue
        tree.index, tree.cli_index = work / tree.name / "index", work / tree.name / "cli-index"
        made[tree.path] = tree
    notes = sum(1 for _ in (args.root / SPACE).rglob("*.md"))
    sources = list(made.values())
    timings: dict[str, list[float]] = {tree.name: [] for tree in sources}
    for round_ in range(max(args.index_runs, 1)):
        for tree in in_turns(sources, round_):
            shutil.rmtree(tree.index, ignore_errors=True)
            seconds = index_lexically(tree, args.root, tree.index)
            timings[tree.name].append(seconds)
            print(json.dumps({"tree": tree.name, "round": round_ + 1, "first_index_s": round(seconds, 1)}), flush=True)
    for tree in sources:
        seconds = statistics.median(timings[tree.name])
        tree.results["first_index"] = {
            "seconds": round(seconds, 1),
            "notes_per_s": round(notes / seconds),
            "runs_s": [round(t, 1) for t in timings[tree.name]],
        }
        print(json.dumps({"tree": tree.name, "first_index": tree.results["first_index"]}), flush=True)
        if args.vectors is not None:
            shutil.copytree(args.vectors / SPACE / "vectors", tree.index / SPACE / "vectors")
        index_lexically(tree, args.cli_root, tree.cli_index)
    for tree in trees:
        tree.results["first_index"] = made[tree.path].results["first_index"]


def in_turns(trees: list[Tree], round_: int) -> list[Tree]:
    """The trees in the order they take turns in this round: reversed every
    other round, so that none always runs first (the machine drifts)."""
    return trees if round_ % 2 == 0 else trees[::-1]


def _searches(texts: list[str]) -> list[str]:
    """The search requests of these queries, their space to fill in (`_at`)."""
    return [f"/spaces/{{space}}/search?{urllib.parse.urlencode({'q': q, 'limit': 10})}" for q in texts]


def _at(space: str, paths: list[str]) -> list[str]:
    return [p.replace("{space}", space) for p in paths]


def serve(
    tree: Tree, mode: str, args: argparse.Namespace, paths: list[str], mix: list[str], logs: Path
) -> dict[str, object]:
    env = tree_env(
        tree,
        args.root,
        tree.index,
        {
            "NOTARIUM_PORT": str(args.port),
            "NOTARIUM_WATCH": "0",
            # Nor polling: a full comparison of the 50,000 files every 60 s (1-2 s of
            # CPU) landed in some loads and not others.
            "NOTARIUM_RECONCILE_INTERVAL": "0",
            "NOTARIUM_RATE_LIMIT": "0",
            **({"NOTARIUM_MODEL_DIR": str(args.model)} if args.model is not None else {}),
            **MODES[mode],
        },
    )
    log_path = logs / f"{tree.name}-{mode.replace(' ', '')}.log"
    semantic = "VECTOR_SEARCH" in MODES[mode]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"], cwd=tree.path, env=env, stdout=log, stderr=log
        )
    try:
        started = time.perf_counter()
        space = wait_ready(args.port, process, semantic=semantic)
        ready_s = time.perf_counter() - started
        time.sleep(args.settle)  # start-up's collections and the followers' first looks are over
        space_paths = _at(space, paths)
        idle = tree_memory(process.pid)
        one, one_cpu = _with_cpu(process.pid, lambda: load(args.port, space_paths, 1, queries=args.queries))
        if semantic:
            # Served again: a tree that keeps its query embeddings (issue 34)
            # would otherwise answer the clients' questions, the one client's
            # again, from them; this measures the model, not the cache.
            process.terminate()
            process.wait()
            with open(log_path, "ab") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "notarium_search", "serve"], cwd=tree.path, env=env, stdout=log, stderr=log
                )
            wait_ready(args.port, process, semantic=semantic)
            time.sleep(args.settle)
        many, many_cpu = _with_cpu(process.pid, lambda: load(args.port, space_paths, args.clients, args.seconds))
        peak = tree_memory(process.pid)
        mixed, mixed_cpu = (
            (None, 0.0)
            if semantic
            else _with_cpu(process.pid, lambda: load(args.port, _at(space, mix), args.clients, args.seconds))
        )
    finally:
        process.terminate()
        process.wait()
    return {
        "ready_s": round(ready_s, 1),
        "one_client": {
            "p50_ms": round(percentile(one.latencies, 0.5), 2),
            "p99_ms": round(percentile(one.latencies, 0.99), 2),
            "max_ms": round(one.latencies[-1], 2),
            "degraded": one.degraded,
            "queries": len(one.latencies),
            "cpu_ms": one_cpu,
        },
        "many_clients": {
            "qps": round(many.qps, 1),
            "p50_ms": round(percentile(many.latencies, 0.5), 2),
            "p99_ms": round(percentile(many.latencies, 0.99), 2),
            "degraded": many.degraded,
            "queries": len(many.latencies),
            "cpu_ms": many_cpu,
        },
        **(
            {}
            if mixed is None
            else {
                "many_clients_mix": {"qps": round(mixed.qps, 1), "queries": len(mixed.latencies), "cpu_ms": mixed_cpu}
            }
        ),
        "memory_mib": {
            "idle_rss": round(idle[0]),
            "idle_pss": round(idle[1]),
            "peak_rss": round(peak[0]),
            "peak_pss": round(peak[1]),
        },
    }


def _with_cpu(pid: int, run: Callable[[], Load]) -> tuple[Load, float]:
    """A load, and the server's CPU per query it answered (ms: the process
    tree's, the supervisor, the workers and the model process). Steadier than
    the clients' timings on a shared machine: it leaves out the time the
    server waited for a core."""
    before = tree_cpu_seconds(pid)
    done = run()
    spent = tree_cpu_seconds(pid) - before
    return done, round(1000 * spent / max(len(done.latencies), 1), 2)


def semantic_build(tree: Tree, args: argparse.Namespace, work: Path) -> dict[str, object]:
    """A semantic build from scratch of the vault's first `--build-notes` notes."""
    root, index = work / "build" / tree.name / "root", work / "build" / tree.name / "index"
    shutil.rmtree(root.parent, ignore_errors=True)
    notes = sorted((args.root / SPACE).rglob("*.md"))[: args.build_notes]
    for note in notes:
        target = root / SPACE / note.relative_to(args.root / SPACE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(note, target)
    env = tree_env(tree, root, index, {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(args.model)})
    done = subprocess.run(
        [sys.executable, "-c", _BUILD_DRIVER], cwd=tree.path, env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{tree.name}: semantic build failed: {done.stderr[-2000:]}")
    result: dict[str, object] = json.loads(lines[-1][len("BENCH ") :])
    return result


def semantic_builds(trees: list[Tree], args: argparse.Namespace, work: Path) -> None:
    for tree in trees:
        tree.results["build"] = semantic_build(tree, args, work)
        print(json.dumps({"tree": tree.name, "build": tree.results["build"]}), flush=True)
    vault_fragments = saved_fragments(args.vectors)
    for tree in trees:
        build = tree.results["build"]
        assert isinstance(build, dict)
        build["vault_fragments"] = vault_fragments
        build["vault_minutes"] = round(vault_fragments / build["fragments_per_s"] / 60, 2)


def saved_fragments(index: Path) -> int:
    """How many fragments the vectors of `index` hold: the vault's, which a
    first embedding embeds (projected from a build's fragments/s, since
    embedding 50,000 notes once per tree would take hours)."""
    manifest = json.loads((index / SPACE / "vectors" / "vectors.json").read_bytes())
    return sum(len(records) for records in manifest["notes"].values())


def cli_search(trees: list[Tree], args: argparse.Namespace) -> None:
    """Process start to printed results, trees alternated; byte-code caches on, one warm-up each."""
    samples: dict[str, list[float]] = {tree.name: [] for tree in trees}
    for round_number in range(args.cli_runs + 1):
        for tree in trees:
            env = tree_env(tree, args.cli_root, tree.cli_index, {})
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            wall, _ = timed_search(tree.path, env, SPACE, args.cli_query)
            if round_number:
                samples[tree.name].append(1000 * wall)
    for tree in trees:
        tree.results["cli_search_ms"] = round(statistics.median(samples[tree.name]))


def remote_embedding(tree: Tree, args: argparse.Namespace) -> list[str] | None:
    if not (tree.path / "notarium_search" / "semantic" / "remote.py").exists():
        return None
    env = tree_env(tree, args.root, tree.index, {"NOTARIUM_EVAL_DIR": str(args.eval_dir)})
    done = subprocess.run(
        [sys.executable, "-m", "bench.remote_embedding", str(args.model), "--passages", str(args.remote_passages)],
        cwd=tree.path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:  # reported, not fatal: the rows measured before are kept
        return [f"failed: {done.stderr.strip()[-500:]}"]
    return done.stdout.splitlines()


def medians(rounds: list[dict[str, object]]) -> dict[str, object]:
    """One tree's serving rounds as one result: each figure the median of its
    rounds (p50, p99, queries/s, memory alike), every round's figures kept in
    `rounds` when there were several."""
    merged = _median_of(rounds)
    assert isinstance(merged, dict)
    return merged if len(rounds) == 1 else {**merged, "rounds": rounds}


def _median_of(values: Sequence[object]) -> object:
    first = values[0]
    if isinstance(first, dict):
        return {key: _median_of([v[key] for v in values if isinstance(v, dict)]) for key in first}
    if isinstance(first, int | float) and not isinstance(first, bool):
        middle = statistics.median(float(v) for v in values if isinstance(v, int | float))
        return round(middle, 2) if isinstance(first, float) else round(middle)
    return first


def _cell(tree: Tree, *keys: str) -> object:
    value: object = tree.results
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return "—"
        value = value[key]
    return value


def table(trees: list[Tree]) -> str:
    def served(mode: str, *keys: str) -> list[object]:
        return [_cell(tree, mode, *keys) for tree in trees]

    def memory(mode: str) -> list[str]:
        return [
            f"{_cell(t, mode, 'memory_mib', 'idle_rss')} / {_cell(t, mode, 'memory_mib', 'peak_rss')} "
            f"(PSS {_cell(t, mode, 'memory_mib', 'idle_pss')} / {_cell(t, mode, 'memory_mib', 'peak_pss')})"
            for t in trees
        ]

    rows: list[tuple[str, list[object]]] = [
        ("first lexical index of the vault (`index`): s / notes/s", _first_index(trees)),
        ("lexical over HTTP, 16 clients (q/s)", served("lexical", "many_clients", "qps")),
        ("lexical over HTTP, 16 clients, the bench's mix (q/s)", served("lexical", "many_clients_mix", "qps")),
        ("lexical over HTTP, 1 client: p50 / p99 (ms)", _pair(trees, "lexical")),
        ("lexical: the server's CPU a query at 1 / 16 clients / the mix (ms)", _cpu(trees, "lexical")),
        ("hybrid over HTTP, 16 clients (q/s)", served("hybrid", "many_clients", "qps")),
        ("— of which degraded to lexical", served("hybrid", "many_clients", "degraded")),
        ("hybrid over HTTP, 1 client: p50 / p99 (ms)", _pair(trees, "hybrid")),
        ("hybrid: the server's CPU a query at 1 / 16 clients (ms)", _cpu(trees, "hybrid")),
        ("hybrid + graph over HTTP, 1 client: p50 / p99 (ms)", _pair(trees, "hybrid + graph")),
        ("hybrid + graph over HTTP, 16 clients (q/s)", served("hybrid + graph", "many_clients", "qps")),
        ("hybrid + graph: the server's CPU a query at 1 / 16 clients (ms)", _cpu(trees, "hybrid + graph")),
        ("RSS hybrid: idle / peak under 16 clients (MiB)", list(memory("hybrid"))),
        ("RSS hybrid + graph: idle / peak (MiB)", list(memory("hybrid + graph"))),
        ("RSS lexical: idle / peak (MiB)", list(memory("lexical"))),
        ("semantic build: share of its time in the model", [_cell(t, "build", "share_in_model") for t in trees]),
        ("semantic build: fragments/s", [_cell(t, "build", "fragments_per_s") for t in trees]),
        ("first embedding of the vault, projected (min)", [_cell(t, "build", "vault_minutes") for t in trees]),
        ("`search` from the shell, start to printed results (ms)", [_cell(t, "cli_search_ms") for t in trees]),
    ]
    lines = ["| measure | " + " | ".join(t.name for t in trees) + " |", "|---" * (len(trees) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(str(v) for v in values) + " |" for label, values in rows]
    return "\n".join(lines)


def _first_index(trees: list[Tree]) -> list[object]:
    return [f"{_cell(t, 'first_index', 'seconds')} / {_cell(t, 'first_index', 'notes_per_s')}" for t in trees]


def _cpu(trees: list[Tree], mode: str) -> list[object]:
    loads = ("one_client", "many_clients") + (("many_clients_mix",) if mode == "lexical" else ())
    return [" / ".join(str(_cell(t, mode, name, "cpu_ms")) for name in loads) for t in trees]


def _pair(trees: list[Tree], mode: str) -> list[object]:
    return [f"{_cell(t, mode, 'one_client', 'p50_ms')} / {_cell(t, mode, 'one_client', 'p99_ms')}" for t in trees]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="NOTARIUM_SPACES_ROOT of the vault (space s)")
    parser.add_argument(
        "--vectors", type=Path, help="an index folder with the vault's vectors (without: the lexical tier only)"
    )
    parser.add_argument("--cli-root", type=Path, required=True, help="a vault (space s) for the CLI search")
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH[,KEY=VALUE...] (repeat)")
    parser.add_argument("--model", type=Path, help="the pack the vectors were made with (with --vectors)")
    parser.add_argument("--modes", default=",".join(MODES), help="channel sets served, comma-separated")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--queries", type=int, default=1000, help="one client's searches (p50, p99)")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument(
        "--index-runs", type=int, default=1, help="first indexes per tree, in turns (the median is reported)"
    )
    parser.add_argument(
        "--serve-rounds",
        type=int,
        default=1,
        help="servings per tree and channel set, in turns (order reversed every other round); medians reported",
    )
    parser.add_argument("--build-notes", type=int, default=1000)
    parser.add_argument("--cli-runs", type=int, default=10)
    parser.add_argument("--cli-query", default="résistance opérationnelle")
    parser.add_argument("--remote-passages", type=int, default=256, help="passages embedded through the server")
    parser.add_argument("--port", type=int, default=18893)
    parser.add_argument("--work", type=Path, help="kept for a look afterwards (default: a temporary folder)")
    parser.add_argument("--out", type=Path, help="the results as JSON")
    parser.add_argument("--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval")
    args = parser.parse_args(argv)
    if (args.vectors is None) != (args.model is None):
        parser.error("--vectors and --model go together")
    if args.vectors is None:
        args.modes = "lexical"
    trees = [parse_tree(text) for text in args.tree]
    texts = questions(args.eval_dir)
    paths = _searches(texts)
    mix = _searches([q.text for q in build_queries(FULL, load_corpora(args.eval_dir))])
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-side-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        prepare(trees, args, work)
        for mode in args.modes.split(","):
            rounds: dict[str, list[dict[str, object]]] = {tree.name: [] for tree in trees}
            for turn in range(args.serve_rounds):
                for tree in in_turns(trees, turn):
                    measured = serve(tree, mode, args, paths, mix, work)
                    rounds[tree.name].append(measured)
                    print(json.dumps({"tree": tree.name, "mode": mode, "round": turn + 1, **measured}), flush=True)
            for tree in trees:
                tree.results[mode] = medians(rounds[tree.name])
        if args.vectors is not None:
            semantic_builds(trees, args, work)
        cli_search(trees, args)
        print(json.dumps({t.name: t.results["cli_search_ms"] for t in trees}), flush=True)
        distinct = {tree.path: tree for tree in reversed(trees)}.values()  # a tree's variants embed alike
        remote = {tree.name: remote_embedding(tree, args) for tree in distinct} if args.vectors is not None else {}
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
        "minutes": round((time.time() - began) / 60, 1),
        "load_average_at_end": os.getloadavg(),
        "trees": {t.name: {"path": str(t.path), "env": t.env, **t.results} for t in trees},
        "remote_embedding": remote,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(table(trees))
    for name, lines in remote.items():
        for line in lines or []:
            print(f"{name}: remote embedding: {line}")
    return report


if __name__ == "__main__":
    main()
