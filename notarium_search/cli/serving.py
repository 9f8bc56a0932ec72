"""`serve` (the HTTP service) and `mcp` (the MCP tools over stdio)."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
import time
from typing import Any

from msgspec.structs import replace

from notarium_search.cli import EXIT_SETUP
from notarium_search.cli.indexing import NO_SPACE, index_folders_writable
from notarium_search.lean_imports import load_without_console_extras
from notarium_search.logsetup import configure_logging, get_logger
from notarium_search.model_process import ModelProcess, remove_socket_folder, socket_folder, wants_model_process
from notarium_search.preflight import index_held_elsewhere, previous_service_killed
from notarium_search.settings import MODEL_SOCKET_ENV, Settings, log_ignored_folders

log = get_logger(__name__)
PORT_IN_USE = "port"
PORT_HANDOVER_SECONDS = 5.0
PORT_POLL_SECONDS = 0.05


def serve_command(settings: Settings, _: argparse.Namespace) -> int:
    from notarium_search.api.server import serve, worker_count

    # Before any thread starts: structlog without rich, pygments and attrs,
    # here and in every worker forked from here (lean_imports.py).
    load_without_console_extras("structlog")
    configure_logging(settings.log_level)
    # Before anything starts or is written: granian reported a taken port as a
    # JSON log line from its worker, after the indexes were opened and a pass
    # had begun.
    taken = port_unavailable(settings.host, settings.port, waiting=previous_service_killed(settings))
    if taken is not None:
        print(f"notarium-search: {taken}", file=sys.stderr)
        return EXIT_SETUP
    if not index_folders_writable(settings, settings.spaces):  # here, not as a traceback in granian's worker
        return EXIT_SETUP
    # A second service on a live index gave up only after each of its workers
    # had failed, 12-30 s later.
    held = index_held_elsewhere(settings)
    if held is not None:
        print(
            f"notarium-search: {held}: one process writes an index; stop it, or give this one another index_dir",
            file=sys.stderr,
        )
        return 1
    log_ignored_folders(settings)
    if not settings.spaces:  # the page says so too
        log.warning("no_space_configured", detail=NO_SPACE)

    workers = worker_count(settings)
    shared = workers > 1  # several workers: each space written by one, followed by the others
    # The workers' sockets: one copy of the model and of each space's link graph for all (issue 34).
    folder = socket_folder(settings) if shared else None
    model = ModelProcess(settings, folder) if folder is not None and wants_model_process(settings, workers) else None
    if folder is not None:
        settings = replace(settings, sockets_dir=folder)
    if model is not None:
        settings = replace(settings, model_socket=model.socket_path)
        os.environ[MODEL_SOCKET_ENV] = str(model.socket_path)  # the workers' semantic/load_order.py reads it
    served = settings

    def load_app() -> Any:  # in each of the server's worker processes, which open the indexes
        # Before the service starts its threads (the worker's orphan watch,
        # already running, imports nothing until the supervisor is gone):
        # httpx (the model's client, the MCP SDK's) without its command line.
        load_without_console_extras("httpx")
        from notarium_search.api.app import create_app
        from notarium_search.service import Service

        # A space that cannot open (locked since the check above, unreadable…)
        # is reported and tried again (index/registry.py): never a worker that
        # exits, which the supervisor restarts until it gives up on a crash loop.
        return create_app(served, Service(served, shared=shared))

    try:
        if model is not None:
            model.start()
        return serve(settings, load_app)
    finally:
        if model is not None:
            model.stop()
        if folder is not None:
            remove_socket_folder(folder)


def port_unavailable(host: str, port: int, waiting: bool = False) -> str | None:
    """Why the service could not listen on host:port (one sentence), or None.
    A probe bind, closed at once: the server binds right after (a program
    taking the port in between still fails the server's own bind). `waiting`:
    a port in use is probed again for PORT_HANDOVER_SECONDS (the killed
    service's last worker is closing it)."""
    deadline = time.monotonic() + (PORT_HANDOVER_SECONDS if waiting else 0.0)
    while True:
        why = _probe_port(host, port)
        if why is None or not why.startswith(PORT_IN_USE) or time.monotonic() >= deadline:
            return why
        time.sleep(PORT_POLL_SECONDS)


def _probe_port(host: str, port: int) -> str | None:
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
                    f"{PORT_IN_USE} {port} on {host} is already in use (another notarium-search, or another program):"
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
    from notarium_search.mcp.server import run_stdio

    # stdout carries the protocol alone: logs go to stderr, which MCP clients show or keep.
    configure_logging(settings.log_level, sys.stderr)
    raise_descriptor_limit()  # it holds the indexes as `serve` does
    if not index_folders_writable(settings, settings.spaces):  # it writes them as `serve` does
        return EXIT_SETUP
    held = index_held_elsewhere(settings)
    if held is not None:
        print(
            f"notarium-search: {held} (a `serve` or `mcp` on the same index): one process writes an"
            " index; give every client the running service's /mcp endpoint instead (docs/mcp.md)",
            file=sys.stderr,
        )
        return 1
    log_ignored_folders(settings)  # once it can run, as `serve`: a refusal stays one line
    try:
        run_stdio(settings)
    except KeyboardInterrupt:
        return 130
    return 0
