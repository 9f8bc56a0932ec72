"""`serve` (the HTTP service) and `mcp` (the MCP tools over stdio)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from notarium_search.cli import EXIT_SETUP
from notarium_search.cli.indexing import index_folders_writable
from notarium_search.logsetup import configure_logging
from notarium_search.settings import Settings, log_ignored_folders


def serve_command(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import serve

    configure_logging(settings.log_level)
    log_ignored_folders(settings)
    if not index_folders_writable(settings, settings.spaces):  # here, not as a traceback in granian's worker
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


def mcp_command(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import raise_descriptor_limit
    from notarium_search.lexical.store import IndexLocked
    from notarium_search.mcp.server import run_stdio

    # stdout carries the protocol alone: logs go to stderr, which MCP clients show or keep.
    configure_logging(settings.log_level, sys.stderr)
    log_ignored_folders(settings)
    raise_descriptor_limit()  # it holds the indexes as `serve` does
    if not index_folders_writable(settings, settings.spaces):  # it writes them as `serve` does
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
