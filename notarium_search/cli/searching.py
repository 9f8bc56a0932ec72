"""`search`: an indexed space searched from the shell, beside a running service or not."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from datetime import datetime
from enum import Enum
from typing import Any

from notarium_search.cli import only, unknown_space
from notarium_search.logsetup import configure_logging
from notarium_search.settings import Settings


def search_command(settings: Settings, args: argparse.Namespace) -> int:
    """The space read as a service or `index` left it, without the service:
    this imports neither it nor the HTTP stack, the model or the writer's
    modules (issue 34; docs/benchmarks.md, CLI start-up)."""
    from notarium_search import offline_search
    from notarium_search.errors import NotariumError
    from notarium_search.types import FeedFilter

    configure_logging("error", sys.stderr, on_first_use=True)  # structlog only if something logs
    if settings.space_config(args.space) is None:
        return unknown_space(settings, args.space)
    try:
        filters = FeedFilter(args.folder, tuple(args.tag))
        response, behind = offline_search.search(
            only(settings, args.space), args.space, args.query, filters, args.limit, args.sort
        )
    except (NotariumError, *offline_search.OPEN_FAILURES) as exc:  # type: ignore[misc]  # mypy does not read a starred tuple of exceptions
        print(f"notarium-search: {getattr(exc, 'detail', exc)}", file=sys.stderr)
        return 1
    if args.json:
        from notarium_search.bodies import search_body  # its 29 dataclasses, ~25 ms: for --json only

        print(json.dumps(jsonable(asdict(search_body(response))), ensure_ascii=False, indent=2))
        return 0
    _print_results(response)
    if response.partial:
        print(f"\npartial: {'; '.join(behind)}; `notarium-search index {args.space}` (or the service) completes it")
    return 0


def _print_results(response: Any) -> None:
    """Plain lines, one block per hit: its title, `path:line` and section (a
    terminal or an editor opens `path:line` at the match), and its first
    snippet, the matched words in bold on a terminal. Plain print rather than
    rich's table, which cost ~50 ms of the command's ~0.3 s (docs/benchmarks.md)."""
    bold = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    typed = " ".join(f'{f.name}:"{f.value}"' if " " in f.value else f"{f.name}:{f.value}" for f in response.filters)
    count = len(response.results)
    lines = [
        f"{count} result{'' if count == 1 else 's'} in {response.took_ms:.1f} ms" + (f" ({typed})" if typed else "")
    ]
    lines += [f"without {channel}: {why}" for channel, why in response.degraded.items()]
    for rank, hit in enumerate(response.results, start=1):
        best = hit.placed()
        where = f"{hit.note.path}:{best.line}" if best is not None and best.line is not None else hit.note.path
        if best is not None and best.heading:
            where += " · " + " > ".join(best.heading)
        lines += ["", f"{rank}. {hit.note.title}", f"   {where}"]
        if hit.snippets:
            lines.append("   " + _highlighted(hit.snippets[0], bold).replace("\n", " "))
    if response.unmatched_terms:
        lines += ["", f"no note contains: {', '.join(response.unmatched_terms)}"]
    print("\n".join(lines))


def _highlighted(snippet: Any, bold: bool) -> str:
    if not bold:
        return str(snippet.text)
    text, parts, at = snippet.text, [], 0
    for r in snippet.highlights:
        parts += [text[at : r.start], BOLD, text[r.start : r.end], PLAIN]
        at = r.end
    return "".join([*parts, text[at:]])


BOLD, PLAIN = "\x1b[1m", "\x1b[0m"


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value
