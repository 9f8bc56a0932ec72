"""`serve`'s model process, started before the workers and restarted when it
dies (issue 34): one copy of the embedding model per service, whatever the
number of workers (semantic/model_server.py; the workers' client is
semantic/shared_model.py).

Used when several workers search with VECTOR_SEARCH and a local pack
(`model_dir`) embeds: one worker keeps the model in its own process (no
socket between a query and its model), and an `embed_url` server is the
model process of its own setup.

The socket lives in a folder made for it (mode 0700 in the system's
temporary folder: a Unix socket's path is limited to 108 bytes, which an
index folder's path may exceed), so only the service's user can connect.
The process gets a session of its own: a Ctrl+C in the terminal reaches the
service, which stops it, not the process directly (it would be restarted
meanwhile). It dies with the service (semantic/model_server.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from notarium_search.logsetup import get_logger

# At the top, so imported before granian forks the workers: the probe's thread
# importing a module while a worker was forked left that module's import lock
# held in the worker, whose model loader then waited on it forever.
from notarium_search.semantic import model_probe
from notarium_search.settings import Settings
from notarium_search.storage import sockets_folder

SOCKET_NAME = "model.sock"
# A process that dies is started again after RESTART_FIRST_SECONDS, doubling
# up to RESTART_MAX_SECONDS while it keeps dying; one that ran for
# STABLE_SECONDS starts the count again. Meanwhile answers are keyword answers.
RESTART_FIRST_SECONDS = 1.0
RESTART_MAX_SECONDS = 30.0
STABLE_SECONDS = 60.0
STOP_WAIT_SECONDS = 10.0
# A process that hangs does not exit: every PROBE_SECONDS it is asked its
# state and, its model loaded, to embed one word; PROBE_MISSES answers
# missing within PROBE_TIMEOUT_SECONDS each (one word takes ~10 ms; a slice
# of passages beside it runs on other threads) and it is killed, then
# restarted as above. Nothing listening yet (a process starting) is no miss.
PROBE_SECONDS = 10.0
PROBE_TIMEOUT_SECONDS = 30.0
PROBE_MISSES = 2

log = get_logger(__name__)


def wants_model_process(settings: Settings, workers: int) -> bool:
    """Whether `serve` with `workers` workers runs a model process."""
    return workers > 1 and settings.vector_search and settings.model_dir is not None and settings.embed_url is None


def socket_folder(settings: Settings) -> Path | None:
    """A new folder (mode 0700, locked while the service runs:
    storage/sockets_folder.py) for the sockets between a `serve`'s processes
    (the model process's, each space writer's link graph: graph/remote.py):
    in the system's temporary folder, else (a container run with a read-only
    root) in the index folder when its path leaves room for a socket's name;
    None: neither (logged; each worker then loads its own model and reads its
    own link graph, as before). Removed by `sockets_folder.remove`."""
    folder = sockets_folder.make([None, str(settings.index_dir)], SOCKET_NAME)
    if folder is None:
        log.warning(
            "sockets_unavailable", reason="no folder for the sockets: each worker loads its own model and graph"
        )
    return folder


def remove_socket_folder(folder: Path) -> None:
    """`socket_folder`'s folder removed and let go, at the service's stop."""
    sockets_folder.remove(folder)


class ModelProcess:
    """The model process of one `serve`: `start` before the workers, `stop` after them."""

    def __init__(self, settings: Settings, folder: Path) -> None:
        self.settings = settings
        self._folder = folder
        self.socket_path = folder / SOCKET_NAME
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        """Processes started so far (the first, then each restart)."""
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher = threading.Thread(target=self._watch, name="model-process", daemon=True)
        self._prober = threading.Thread(target=self._probe, name="model-probe", daemon=True)

    def start(self) -> None:
        self._spawn()
        self._watcher.start()
        self._prober.start()

    def _command(self) -> list[str]:
        settings = self.settings
        given = {
            "model_dir": str(settings.model_dir),
            "model": dict(settings.model),
            "threads": settings.embed_threads,
            "batch_size": settings.embed_batch_size,
            "log_level": settings.log_level,
        }
        return [
            sys.executable,
            "-m",
            "notarium_search.semantic.model_server",
            "--socket",
            str(self.socket_path),
            "--parent",
            str(os.getpid()),
            "--settings",
            json.dumps(given),
        ]

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self.process = subprocess.Popen(self._command(), start_new_session=True)
            self.starts += 1

    def _watch(self) -> None:
        """Started again whenever it exits, until the service stops. This
        thread forked it, and PR_SET_PDEATHSIG kills it when this thread
        ends: nothing may end it but a stop (a failed start is tried again)."""
        delay = RESTART_FIRST_SECONDS
        while not self._stopping.is_set():
            process = self.process
            started = time.monotonic()
            code = process.wait() if process is not None else None
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= STABLE_SECONDS:
                delay = RESTART_FIRST_SECONDS
            pid = process.pid if process is not None else None
            log.error("model_process_exited", code=code, pid=pid, restart_in=delay)
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, RESTART_MAX_SECONDS)
            try:
                self._spawn()
            except Exception as exc:  # noqa: BLE001 - fork failing (EAGAIN, ENOMEM): tried again later
                log.error("model_process_not_started", error=str(exc))
                self.process = None

    def _probe(self) -> None:
        """Kills the process when it stops answering (see PROBE_SECONDS)."""
        misses = 0
        while not self._stopping.wait(PROBE_SECONDS):
            process = self.process
            if process is None or process.poll() is not None:
                misses = 0  # starting again, or gone: the watcher's
                continue
            answered = model_probe.responsive(self.socket_path, PROBE_TIMEOUT_SECONDS)
            misses = misses + 1 if answered is False else 0  # None: not listening yet (starting)
            if misses >= PROBE_MISSES and process.poll() is None:
                log.error("model_process_unresponsive", pid=process.pid, action="killed, to be started again")
                process.kill()
                misses = 0

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for thread in (self._watcher, self._prober):
            if thread.is_alive():
                thread.join(STOP_WAIT_SECONDS)
        sockets_folder.remove(self._folder)
