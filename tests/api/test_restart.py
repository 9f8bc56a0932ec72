"""A service whose supervisor is killed (`kill -9`) in the middle of its
first build, then started again at once: its workers die with it, the new
one takes the index over, answers, and ends with what a clean build holds.

Before: the killed supervisor's workers were asked to stop (SIGTERM) and one
could hang in granian's signal handler for 60 s, holding the index lock; the
service started meanwhile failed ("in use by another process") and its
supervisor gave up on a crash loop."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from notarium_search.lexical import stored as stored_notes
from notarium_search.service import Service
from notarium_search.settings import Settings
from tests.api.test_server import STARTUP_SECONDS, Served, wait_until_ready
from tests.conftest import Vault, eventually

NOTES = 6000  # a first build of seconds on a quiet machine: long enough to be caught in the middle


def write_many(vault: Vault) -> None:
    for i in range(NOTES):
        vault.write(f"d{i % 20}/n{i:05}.md", f"---\nid: n{i:05}\ntags: [t{i % 7}]\n---\nLe registre numéro {i}.\n")


def contents(settings: Settings) -> dict[str, str]:
    service = Service(settings, read_only=True)
    try:
        return {p.id: p.text for p in stored_notes.all_payloads(service.spaces["notes"].lexical)}
    finally:
        service.stop()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited


@pytest.mark.slow
def test_a_supervisor_killed_mid_build_then_restarted_at_once(vault: Vault, tmp_path: Path):
    write_many(vault)
    # French, as `vault.settings()` says, so that the index compares with the one built below.
    first = Served(vault, tmp_path, NOTARIUM_WORKERS="2", NOTARIUM_LANGUAGE="fr")
    try:
        with first.client(timeout=10) as client:

            def building() -> bool:
                assert first.process.poll() is None
                try:
                    spaces: list[dict[str, Any]] = client.get("/status").json()["spaces"]
                except (httpx.TransportError, ValueError):
                    return False
                lexical_status = spaces[0]["lexical"]
                assert lexical_status["state"] != "ready", "the build ended before it was caught: more notes"
                return bool(lexical_status["state"] == "building" and lexical_status["indexed"] > 0)

            eventually(building, timeout=STARTUP_SECONDS)
        workers = first.workers()
        assert workers
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        # At once: no wait for the old workers (they hold the lock and the port for a moment).
        second = Served(vault, tmp_path, NOTARIUM_WORKERS="2", NOTARIUM_PORT=str(first.port), NOTARIUM_LANGUAGE="fr")
        second.port, second.base = first.port, first.base
        try:
            eventually(lambda: not any(alive(w) for w in workers), timeout=STARTUP_SECONDS)  # died with it
            with second.client() as client:
                wait_until_ready(client, second.process)
                found = client.get("/spaces/notes/search", params={"q": "registre 4321"}).json()
                assert found["results"][0]["id"] == "n04321"
            assert second.process.poll() is None
        finally:
            assert second.stop() == 0
        assert "crash loop" not in second.log()
    finally:
        first.stop()
    settings = Settings(spaces=vault.settings().spaces, index_dir=first.index_dir)
    clean = Settings(spaces=vault.settings().spaces, index_dir=tmp_path / "clean")
    built = Service(clean)
    built.spaces["notes"].writing.run_reconcile()
    built.stop()
    assert contents(settings) == contents(clean)


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
# A worker that does not stop on SIGTERM (granian's handler hung with the GIL
# held, 2 stops in 10): here a handler that returns, as deaf and deterministic.
DEAF_WORKER = """
import os, signal, sys, time
from notarium_search.api import server
parent = os.getppid()
server._die_with(parent)
signal.signal(signal.SIGTERM, lambda *args: None)
print("ready", flush=True)
time.sleep(3600)
"""
SUPERVISOR = """
import subprocess, sys
worker = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
assert worker.stdout.readline() == "ready\\n"
print(worker.pid, flush=True)
worker.wait()
"""


@pytest.mark.skipif(not Path("/proc").exists(), reason="PR_SET_PDEATHSIG and subreapers are Linux's")
def test_a_worker_deaf_to_sigterm_dies_with_its_killed_supervisor():
    """The kernel kills the worker (SIGKILL) when the supervisor dies: it
    cannot hang on, holding the index lock and the port (it was SIGTERM,
    then the watchdog's exit 30 s later)."""
    import ctypes
    import subprocess
    import sys

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the orphaned worker becomes ours: its end can be read
    try:
        supervisor = subprocess.Popen(
            [sys.executable, "-c", SUPERVISOR, DEAF_WORKER], stdout=subprocess.PIPE, text=True
        )
        assert supervisor.stdout is not None
        worker = int(supervisor.stdout.readline())
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
        _, status = os.waitpid(worker, 0)  # no bound but the test's: the worker must end
        assert os.WIFSIGNALED(status), f"exited with {os.WEXITSTATUS(status)}: it outlived its supervisor"
        assert os.WTERMSIG(status) == signal.SIGKILL
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
