"""Side by side: the known-item figures of several runs of bench/known_items.py.

    .venv/bin/python -m bench.known_report before=/tmp/ki-base.json after=/tmp/ki-head.json

One Markdown table per collection and measure row, a column per run and
mode (`before lexical`, `after lexical+graph`, …) and the MiniSearch baseline
once (it does not depend on this repository's code: the last run that has it).
A label given twice merges its files (a collection or a mode run on its own).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.known_items import MODES, ROWS


def side_by_side(runs: dict[str, dict[str, Any]]) -> str:
    names: list[str] = []
    for run in runs.values():
        names += [n for n in run["collections"] if n not in names]
    lines = []
    for name in names:
        columns: list[tuple[str, dict[str, Any]]] = []
        baseline = None
        for label, run in runs.items():
            found = run["collections"].get(name, {})
            columns += [(f"{label} {mode}", found[mode]) for mode in MODES if isinstance(found.get(mode), dict)]
            if isinstance(found.get("minisearch"), dict) and "skipped" not in found["minisearch"]:
                baseline = found["minisearch"]
        if baseline is not None:
            columns.append(("MiniSearch", baseline))
        ceiling = next(
            (
                r["collections"][name]["names-only"]
                for r in runs.values()
                if "names-only" in r["collections"].get(name, {})
            ),
            None,
        )
        if ceiling is not None:
            columns.append(("names only (ceiling)", ceiling))
        if not columns:
            continue
        counts = columns[0][1]
        lines.append(
            f"\n**{name}** ({counts.get('unique_names')} unique names of {counts.get('names')},"
            f" {counts.get('headings')} headings, {counts.get('aliases')} aliases)\n"
        )
        lines.append("| measure | " + " | ".join(label for label, _ in columns) + " |")
        lines.append("|---|" + "---|" * len(columns))
        for label, key, unit in ROWS:
            cells = [found.get(key) for _, found in columns]
            if all(c is None for c in cells):
                continue
            lines.append(f"| {label} | " + " | ".join("—" if c is None else f"{c}{unit}" for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    runs: dict[str, dict[str, Any]] = {}
    for spec in argv if argv is not None else sys.argv[1:]:
        label, _, path = spec.partition("=")
        run = json.loads(Path(path).read_text(encoding="utf-8"))
        if label in runs:  # a label given twice: the later file's modes replace the earlier's
            for name, found in run["collections"].items():
                runs[label]["collections"].setdefault(name, {}).update(found)
        else:
            runs[label] = run
    text = side_by_side(runs)
    print(text)
    return text


if __name__ == "__main__":
    main()
