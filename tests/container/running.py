"""Images built from the repository's Dockerfile, and containers run from
them the way the README says: notes mounted read-only on /notes, indexes on
a volume at /data, the port published on the host's loopback."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import stat
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.container.engine import BUILD_SECONDS, ROOT, Engine, EngineError

# A bound on waiting for a container to index the sample vault (a second or
# two idle; the semantic tier embeds 9 notes) on a loaded 2-core machine.
READY_SECONDS = 180.0
# The time `docker stop` gives before SIGKILL in the checks: the issue's
# bound on a graceful stop (the service needs well under a second idle).
STOP_SECONDS = 5
SAMPLE_VAULT = ROOT / "docs" / "sample-vault"
# On every container and volume the checks make: a run killed half-way is
# swept by the next one (conftest.py), and nothing else is touched.
LABEL = "notarium-search-smoke=1"
FALLBACKS: list[str] = []  # containers that could not publish a port (the summary says so)


@dataclass(frozen=True)
class Built:
    tier: str
    tag: str
    seconds: float
    size: int  # bytes, as the engine reports the image


def build(engine: Engine, tier: str, build_args: dict[str, str]) -> Built:
    tag = f"notarium-search-smoke:{tier}"
    # Every layer built anew (honest timings, and what a clean machine does),
    # unless NOTARIUM_CONTAINER_CACHE=1 while iterating on the checks.
    cache = [] if os.environ.get("NOTARIUM_CONTAINER_CACHE") == "1" else ["--no-cache"]
    started = time.monotonic()
    engine.run(
        "build", *engine.build_options, *cache, *_build_args(build_args), "-t", tag, str(ROOT), timeout=BUILD_SECONDS
    )
    return Built(tier, tag, time.monotonic() - started, engine.image_size(tag))


def build_refused(engine: Engine, build_args: dict[str, str]) -> str:
    """A build expected to fail: its output. Layers already built this session
    are reused (the failures come after the install step, or before it)."""
    done = engine.run(
        "build", *engine.build_options, *_build_args(build_args), str(ROOT), timeout=BUILD_SECONDS, check=False
    )
    assert done.returncode != 0, "the build should have failed"
    return done.stdout + done.stderr


def _build_args(build_args: dict[str, str]) -> list[str]:
    return [arg for key, value in build_args.items() for arg in ("--build-arg", f"{key}={value}")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def copy_sample_vault(target: Path) -> Path:
    shutil.copytree(SAMPLE_VAULT, target)
    return target


def fingerprint(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file's and folder's mode, modification time and content hash."""
    seen: dict[str, tuple[int, int, str]] = {}
    for path in sorted([folder, *folder.rglob("*")]):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode) else ""
        seen[str(path.relative_to(folder))] = (info.st_mode, info.st_mtime_ns, digest)
    return seen


