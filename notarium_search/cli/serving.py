"""`serve` (the HTTP service) and `mcp` (the MCP tools over stdio)."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from typing import Any

from notarium_search.cli import EXIT_SETUP
from notarium_search.cli.indexing import NO_SPACE, index_folders_writable
from notarium_search.logsetup import configure_logging, get_logger
from notarium_search.settings import Settings, log_ignored_folders

log = get_logger(__name__)


def serve_command(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import serve, worker_count

    configure_logging(settings.log_level)
    # Before anything starts: granian reported a taken port as a JSON log line
    # from its worker, after the indexes were opened and a pass had begun.
    taken = port_unavailable(settings.host, settings.port)
    if taken is not None:
        print(f"notarium-search: {taken}", file=sys.stderr)
        return EXIT_SETUP
    log_ignored_folders(settings)
    if not settings.spaces:  # the page says so too
        log.warning("no_space_configured", detail=NO_SPACE)
    if not index_folders_writable(settings, settings.spaces):  # here, not as a traceback in granian's worker
        return EXIT_SETUP

    shared = worker_count(settings) > 1  # several workers: each space written by one, followed by the others

    def load_app() -> Any:  # in each of the server's worker processes, which open the indexes
        from notarium_search.api.app import create_app
        from notarium_search.lexical.store import IndexLocked
        from notarium_search.service import Service

        try:
            return create_app(settings, Service(settings, shared=shared))
        except IndexLocked as exc:
            print(f"notarium-search: {exc}", file=sys.stderr, flush=True)
            os._exit(1)  # the supervisor tries once more, then stops with exit code 1

    return serve(settings, load_app)


def port_unavailable(host: str, port: int) -> str | None:
    """Why the service could not listen on host:port (one sentence), or None.
    A probe bind, closed at once: the server binds right after (a program
    taking the port in between still fails the server's own bind)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As servers bind: a port whose last connections linger in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            where = f"{host}:{port}"
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is already in use (another notarium-search, or another program):"
                    f" stop it, or choose another port with NOTARIUM_PORT or `port` in the configuration"
                )
            if exc.errno == errno.EACCES:
                return f"cannot listen on {where}: ports below 1024 need root; choose another with NOTARIUM_PORT"
            if exc.errno == errno.EADDRNOTAVAIL:
                return f"cannot listen on {where}: {host} is not an address of this machine (NOTARIUM_HOST)"
            return f"cannot listen on {where}: {exc.strerror or exc}"
    return None


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
