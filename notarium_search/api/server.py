"""Serving the application over HTTP: granian, supervised worker processes.

Chosen over uvicorn by measurement (docs/benchmarks.md, "HTTP server"):
uvicorn cannot bound the time a client takes to send its headers, and with
1,100 connections opened and never finished at a descriptor limit of 1,024
it timed out every real request and logged 260,065 accept errors in 25 s.
granian, as set up here:

- closes a connection whose request headers are not complete within
  `header_timeout` (a new connection's first request and every next one);
  only in HTTP/1 mode: its "auto" mode waits forever on a silent connection;
- holds at most `max_connections` connections (`backpressure`): more wait
  in the listen queue instead of being refused or answered 503, and the
  bound stays below the descriptor limit, which is raised to the hard limit
  first, so the index writer keeps descriptors of its own;
- believes forwarding headers only from `trusted_proxies` (none by default:
  uvicorn trusted them from 127.0.0.1, so a local client rotating
  X-Forwarded-For was never rate-limited and forged the access log);
- runs the application in `workers` processes (one per core by default),
  which a supervisor restarts when one dies: Tantivy maps its segment files,
  and a segment truncated under a running reader kills the process with
  SIGBUS; a new worker finds damage at open and rebuilds. The first worker
  to open a space writes it, the others follow its commits
  (index/follower.py); a writer that dies is replaced by the next worker to
  start. A worker that dies again within 5.5 s of a restart ends the service
  (exit 1), for a restart policy (Docker's) to take over.

HTTP speed was within noise of uvicorn's (p50 1.94 vs 2.10 ms, 463 vs 433
queries/s at 4 clients, interleaved rounds); the supervisor costs ~35 MiB.
"""

from __future__ import annotations

import faulthandler
import logging
import math
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from notarium_search.logsetup import FloodFilter, get_logger
from notarium_search.settings import Settings

# Descriptors kept out of the connection bound: the indexes' segment files,
# inotify watches, logs and the worker threads.
FD_RESERVE = 256
LISTEN_BACKLOG_MAX = 4096
RESPAWN_DELAY_SECONDS = 1.0
# `workers = 0` (one per core) stops here: each worker holds its own indexes'
# bookkeeping (the model is the model process's: model_process.py), and the
# gain was measured on 2 cores only (docs/benchmarks.md); more is a setting away.
DEFAULT_WORKERS_MAX = 8
CGROUP = Path("/sys/fs/cgroup")
HANDLERS_WAIT_SECONDS = 60.0  # for granian's worker handlers, after the app is built
STOPS = {signal.SIGINT, signal.SIGTERM}
ORPHAN_CHECK_SECONDS = 1.0
# A worker none of whose Python code could run for this long is ended, and
# replaced by the supervisor: nothing the service does holds the GIL that long.
STUCK_SECONDS = 60.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h

log = get_logger(__name__)


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (the common soft limit
    of 1,024 ran out under 1,100 connections); returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            log.warning("descriptor_limit_not_raised", soft=soft, hard=hard, error=str(exc))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connection_bound(settings: Settings, soft_limit: int) -> int:
    return max(1, min(settings.max_connections, soft_limit - FD_RESERVE))


def worker_count(settings: Settings, cgroup: Path = CGROUP) -> int:
    """The `workers` setting; 0 reads as the cores this process may run on —
    the CPUs it may be scheduled on, within its cgroup's CPU quota (a container
    started with `--cpus 2` on a 32-core host sees 32 CPUs, but gets the time
    of 2) — and at most DEFAULT_WORKERS_MAX."""
    if settings.workers:
        return settings.workers
    cores = len(os.sched_getaffinity(0))
    quota = cgroup_cpu_quota(cgroup)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return min(cores, DEFAULT_WORKERS_MAX)


