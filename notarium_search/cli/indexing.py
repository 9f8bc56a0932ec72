"""`index` (a space indexed now, with a progress bar) and `status` (what each index holds)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time
from collections.abc import Iterable
from typing import Any

from notarium_search.cli import EXIT_SETUP, unknown_space
from notarium_search.logsetup import configure_logging
from notarium_search.preflight import why_unwritable
from notarium_search.settings import Settings, SpaceConfig, log_ignored_folders

# The progress bar is redrawn 10 times a second (rich's default): it is told
# of a note at most that often, and always of the last. Told of every note,
# it took ~9 µs of the writer's thread a note (0.46 s of a first index of
# 50,000 notes, py-spy).
BAR_UPDATE_SECONDS = 0.1


def index_command(settings: Settings, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from notarium_search import offline
    from notarium_search.types import BuildStep

    configure_logging("warning", sys.stderr)
    log_ignored_folders(settings)
    config = settings.space_config(args.space)
    if config is None:
        return unknown_space(settings, args.space)
    if not index_folders_writable(settings, [config]):
        return EXIT_SETUP
    try:
        space = offline.open_for_indexing(config, settings, args.full)
    except offline.OpenFailed as exc:
        print(f"notarium-search: {exc}", file=sys.stderr)
        return 1
    stop = space.writing.stop_event
    signal.signal(signal.SIGINT, lambda *_: stop.set())  # finish the current note, commit, exit
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} {task.fields[unit]}/s"),
        TimeRemainingColumn(),
    )
    embedder = offline.load_embedder(space, settings)
    with Progress(*columns, transient=False) as bar:
        tasks: dict[str, Any] = {}
        started: dict[str, float] = {}
        shown: dict[str, float] = {}  # when each stage's bar was last updated

        def show(step: BuildStep) -> None:
            now = time.monotonic()
            if step.done != step.total and now - shown.get(step.stage, -BAR_UPDATE_SECONDS) < BAR_UPDATE_SECONDS:
                return
            shown[step.stage] = now
            label = "indexing" if step.stage == "notes" else "embedding"
            if step.stage not in tasks:
                tasks[step.stage] = bar.add_task(f"{label} {config.name}", total=None, rate="-", unit=step.stage)
                started[step.stage] = now
            rate = step.done / max(now - started[step.stage], 1e-6) if step.done else 0.0
            bar.update(tasks[step.stage], total=step.total, completed=step.done, rate=f"{rate:,.0f}" if rate else "-")

        try:
            progress = offline.build(space, show, embedder)
        except offline.BuildFailed as exc:
            print(f"notarium-search: {exc}", file=sys.stderr)
            return 1
    status = space.status()
    interrupted = " (interrupted: run again to finish)" if stop.is_set() else ""
    counts = f"{progress.indexed} indexed, {progress.deleted} deleted, {progress.skipped} skipped"
    print(f"{config.name}: {status.notes} notes, {counts}{interrupted}")
    if space.semantic is not None:
        semantic = status.semantic
        print(
            f"{config.name}: semantic {semantic.state}, {semantic.embedded or 0}/{semantic.total or 0} fragments"
            + (f" ({semantic.reason})" if semantic.reason else "")
        )
    return 130 if stop.is_set() else 0


def index_folders_writable(settings: Settings, spaces: Iterable[SpaceConfig]) -> bool:
    """Make the index folder and those of `spaces` and prove this process can
    write them; otherwise say why in one line on stderr (who owns the folder,
    who we are, the fixes) and return False. For the commands that write
    indexes only: `search` and `status` create and write nothing."""
    why = why_unwritable(settings, spaces)
    if why is not None:
        print(f"notarium-search: {why}", file=sys.stderr)
        return False
    return True


def status_command(settings: Settings, args: argparse.Namespace) -> int:
    """What each space's index holds, per channel, and whether it is complete:
    a pass stopped at 9,123 of 29,999 notes, or vectors 128 of 351 fragments
    embedded, must not read as done. Completeness is the comparison of the
    files with the manifest (stat only, as a pass starts: 1–2 s at 50,000
    notes), so it also counts what changed while nothing was running; the
    vectors are compared with the fragments the notes want (chunked from the
    index, no model loaded)."""
    from notarium_search.offline import model_fingerprint, space_row

    configure_logging("error", sys.stderr, on_first_use=True)  # structlog (~80 ms) only if something logs
    fingerprint = model_fingerprint(settings)
    rows = [space_row(settings, config, fingerprint) for config in settings.spaces]
    ignored = [
        {"path": str(f.path), "reason": f.reason, "suggested_name": f.suggested_name} for f in settings.ignored_folders
    ]
    if args.json:
        from notarium_search.bodies import root_out  # its 29 dataclasses, ~25 ms: for --json only

        root = root_out(settings)
        report = {
            "vector_search": settings.vector_search,
            "graph_boost": settings.graph_boost,
            "spaces_root": str(settings.spaces_root) if settings.spaces_root is not None else None,
            "root": dataclasses.asdict(root) if root is not None else None,  # as /status says it
            "spaces": rows,
            "ignored_folders": ignored,
        }
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    flags = {True: "on", False: "off"}
    print(
        f"vector search (VECTOR_SEARCH): {flags[settings.vector_search]}, "
        f"graph boost (GRAPH_BOOST): {flags[settings.graph_boost]}"
    )
    if settings.root_reading is not None:
        print(f"spaces root {settings.root_reading.path}: {settings.root_reading.reason}")
    if not settings.spaces:
        print(NO_SPACE)
    for row in rows:
        when = f"last indexed {row['last_indexed']}" if row["last_indexed"] else "never indexed"
        print(f"{row['space']:<20} {row['state']:<18} {row['notes']:>8} notes  {when}  {row['path']}")
        if "lexical" in row:
            print(f"{'':<20} {_channels_line(row)}")
        if row["detail"]:
            print(f"{'':<20} {row['detail']}")
        for note in row.get("skipped_notes", ()):
            print(f"{'':<20} skipped {note['path']}: {note['reason']}")
        if row["skipped"] > len(row.get("skipped_notes", ())):
            print(f"{'':<20} ({row['skipped']} skipped in all, the first {len(row['skipped_notes'])} named)")
    for folder in ignored:  # folders of spaces_root that look like spaces but are not
        print(f"ignored folder {folder['path']}: {folder['reason']}")
    return 0


NO_SPACE = (
    "no space is configured: point NOTARIUM_SPACES_ROOT at a vault (one space) or a folder of vaults (each"
    " sub-folder a space),"
    " or add a [spaces.NAME] table with its path to a configuration file (--config FILE); docs/configuration.md"
)


def _channels_line(row: dict[str, Any]) -> str:
    """ "lexical complete · semantic building, 128/351 fragments · graph ready, 12 links" """
    parts = [f"lexical {row['lexical']['state']}"]
    for name in ("semantic", "graph"):
        channel = row[name]
        text = f"{name} {channel['state']}"
        if channel.get("total") is not None:
            text += f", {channel['embedded']}/{channel['total']} fragments embedded"
        if channel.get("links") is not None:
            text += f", {channel['links']} links, {channel['dangling']} dangling"
        if channel.get("reason"):
            text += f" ({channel['reason']})"
        parts.append(text)
    return " · ".join(parts)
