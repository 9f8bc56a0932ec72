"""A container engine for the image tests: Docker where a daemon answers,
else Debian's podman set up for a machine with no daemon and no registry.

The podman set-up (docs/operations.md, "Building without a Docker daemon")
is what makes builds work on the project's CI machines: runc (crun refuses
their cgroups), default ulimits within the sandbox's hard limits, storage in
a work folder, and a base image made by mmdebstrap from the host's own apt
sources and imported under the name the Dockerfile's FROM uses. The host's
CA bundle reaches pip through a build-time mount only, so nothing of the
host lands in an image.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
# Bounds on commands that normally take seconds (a build: one to three
# minutes on 2 cores); they only stop a hung engine from hanging CI.
COMMAND_SECONDS = 300.0
BUILD_SECONDS = 1800.0
# What the base image needs: the Python the Dockerfile's stages run.
BASE_PACKAGES = "python3,python3-venv,python-is-python3,ca-certificates"
# Like Debian's slim images: no manuals, translations or docs (copyrights stay).
BASE_EXCLUDES = ("/usr/share/man/*", "/usr/share/locale/*", "/usr/share/doc/*")
BASE_INCLUDES = ("/usr/share/doc/*/copyright",)
HOST_CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")


class EngineError(RuntimeError):
    """A container command failed; the message carries its output."""


@dataclass
class Engine:
    """One container engine and the options this machine needs."""

    name: str  # "docker" or "podman"
    env: dict[str, str] = field(default_factory=dict)
    build_options: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)  # what preparing it did, for the run's summary

    def run(self, *args: str, timeout: float = COMMAND_SECONDS, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.name, *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise EngineError(f"{self.name} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def inspect(self, what: str, *, kind: str = "container") -> dict[str, object]:
        found: list[dict[str, object]] = json.loads(self.run(kind, "inspect", what).stdout)
        return found[0]

    def image_size(self, tag: str) -> int:
        return int(self.run("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def base_image() -> str:
    """The image the Dockerfile's first FROM names, its ARG default applied."""
    text = DOCKERFILE.read_text()
    defaults = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    found = re.search(r"^FROM (\S+)", text, re.M)
    if found is None:
        raise EngineError("the Dockerfile has no FROM")
    return re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], found.group(1))


def find_engine(work: Path) -> Engine:
    """Docker when its daemon answers (or NOTARIUM_CONTAINER_ENGINE=docker),
    else podman prepared in `work`."""
    wanted = os.environ.get("NOTARIUM_CONTAINER_ENGINE", "")
    if wanted == "docker" or (not wanted and _docker_answers()):
        return Engine("docker")
    if shutil.which("podman") is None:
        raise EngineError("no Docker daemon answers and podman is not installed (bash .ci/docker-smoke installs it)")
    return _podman(work)


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def _podman(work: Path) -> Engine:
    work.mkdir(parents=True, exist_ok=True)
    nofile = _within_hard_limit(resource.RLIMIT_NOFILE, 20000)
    nproc = _within_hard_limit(resource.RLIMIT_NPROC, 32768)
    (work / "containers.conf").write_text(
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )
    (work / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{work / "storage"}"\nrunroot = "{work / "run"}"\n'
    )
    engine = Engine(
        "podman",
        env={"CONTAINERS_CONF": str(work / "containers.conf"), "CONTAINERS_STORAGE_CONF": str(work / "storage.conf")},
        # --format docker: the OCI format has no HEALTHCHECK. --network host:
        # pip reaches the registry the way the host does.
        build_options=["--pull=never", "--format", "docker", "--network", "host", *_host_ca_mounts(work)],
    )
    engine.setup.append(_ensure_base(engine, work))
    return engine


def _within_hard_limit(limit: int, wanted: int) -> int:
    hard = resource.getrlimit(limit)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _host_ca_mounts(work: Path) -> list[str]:
    """The host's CA bundle and a pip.conf naming it, mounted for the build's
    RUN steps only (a TLS-intercepting proxy's CA is in it on such hosts)."""
    bundle = next((path for path in HOST_CA_BUNDLES if Path(path).is_file()), None)
    if bundle is None:
        return []
    pip_conf = work / "pip.conf"
    pip_conf.write_text("[global]\ncert = /run/host-ca.crt\n")
    return ["-v", f"{bundle}:/run/host-ca.crt:ro", "-v", f"{pip_conf}:/etc/pip.conf:ro"]


def _ensure_base(engine: Engine, work: Path) -> str:
    name = base_image()
    qualified = name if "/" in name else f"docker.io/library/{name}"
    if engine.run("image", "exists", qualified, check=False).returncode == 0:
        return f"base image {qualified}: already in {work}"
    sources = host_apt_sources()
    suite = _debian_suite(name)
    rootfs = work / "rootfs.tar"
    options = [f"--dpkgopt=path-exclude={p}" for p in BASE_EXCLUDES]
    options += [f"--dpkgopt=path-include={p}" for p in BASE_INCLUDES]
    started = time.monotonic()
    done = subprocess.run(
        ["mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", *options, suite, str(rootfs), str(sources)],
        capture_output=True,
        text=True,
        timeout=BUILD_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise EngineError(f"mmdebstrap failed:\n{done.stderr[-3000:]}")
    engine.run("import", str(rootfs), qualified)
    rootfs.unlink()
    size = engine.image_size(qualified) / 1e6
    return f"base image {qualified}: made with mmdebstrap in {time.monotonic() - started:.0f} s, {size:.0f} MB"


def host_apt_sources() -> Path:
    """The host's own apt sources (deb822 or one-line), read at run time so
    that no mirror's host name is written into the repository."""
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        if "debian" in path.read_text():
            return path
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file() and legacy.read_text().strip():
        return legacy
    raise EngineError("no Debian apt sources on this host to make the base image from")


def _debian_suite(image: str) -> str:
    """`python:3.11-slim-bookworm` → `bookworm`: the release the tag names."""
    suite = image.rsplit("-", 1)[-1]
    if not suite.isalpha() or suite == "slim":
        raise EngineError(f"the base {image} names no Debian release (e.g. python:3.11-slim-bookworm)")
    return suite