def cgroup_cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """CPUs' worth of time the cgroup (v2's cpu.max, v1's cfs files) allows, or None: no quota."""
    try:
        fields = (cgroup / "cpu.max").read_text().split()
        if fields and fields[0] != "max":
            return int(fields[0]) / int(fields[1])
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def serve(settings: Settings, load_app: Callable[[], Any]) -> int:
    """Run the service until SIGTERM/SIGINT; the exit code (1 when a worker
    kept dying). `load_app` builds the ASGI app in each worker."""
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server import MPServer

    soft = raise_descriptor_limit()
    for handler in logging.getLogger().handlers:
        handler.addFilter(FloodFilter())
    bound = connection_bound(settings, soft)
    workers = worker_count(settings)
    log.info(
        "serve_limits",
        descriptors=soft,
        max_connections=bound,
        header_timeout=settings.header_timeout,
        trusted_proxies=list(settings.trusted_proxies),
        workers=workers,
    )
    supervisor = os.getpid()
    # Each worker remembers stops from its first instruction: a stop between the
    # fork and worker_app was lost too. Stops are held back across the fork (the
    # child inherits the mask), then let through once the worker's handler is in.
    os.register_at_fork(
        before=_FORKED.hold_stops, after_in_parent=_FORKED.release_stops, after_in_child=_FORKED.remember_stops
    )

    def worker_app() -> Any:  # in each worker: the processes that open the indexes
        _die_with(supervisor)
        faulthandler.enable(file=sys.stderr, all_threads=True)  # a fatal signal's stacks, on stderr
        stops = _FORKED.stops or _StopMemo()
        app = load_app()
        stops.pass_on()
        if not settings.trusted_proxies:
            return app
        from granian.utils.proxies import wrap_asgi_with_proxy_headers

        return wrap_asgi_with_proxy_headers(app, list(settings.trusted_proxies))

    server = MPServer(
        "notarium_search.api.app:create_app",  # a name only: worker_app builds the app
        address=settings.host,
        port=settings.port,
        interface=Interfaces.ASGI,  # with the lifespan: the service starts and stops in the worker
        workers=workers,
        http=HTTPModes.http1,
        http1_settings=HTTP1Settings(header_read_timeout=round(settings.header_timeout * 1000)),
        backpressure=bound,
        backlog=min(bound, LISTEN_BACKLOG_MAX),
        respawn_failed_workers=True,
        respawn_interval=RESPAWN_DELAY_SECONDS,
        log_level=LogLevels(settings.log_level.lower()),
        log_access=False,  # api/access_log.py logs each request as structured fields
        log_dictconfig={
            "loggers": {  # no handler of granian's own: records go to the one JSON handler (logsetup)
                "_granian": {"handlers": [], "propagate": True},
            }
        },
    )
    try:
        server.serve(target_loader=worker_app, wrap_loader=False)
    except SystemExit as exc:  # granian's own exit code: 1 when the worker died and was not replaced
        return int(exc.code or 0)
    return 0


class _StopMemo:
    """A stop asked while the worker builds its app, remembered. The worker
    is forked with the supervisor's signal handlers, which set a flag in the
    supervisor's memory, not the worker's; granian installs the worker's own
    only once the app is built. A SIGTERM in between was lost, and the worker
    served on while the supervisor waited for it forever (with two workers,
    a stop 0.3-1.5 s after start hung 4 times in 12)."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        for stop in STOPS:
            signal.signal(stop, self)

    def __call__(self, signum: int, frame: object) -> None:
        self.asked.set()

    def pass_on(self) -> None:
        """Once granian's handlers replace this one, a remembered stop is sent
        again, to them (from a thread: they are installed after the app is returned)."""

        def wait_then_pass_on() -> None:
            deadline = time.monotonic() + HANDLERS_WAIT_SECONDS
            while signal.getsignal(signal.SIGTERM) is self and time.monotonic() < deadline:
                time.sleep(0.01)
            if self.asked.is_set():
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=wait_then_pass_on, name="stop-relay", daemon=True).start()


class _Forked:
    """What a worker sets up as soon as it is forked."""

    stops: _StopMemo | None = None

    def hold_stops(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)

    def release_stops(self) -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)

    def remember_stops(self) -> None:
        self.stops = _StopMemo()
        self.release_stops()  # a stop sent meanwhile, pending, now reaches the memo


_FORKED = _Forked()


def _die_with(parent: int) -> None:
    """The worker is killed (SIGKILL) when the supervisor dies, even by
    SIGKILL: no orphan keeps the port and the index lock. On Linux the kernel
    sends it (PR_SET_PDEATHSIG). It was SIGTERM, for a graceful stop, but a
    worker could then hang in granian's signal handler, holding the GIL, until
    the watchdog below ended it (60 s), still holding the index lock: a service
    restarted meanwhile failed to take it and its supervisor gave up on a crash
    loop. Nothing is lost by the kill: a commit is atomic, one cut short is
    redone from the manifest's journal (index/manifest.py), and a new writer
    waits for a lock whose holder is on its way out (index/lock.py).

    A watchdog also ends a worker none of whose Python code could run for
    STUCK_SECONDS (the supervisor then starts another): faulthandler's timer
    runs without the GIL, re-armed every second. Where PR_SET_PDEATHSIG does
    not exist, the same thread ends an orphan within ORPHAN_CHECK_SECONDS."""
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the supervisor died before the prctl
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            faulthandler.dump_traceback_later(STUCK_SECONDS, exit=True)
            time.sleep(ORPHAN_CHECK_SECONDS)
        log.warning("supervisor_gone", action="exiting")
        os._exit(1)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()