class Container:
    """One container of an image, published on 127.0.0.1."""

    def __init__(self, engine: Engine, image: str, name: str, notes: Path, data: str, *extra: str) -> None:
        self.engine, self.image, self.name = engine, image, name
        self.notes, self.data, self.extra = notes, data, extra
        self.port = 0  # known once started: the engine picks a free one
        self.on_host_network = False

    def start_new(self) -> None:
        self.engine.run("rm", "--force", self.name, check=False)
        mounts = ["-v", f"{self.notes}:/notes:ro", "-v", f"{self.data}:/data"]
        run = ["run", "-d", "--name", self.name, "--label", LABEL]
        # -p 127.0.0.1::8377: the engine binds a free port itself (no probe-then-bind race).
        done = self.engine.run(*run, "-p", "127.0.0.1::8377", *mounts, *self.extra, self.image, check=False)
        if done.returncode == 0:
            self._published_port()
        elif "network" in done.stderr.lower():
            # A machine that refuses the bridge: the host's network, on loopback.
            self.engine.run("rm", "--force", self.name, check=False)
            self.port = free_port()
            on_host = ["--network", "host", "-e", "NOTARIUM_HOST=127.0.0.1", "-e", f"NOTARIUM_PORT={self.port}"]
            self.engine.run(*run, *on_host, *mounts, *self.extra, self.image)
            self.on_host_network = True
            FALLBACKS.append(
                f"{self.name}: the bridge was refused ({done.stderr.strip()[:200]}); ran on the host network"
            )
        else:
            raise EngineError(f"{self.engine.name} run exited {done.returncode}:\n{done.stderr}")

    def restart(self) -> None:
        self.engine.run("start", self.name)
        if not self.on_host_network:
            self._published_port()  # Docker picks another port at each start

    def _published_port(self) -> None:
        published = self.engine.run("port", self.name, "8377/tcp").stdout.split()
        self.port = int(published[0].rsplit(":", 1)[1])  # "127.0.0.1:43121"

    def stop(self) -> tuple[float, int]:
        """SIGTERM, then SIGKILL after STOP_SECONDS: seconds taken, exit code."""
        started = time.monotonic()
        self.engine.run("stop", "--time", str(STOP_SECONDS), self.name)
        seconds = time.monotonic() - started
        return seconds, self.exit_code()

    def wait_exit(self, timeout: float = READY_SECONDS) -> int:
        self.engine.run("wait", self.name, timeout=timeout)
        return self.exit_code()

    def exit_code(self) -> int:
        state: Any = self.engine.inspect(self.name)["State"]
        return int(state["ExitCode"])

    def remove(self) -> None:
        self.engine.run("rm", "--force", self.name, check=False)

    def new_events(self, event: str, after: int, spaces: set[str]) -> list[dict[str, Any]]:
        """The `event` records logged after the first `after` ones, once every
        space of `spaces` has logged one (a bounded poll: the status can say
        ready a moment before the line reaches the engine's log)."""
        deadline = time.monotonic() + READY_SECONDS
        while True:
            found = self.log_events(event)[after:]
            if {record.get("space") for record in found} >= spaces:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"no {event} for {spaces} after the first {after}:\n{self.logs()[-4000:]}")
            time.sleep(0.2)

    def logs(self) -> str:
        done = self.engine.run("logs", self.name)
        return done.stdout + done.stderr

    def log_events(self, event: str) -> list[dict[str, Any]]:
        found = []
        for line in self.logs().splitlines():
            if line.startswith("{") and f'"{event}"' in line:
                record = json.loads(line)
                if record.get("event") == event:
                    found.append(record)
        return found

    def exec(self, *command: str) -> tuple[int, str]:
        done = self.engine.run("exec", self.name, *command, check=False)
        return done.returncode, done.stdout + done.stderr

    def get(self, path: str) -> tuple[int, bytes, str]:
        """Status, body and content type of a GET on the published port."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read(), answer.headers.get("content-type", "")
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read(), refused.headers.get("content-type", "")

    def get_json(self, path: str) -> Any:
        status, body, _ = self.get(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)

    def post_json(self, path: str, payload: Any, headers: dict[str, str]) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", **headers},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())

    def wait_answering(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"/healthz never answered; logs:\n{self.logs()[-4000:]}")
            time.sleep(0.2)

    def wait_ready(self, *, semantic: bool) -> dict[str, Any]:
        """Poll /status until every space's index is ready (and embedded)."""
        self.wait_answering()
        deadline = time.monotonic() + READY_SECONDS
        while True:
            status: dict[str, Any] = self.get_json("/status")
            if status["spaces"] and all(_space_ready(space, semantic) for space in status["spaces"]):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(f"not ready: {json.dumps(status)[:3000]}\nlogs:\n{self.logs()[-4000:]}")
            time.sleep(0.3)


def _space_ready(space: dict[str, Any], semantic: bool) -> bool:
    lexical_ready = space["lexical"]["state"] == "ready"
    return lexical_ready and (not semantic or space["semantic"]["state"] == "ready")


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 1_000_000}"


def new_volume(engine: Engine, prefix: str) -> str:
    """A named volume, as the README's `-v notarium-index:/data`, labelled."""
    name = unique(prefix)
    engine.run("volume", "create", "--label", LABEL, name)
    return name


def sweep(engine: Engine) -> None:
    """Containers and volumes a killed run of these checks left behind."""
    containers = engine.run("ps", "-a", "-q", "--filter", f"label={LABEL}").stdout.split()
    if containers:
        engine.run("rm", "--force", *containers, check=False)
    volumes = engine.run("volume", "ls", "-q", "--filter", f"label={LABEL}").stdout.split()
    if volumes:
        engine.run("volume", "rm", "--force", *volumes, check=False)


def chown_in_container(engine: Engine, image: str, folder: Path, owner: str) -> None:
    """`chown -R owner folder` as root in a throwaway container: the checks
    themselves may run as a user of the docker group, not as root."""
    chown = ["--user", "0:0", "--entrypoint", "chown", "-v", f"{folder}:/folder"]
    engine.run("run", "--rm", "--label", LABEL, *chown, image, "-R", owner, "/folder")
