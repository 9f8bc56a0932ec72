"""`notarium-search search` (or `status`) from the shell: process start to printed results.

Runs the command N times per source tree, alternating the trees (so that a
busy neighbour weighs on both alike), against one indexed space, and reports
the median wall time and the median CPU time (user + system, from the child's
rusage: steadier than wall time on a shared machine).

    python bench/cli_startup.py --space s --query "résistance opérationnelle" \\
        --root /tmp/cli10k/root --index /tmp/cli10k/idx --tree before=/path/old --tree after=.
    python bench/cli_startup.py --status --root … --index … --tree before=… --tree after=.   # `status` instead

A tree is a source checkout put first on PYTHONPATH. Byte-code caching is on
(PYTHONDONTWRITEBYTECODE unset), as on a user's machine; one warm-up run per
tree fills it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed_search(tree: Path, env: dict[str, str], space: str, query: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one `notarium-search search` from `tree`."""
    return timed_command(tree, env, ["search", space, query])


def timed_command(tree: Path, env: dict[str, str], command: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one `notarium-search COMMAND…` from `tree`. It
    runs in the tree: `python -m` puts the working folder before PYTHONPATH,
    so from elsewhere (this repository, say) it would run that folder's code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "notarium_search", *command],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def run_once(tree: Path, args: argparse.Namespace) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), NOTARIUM_SPACES_ROOT=str(args.root), NOTARIUM_INDEX_DIR=str(args.index))
    if args.status:
        return timed_command(tree, env, ["status"])
    return timed_search(tree, env, args.space, args.query)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--space", default="s")
    parser.add_argument("--query", default="résistance opérationnelle")
    parser.add_argument("--status", action="store_true", help="time `status` instead of `search`")
    parser.add_argument("--root", type=Path, required=True, help="NOTARIUM_SPACES_ROOT")
    parser.add_argument("--index", type=Path, required=True, help="NOTARIUM_INDEX_DIR, already indexed")
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a source tree")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for tree in trees.values():
        run_once(tree, args)  # warm-up: byte-code caches, page cache
    for _ in range(args.runs):
        for name, tree in trees.items():
            samples[name].append(run_once(tree, args))
    for name, runs in samples.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name}: wall median {wall * 1000:.0f} ms, cpu median {cpu * 1000:.0f} ms ({len(runs)} runs)")


if __name__ == "__main__":
    main()
