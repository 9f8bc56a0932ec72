"""`notarium-search` command line: serve, mcp, index, search, status."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime
from enum import Enum
from typing import Any

from notarium_search.logsetup import configure_logging
from notarium_search.settings import ConfigError, Settings, SpaceConfig, load_settings, log_ignored_folders

EXIT_USAGE = 2
# What the command needs from the machine is not there (a writable index
# folder, a usable model pack): one line on stderr says why; nothing was done.
EXIT_SETUP = 2
# `models check` embeds one query and one passage of it, and prints their cosine.
CHECK_QUERY = "Comment préparer un bon café ?"
CHECK_PASSAGE = "Pour un café filtre, versez l'eau chaude lentement sur la mouture fraîchement moulue."
UNIT_TOLERANCE = 1e-3  # |1 - norm| of a normalised float32 vector
# numpy's OpenBLAS keeps one thread per core and wakes them for every matrix
# product. The service's products are small (a filtered search over at most
# 2,000 fragments) and run beside onnxruntime's own threads; with the model
# embedding on both cores, those wake-ups put a 2,000 × 384 product at 8.1 ms
# p99 against 0.07 ms on one thread (docs/benchmarks.md, optimisation log).
# Read when numpy loads, which the semantic modules do after this.
BLAS_THREADS = "1"


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)  # an operator's own setting wins
    args = _parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        print(f"notarium-search: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    handlers = {"serve": _serve, "mcp": _mcp, "index": _index, "search": _search, "status": _status, "models": _models}
    handler = handlers[args.command]
    return handler(settings, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="notarium-search", description="Hybrid search over folders of Markdown notes."
    )
    parser.add_argument("--config", help="TOML config file (default: $NOTARIUM_CONFIG)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP service (indexes every space in the background)")
    sub.add_parser("mcp", help="serve the MCP tools over stdio, for assistants that start it (docs/mcp.md)")
    index = sub.add_parser("index", help="index a space now, with a progress bar (Ctrl+C stops safely)")
    index.add_argument("space")
    index.add_argument("--full", action="store_true", help="rebuild from scratch instead of updating")
    search = sub.add_parser("search", help="search an indexed space")
    search.add_argument("space")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--folder")
    search.add_argument("--tag", action="append", default=[])
    search.add_argument("--json", action="store_true", help="print the API's JSON body")
    status = sub.add_parser("status", help="what each space's index holds")
    status.add_argument("--json", action="store_true")
    models = sub.add_parser("models", help="embedding models (docs/models.md)")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    download = models_sub.add_parser("download", help="fetch an ONNX export from the Hugging Face hub (explicit only)")
    download.add_argument("repo_id", help="e.g. Xenova/multilingual-e5-small")
    download.add_argument("target", help="new directory for the pack, then point NOTARIUM_MODEL_DIR at it")
    download.add_argument("--dim", type=int)
    download.add_argument("--pooling", choices=["mean", "cls"])
    download.add_argument("--query-prefix")
    download.add_argument("--passage-prefix")
    download.add_argument("--timeout", type=float, default=30.0)
    download.add_argument("--hub-url", default=None, help="a hub mirror (https)")
    download.add_argument(
        "--onnx-file", default=None, help="graph path in the repository, e.g. onnx/model_quantized.onnx"
    )
    check = models_sub.add_parser(
        "check", help="load a pack as the service does and embed a test pair: one line, exit 2 if it is not usable"
    )
    check.add_argument("pack", nargs="?", help="the pack's folder (default: NOTARIUM_MODEL_DIR)")
    return parser


def _serve(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import serve

    configure_logging(settings.log_level)
    log_ignored_folders(settings)
    if not _index_folders_writable(settings, settings.spaces):  # here, not as a traceback in granian's worker
        return EXIT_SETUP

    def load_app() -> Any:  # in the server's worker process, which alone opens the indexes
        from notarium_search.api.app import create_app
        from notarium_search.lexical.store import IndexLocked

        try:
            return create_app(settings)
        except IndexLocked as exc:
            print(f"notarium-search: {exc}", file=sys.stderr, flush=True)
            os._exit(1)  # the supervisor tries once more, then stops with exit code 1

    return serve(settings, load_app)


def _mcp(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import raise_descriptor_limit
    from notarium_search.lexical.store import IndexLocked
    from notarium_search.mcp.server import run_stdio

    # stdout carries the protocol alone: logs go to stderr, which MCP clients show or keep.
    configure_logging(settings.log_level, sys.stderr)
    log_ignored_folders(settings)
    raise_descriptor_limit()  # it holds the indexes as `serve` does
    if not _index_folders_writable(settings, settings.spaces):  # it writes them as `serve` does
        return EXIT_SETUP
    try:
        run_stdio(settings)
    except IndexLocked as exc:
        print(
            f"notarium-search: {exc} (a `serve`, `index` or `mcp` on the same index): one process writes an"
            " index; give every client the running service's /mcp endpoint instead (docs/mcp.md)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _index(settings: Settings, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from notarium_search.index.space import Space
    from notarium_search.lexical.store import IndexLocked
    from notarium_search.notes.scan import SpaceUnavailable
    from notarium_search.types import BuildStep

    configure_logging("warning", sys.stderr)
    log_ignored_folders(settings)
    config = settings.space(args.space)
    if config is None:
        return _unknown_space(settings, args.space)
    if not _index_folders_writable(settings, [config]):
        return EXIT_SETUP
    try:
        space = Space(config, settings, rebuild=args.full)
    except IndexLocked as exc:
        print(f"notarium-search: {exc}", file=sys.stderr)
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


def _index_folders_writable(settings: Settings, spaces: Iterable[SpaceConfig]) -> bool:
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
    from notarium_search.service import load_configured_embedder

    if space.semantic is None:
        return None
    try:
        return load_configured_embedder(settings)
    except Exception as exc:  # noqa: BLE001 - shown to the user; lexical indexing goes on
        space.semantic_unavailable(str(exc))
        return None


def _search(settings: Settings, args: argparse.Namespace) -> int:
    from notarium_search.bodies import search_body
    from notarium_search.errors import NotariumError
    from notarium_search.index.space import NotIndexed
    from notarium_search.lexical.store import IndexUnreadable
    from notarium_search.service import Service
    from notarium_search.storage.faults import StorageFault
    from notarium_search.types import FeedFilter

    configure_logging("error", sys.stderr)
    if settings.space(args.space) is None:
        return _unknown_space(settings, args.space)
    try:
        service = Service(_only(settings, args.space), read_only=True)
        response = service.search(args.space, args.query, FeedFilter(args.folder, tuple(args.tag)), args.limit)
    except (NotIndexed, IndexUnreadable, StorageFault, NotariumError) as exc:
        print(f"notarium-search: {getattr(exc, 'detail', exc)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(_jsonable(asdict(search_body(response))), ensure_ascii=False, indent=2))
        return 0
    _print_results(response)
    return 0


def _print_results(response: Any) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{len(response.results)} results in {response.took_ms:.1f} ms")
    for column in ("#", "title", "path", "snippet"):
        table.add_column(column)
    for rank, hit in enumerate(response.results, start=1):
        snippet = Text()
        if hit.snippets:
            first = hit.snippets[0]
            snippet.append(first.text)
            for r in first.highlights:
                snippet.stylize("bold yellow", r.start, r.end)
        table.add_row(str(rank), hit.note.title, hit.note.path, snippet)
    console = Console()
    console.print(table)
    if response.unmatched_terms:
        console.print(f"no note contains: {', '.join(response.unmatched_terms)}")


def _status(settings: Settings, args: argparse.Namespace) -> int:
    """What each space's index holds, and whether it is complete: a pass
    stopped at 9,123 of 29,999 notes must not read as done. Completeness is
    the comparison of the files with the manifest (stat only, as a pass
    starts: 1–2 s at 50,000 notes), so it also counts what changed while
    nothing was running."""
    configure_logging("error", sys.stderr)
    rows = [_space_status(settings, config) for config in settings.spaces]
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
    for row in rows:
        when = f"last indexed {row['last_indexed']}" if row["last_indexed"] else "never indexed"
        print(f"{row['space']:<20} {row['state']:<18} {row['notes']:>8} notes  {when}  {row['path']}")
        if row["detail"]:
            print(f"{'':<20} {row['detail']}")
    for folder in ignored:  # folders of spaces_root that look like spaces but are not
        print(f"ignored folder {folder['path']}: {folder['reason']}")
    return 0


def _space_status(settings: Settings, config: SpaceConfig) -> dict[str, Any]:
    """One space's row of `status`: "complete", "partial", "not indexed" or
    "folder unavailable", and in `detail` what is missing and what to run."""
    from notarium_search.index.space import NotIndexed, Space
    from notarium_search.lexical.store import IndexUnreadable
    from notarium_search.notes.scan import SpaceUnavailable
    from notarium_search.storage.faults import StorageFault

    row: dict[str, Any] = {"space": config.name, "path": str(config.path), "notes": 0, "skipped": 0}
    row.update(state="not indexed", last_indexed=None, files=None, to_index=None, to_delete=None, detail=None)
    try:
        space = Space(config, settings, read_only=True)
    except NotIndexed:
        row["detail"] = f"run `notarium-search index {config.name}` (or start the service)"
        return row
    except (IndexUnreadable, StorageFault) as exc:
        # Read-only: reported, never repaired here (a running service may be
        # writing it this very moment; it repairs its own index).
        row.update(state="unreadable", detail=f"{exc}: the service rebuilds it, or run `notarium-search index`")
        return row
    try:
        manifest = space.indexer.manifest
        saved = manifest.path.stat().st_mtime  # saved after every commit, and at the end of every pass
        row["last_indexed"] = datetime.fromtimestamp(saved).astimezone().isoformat(timespec="seconds")
        row.update(notes=int(space.lexical.searcher().num_docs), skipped=len(manifest.skipped()))
        unsettled = manifest.load_unsettled()
        try:
            pending = space.indexer.pending()
        except SpaceUnavailable as exc:
            row.update(state="folder unavailable", detail=str(exc))
            return row
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
        missing.append(f"a commit was cut short: {redone} to redo")
    if space.mismatch is not None:
        missing.append(f"{space.mismatch}: it is rebuilt from the notes")
    row["state"] = "partial" if missing else "complete"
    if missing:
        row["detail"] = f"{'; '.join(missing)}: run `notarium-search index {config.name}` (or start the service)"
    return row


def _models(settings: Settings, args: argparse.Namespace) -> int:
    if args.models_command == "check":
        return _models_check(settings, args)
    return _models_download(args)


def _models_check(settings: Settings, args: argparse.Namespace) -> int:
    """Load the pack with the service's loader and settings ([model]
    overrides, threads, batch size included), embed a French query and
    passage, check their vectors, and print one line either way: an image
    build runs it, so a pack that cannot work fails the build."""
    from dataclasses import replace
    from pathlib import Path

    from notarium_search.semantic.embedding import EmbedderUnavailable
    from notarium_search.service import load_configured_embedder

    pack = Path(args.pack) if args.pack else settings.model_dir
    if pack is None:
        print("notarium-search: no model pack to check: name its folder, or set NOTARIUM_MODEL_DIR", file=sys.stderr)
        return EXIT_SETUP
    try:
        embedder = load_configured_embedder(replace(settings, model_dir=pack))
        summary = _embed_test_pair(embedder)
        graph_mb = (pack / "model.onnx").stat().st_size / 1e6
    except (EmbedderUnavailable, OSError) as exc:
        reason = " ".join(str(exc).split())  # one line, whatever onnxruntime or a parser wrote
        print(f"notarium-search: model pack {pack} is not usable: {reason}", file=sys.stderr)
        return EXIT_SETUP
    config = embedder.config
    prefixes = f"prefixes {config.query_prefix!r} / {config.passage_prefix!r}"
    overrides = sorted(k for k, v in settings.model.items() if v is not None)
    print(
        f"model pack {pack} works: {config.name}, dim {config.dim}, pooling {config.pooling},"
        f" {'normalized' if config.normalize else 'not normalized'},"
        f" {prefixes if config.query_prefix or config.passage_prefix else 'no prefixes'},"
        f" max_tokens {config.max_tokens}, model.onnx {graph_mb:.1f} MB, {summary}"
        + (f" ([model] of the configuration sets {', '.join(overrides)})" if overrides else "")
    )
    return 0


def _embed_test_pair(embedder: Any) -> str:
    """Embed CHECK_QUERY and CHECK_PASSAGE; EmbedderUnavailable unless both
    vectors have the pack's dim, are finite and (when it normalises) unit."""
    import numpy as np

    from notarium_search.semantic.embedding import EmbedderUnavailable

    config = embedder.config
    try:
        query = np.asarray(embedder.embed_query(CHECK_QUERY))
        passages = np.asarray(embedder.embed_passages([CHECK_PASSAGE]))
    # onnxruntime raises private types deriving from Exception only (semantic/embedding.py).
    except Exception as exc:  # re-raised as the pack's failure, in one line
        raise EmbedderUnavailable(f"embedding the test pair failed: {type(exc).__name__}: {exc}") from exc
    for role, vector, shape in (("query", query, (config.dim,)), ("passage", passages, (1, config.dim))):
        if vector.shape != shape:
            raise EmbedderUnavailable(f"the test {role} vector has shape {vector.shape}, expected {shape}")
        if not np.isfinite(vector).all():
            raise EmbedderUnavailable(f"the test {role} vector holds NaN or infinite values")
    passage = passages[0]
    norms = float(np.linalg.norm(query)), float(np.linalg.norm(passage))
    if config.normalize and any(abs(1.0 - n) > UNIT_TOLERANCE for n in norms):
        raise EmbedderUnavailable(f"normalize is on but the test vectors have lengths {norms[0]:.4f}, {norms[1]:.4f}")
    if min(norms) == 0.0:
        raise EmbedderUnavailable("a test vector is all zeros")
    cosine = float(np.dot(query, passage)) / (norms[0] * norms[1])
    return f"cosine of a French query and its passage {cosine:.3f}"


def _models_download(args: argparse.Namespace) -> int:
    from pathlib import Path

    from notarium_search.semantic.download import ModelDownloadError, download_model

    try:
        path = download_model(
            args.repo_id,
            Path(args.target),
            args.timeout,
            dim=args.dim,
            pooling=args.pooling,
            query_prefix=args.query_prefix,
            passage_prefix=args.passage_prefix,
            onnx_file=args.onnx_file,
            **({"hub_url": args.hub_url} if args.hub_url else {}),
        )
    except ModelDownloadError as exc:
        print(f"notarium-search: {exc}", file=sys.stderr)
        return 1
    print(f"model saved in {path}: set NOTARIUM_MODEL_DIR={path}")
    return 0


def _only(settings: Settings, name: str) -> Settings:
    from dataclasses import replace

    return replace(settings, spaces=tuple(s for s in settings.spaces if s.name == name))


def _unknown_space(settings: Settings, name: str) -> int:
    known = ", ".join(s.name for s in settings.spaces) or "none configured"
    print(f"notarium-search: no space named {name!r} (known: {known})", file=sys.stderr)
    return EXIT_USAGE


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


if __name__ == "__main__":
    sys.exit(main())
