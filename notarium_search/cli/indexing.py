"""`index` (a space indexed now, with a progress bar) and `status` (what each index holds)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from notarium_search.cli import EXIT_SETUP, unknown_space
from notarium_search.logsetup import configure_logging
from notarium_search.settings import Settings, SpaceConfig, log_ignored_folders


def index_command(settings: Settings, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from notarium_search.index.registry import why_unopened
    from notarium_search.index.space import Space
    from notarium_search.lexical.store import IndexLocked
    from notarium_search.notes.scan import SpaceUnavailable
    from notarium_search.types import BuildStep

    configure_logging("warning", sys.stderr)
    log_ignored_folders(settings)
    config = settings.space_config(args.space)
    if config is None:
        return unknown_space(settings, args.space)
    if not index_folders_writable(settings, [config]):
        return EXIT_SETUP
    try:
        space = Space(config, settings, rebuild=args.full)
    except Exception as exc:  # noqa: BLE001 - a lock held, a folder it may not read: one sentence, not a traceback
        print(f"notarium-search: space {config.name}: {why_unopened(config, exc)}", file=sys.stderr)
        return 1
    stop = space.stop_event
    signal.signal(signal.SIGINT, lambda *_: stop.set())  # finish the current note, commit, exit
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} {task.fields[unit]}/s"),
        TimeRemainingColumn(),
    )
    embedder = _embedder(space, settings)
    with Progress(*columns, transient=False) as bar:
        tasks: dict[str, Any] = {}
        started: dict[str, float] = {}

        def show(step: BuildStep) -> None:
            label = "indexing" if step.stage == "notes" else "embedding"
            if step.stage not in tasks:
                tasks[step.stage] = bar.add_task(f"{label} {config.name}", total=None, rate="-", unit=step.stage)
                started[step.stage] = time.monotonic()
            rate = step.done / max(time.monotonic() - started[step.stage], 1e-6) if step.done else 0.0
            bar.update(tasks[step.stage], total=step.total, completed=step.done, rate=f"{rate:,.0f}" if rate else "-")

        try:
            progress = space.build(show, embedder)
        except (IndexLocked, SpaceUnavailable) as exc:
            print(f"notarium-search: {exc}", file=sys.stderr)
            return 1
        finally:
            space.lexical.close()
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
    from notarium_search.index.root import IndexRootUnwritable, ensure_writable

    try:
        ensure_writable(settings.index_dir)
        for config in spaces:
            ensure_writable(settings.index_dir / config.name, settings.index_dir)  # left by a run as root?
    except IndexRootUnwritable as exc:
        print(f"notarium-search: {exc}", file=sys.stderr)
        return False
    return True


def _embedder(space: Any, settings: Settings) -> Any:
    """The configured model for a space with VECTOR_SEARCH, or None (the
    space's status then says why the semantic channel is unavailable)."""
    from notarium_search.semantic.loading import load_configured_embedder

    if space.semantic is None:
        return None
    try:
        return load_configured_embedder(settings)
    except Exception as exc:  # noqa: BLE001 - shown to the user; lexical indexing goes on
        space.semantic_unavailable(str(exc))
        return None


def status_command(settings: Settings, args: argparse.Namespace) -> int:
    """What each space's index holds, per channel, and whether it is complete:
    a pass stopped at 9,123 of 29,999 notes, or vectors 128 of 351 fragments
    embedded, must not read as done. Completeness is the comparison of the
    files with the manifest (stat only, as a pass starts: 1–2 s at 50,000
    notes), so it also counts what changed while nothing was running; the
    vectors are compared with the fragments the notes want (chunked from the
    index, no model loaded)."""
    configure_logging("error", sys.stderr)
    fingerprint = _model_fingerprint(settings)
    rows = [_space_status(settings, config, fingerprint) for config in settings.spaces]
    ignored = [
        {"path": str(f.path), "reason": f.reason, "suggested_name": f.suggested_name} for f in settings.ignored_folders
    ]
    report = {
        "vector_search": settings.vector_search,
        "graph_boost": settings.graph_boost,
        "spaces_root": str(settings.spaces_root) if settings.spaces_root is not None else None,
        "spaces": rows,
        "ignored_folders": ignored,
    }
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    flags = {True: "on", False: "off"}
    print(
        f"vector search (VECTOR_SEARCH): {flags[settings.vector_search]}, "
        f"graph boost (GRAPH_BOOST): {flags[settings.graph_boost]}"
    )
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
    "no space is configured: point NOTARIUM_SPACES_ROOT at a folder of notes (each sub-folder is a space),"
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


def _model_fingerprint(settings: Settings) -> str | None:
    """The configured pack's fingerprint, or why there is none (a str starting "!")."""
    if not settings.vector_search:
        return None
    if settings.embed_url is not None:
        return REMOTE
    if settings.model_dir is None:
        return "!no model configured (NOTARIUM_MODEL_DIR)"
    try:
        from notarium_search.semantic.embedder_errors import EmbedderUnavailable
        from notarium_search.semantic.embedding import pack_fingerprint
    except ImportError as exc:  # a lexical-only install
        return f"!semantic extra not installed ({exc.name})"
    try:
        return pack_fingerprint(settings.model_dir, settings.model)
    except (EmbedderUnavailable, OSError) as exc:
        return f"!{exc}"


def _space_status(settings: Settings, config: SpaceConfig, fingerprint: str | None) -> dict[str, Any]:
    """One space's row of `status`: "complete", "partial", "not indexed" or
    "folder unavailable", each channel's state, and in `detail` what is
    missing and what to run."""
    from notarium_search.index.manifest import named_skipped
    from notarium_search.index.registry import why_unopened
    from notarium_search.index.space import NotIndexed, Space
    from notarium_search.lexical.store import IndexUnreadable
    from notarium_search.notes.scan import SpaceUnavailable
    from notarium_search.storage.faults import StorageFault

    row: dict[str, Any] = {"space": config.name, "path": str(config.path), "notes": 0, "skipped": 0}
    row.update(state="not indexed", last_indexed=None, files=None, to_index=None, to_delete=None, detail=None)
    try:
        space = Space(config, settings, read_only=True)
    except NotIndexed:
        unavailable = folder_unavailable(config)
        if unavailable is not None:
            row.update(state="folder unavailable", detail=unavailable)
            return row
        row["detail"] = f"run `notarium-search index {config.name}` (or start the service)"
        return row
    except (IndexUnreadable, StorageFault) as exc:
        # Read-only: reported, never repaired here (a running service may be
        # writing it this very moment; it repairs its own index).
        row.update(state="unreadable", detail=f"{exc}: the service rebuilds it, or run `notarium-search index`")
        return row
    except Exception as exc:  # noqa: BLE001 - one space that cannot open never stops the others' rows
        row.update(state="unavailable", detail=why_unopened(config, exc))
        return row
    try:
        manifest = space.indexer.manifest
        saved = manifest.path.stat().st_mtime  # saved after every commit, and at the end of every pass
        row["last_indexed"] = datetime.fromtimestamp(saved).astimezone().isoformat(timespec="seconds")
        skipped = manifest.skipped()
        row.update(notes=int(space.lexical.searcher().num_docs), skipped=len(skipped))
        row["skipped_notes"] = [{"path": note.path, "reason": note.reason} for note in named_skipped(skipped)]
        unsettled = manifest.load_unsettled()
        try:
            pending = space.indexer.pending()
        except SpaceUnavailable as exc:
            row.update(state="folder unavailable", detail=str(exc))
            return row
        row["semantic"] = _semantic_status(space, fingerprint)
        row["graph"] = _graph_status(space)
    finally:
        space.lexical.close()
    row.update(files=pending.files, to_index=pending.changed, to_delete=pending.gone)
    missing = []
    if pending.changed:
        missing.append(f"{pending.changed} of {pending.files} files new or changed since indexed")
    if pending.gone:
        missing.append(f"{pending.gone} deleted files still in the index")
    if unsettled is not None:
        redone = "every note" if unsettled.everything else f"{len(unsettled.ids)} notes"
        missing.append(f"a commit under way, or cut short by a crash ({redone} to redo then)")
    if space.mismatch is not None:
        missing.append(f"{space.mismatch}: it is rebuilt from the notes")
    row["lexical"] = {"state": "partial" if missing else "complete"}
    semantic = row["semantic"]
    if semantic["state"] == "partial":
        left = semantic["total"] - semantic["embedded"]
        missing.append(f"{left} of {semantic['total']} fragments not embedded yet")
    row["state"] = "partial" if missing else "complete"
    if missing:
        row["detail"] = f"{'; '.join(missing)}: run `notarium-search index {config.name}` (or start the service)"
    return row


def folder_unavailable(config: SpaceConfig) -> str | None:
    """Why the space's notes folder cannot be read (one sentence), or None."""
    from notarium_search.notes.scan import SpaceUnavailable, check_root

    try:
        check_root(config.path)
        with os.scandir(config.path):
            pass
    except SpaceUnavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"the notes folder {config.path} cannot be listed: {exc.strerror} (the service's user needs read access)"
    return None


def _semantic_status(space: Any, fingerprint: str | None) -> dict[str, Any]:
    """ "off", "unavailable" (with the reason), "complete" or "partial", with
    the fragments embedded and wanted, as /status counts them."""
    if fingerprint is None:
        return {"state": "off", "embedded": None, "total": None, "reason": None}
    if fingerprint.startswith("!"):
        return {"state": "unavailable", "embedded": None, "total": None, "reason": fingerprint[1:]}
    from notarium_search.lexical import search as lexical
    from notarium_search.semantic.index import count_embedded

    notes = (payload.to_note() for payload in lexical.all_payloads(space.lexical))
    remote = fingerprint == REMOTE
    count = count_embedded(space.directory / "vectors", None if remote else fingerprint, notes)
    state = "complete" if count.embedded == count.total else "partial"
    reason = REMOTE_CAVEAT if remote else count.stale
    return {"state": state, "embedded": count.embedded, "total": count.total, "reason": reason}


# With NOTARIUM_EMBED_URL the model's identity is the server's answer: status
# does not call the server, so it counts the saved vectors whatever made them.
REMOTE = "remote"
REMOTE_CAVEAT = "vectors from the embedding server (NOTARIUM_EMBED_URL), its model not checked here: see /status"


def _graph_status(space: Any) -> dict[str, Any]:
    """ "off", or "ready" with the links read from the index (as /status)."""
    status = space.graph.status()
    if status.state.value == "disabled":
        return {"state": "off", "links": None, "dangling": None}
    return {"state": status.state.value, "links": status.links, "dangling": status.dangling}
