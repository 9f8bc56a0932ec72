"""Shared fixtures: real spaces on disk, real Tantivy indexes, real services."""

from __future__ import annotations

import gc
import io
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from notarium_search.logsetup import configure_logging
from notarium_search.semantic.load_order import before_usearch
from notarium_search.service import Service
from notarium_search.settings import CollectionConfig, Settings, SpaceConfig
from tests.fake_hub import FakeHub, serving


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Writer jobs freeze whatever is alive (collector.py); in one test process
    that is every running test's objects, which would outlive their test:
    thawed after each test, the collector reclaims them as it would."""
    gc.unfreeze()


configure_logging("warning")
before_usearch()  # onnxruntime first: a test importing usearch itself would make a later embedder crash

TEST_CLIENT_HOST = "testserver.local"
WAIT_SECONDS = 60.0  # a bound on waiting for a 2-core machine at a tenth of its speed; usually under a second


def eventually(check: Callable[[], bool], timeout: float = WAIT_SECONDS) -> None:
    """Poll `check` until it holds: what a background thread (writer, watcher) does."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not reflected in time")
        time.sleep(0.05)


PROJECT_ROOT = Path(__file__).resolve().parents[1]
CHILD_SECONDS = 240.0  # a bound on waiting for a child's script, for a loaded 2-core machine


def run_child(script: str, *args: str) -> dict[str, Any]:
    """Run a Python script in a child process (what must not happen to the
    test process: a descriptor table filled, a file-size limit) and return the
    JSON object its last line prints."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class Vault:
    """A temporary spaces root whose files tests write, plus an index dir."""

    def __init__(self, root: Path) -> None:
        self.root = root / "spaces"
        self.index_dir = root / "index"
        self.root.mkdir()

    def write(self, rel_path: str, content: str | bytes, space: str = "notes", mtime: float | None = None) -> Path:
        path = self.root / space / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        else:
            # Distinct mtimes even within one clock tick, so edits are always seen.
            stamp = time.time() + _tick()
            os.utime(path, (stamp, stamp))
        return path

    def remove(self, rel_path: str, space: str = "notes") -> None:
        (self.root / space / rel_path).unlink()

    def settings(self, *, collections: tuple[CollectionConfig, ...] = (), **overrides: object) -> Settings:
        """Every folder of the root is a space; `collections` go to the "notes" space."""
        spaces = []
        for child in sorted(self.root.iterdir()):
            language = "en" if child.name.startswith("en") else "fr"
            own = collections if child.name == "notes" else ()
            spaces.append(SpaceConfig(child.name, child, language, collections=own))
        # No rate limit unless a test sets one: fuzz tests send thousands of requests.
        # Litestar's TestClient addresses the app as testserver.local: an allowed
        # name here, refused by default (tests/api/test_exposure.py checks the default).
        base = Settings(
            spaces=tuple(spaces),
            spaces_root=self.root,
            index_dir=self.index_dir,
            log_level="warning",
            rate_limit_per_minute=0,
            allowed_hosts=(TEST_CLIENT_HOST,),
            # The semantic channel answers however slow the machine is, unless a test
            # sets a deadline to see it fire: 300 ms made every hybrid assertion a race.
            query_embed_timeout_ms=60_000,
        )
        return replace(base, **overrides)

    def service(self, *, collections: tuple[CollectionConfig, ...] = (), **overrides: object) -> Service:
        """A service whose spaces are fully indexed (synchronously)."""
        service = Service(self.settings(collections=collections, **overrides))
        for space in service.spaces.values():
            space.writing.run_reconcile()
        return service


_counter = [0]


def _tick() -> float:
    _counter[0] += 1
    return _counter[0] * 0.001


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path)


def ids(response: object) -> list[str]:
    return [hit.note.id for hit in response.results]  # type: ignore[attr-defined]


def models_dir() -> Path:
    """The shared ONNX packs: NOTARIUM_MODELS_DIR (set by .ci/run), else ../shared/models.
    Missing packs fail the test in CI (never a silent skip), skip it elsewhere."""
    path = Path(os.environ.get("NOTARIUM_MODELS_DIR", Path(__file__).resolve().parents[2] / "shared" / "models"))
    if not (path / "all-minilm-l6-v2-int8" / "model.onnx").exists():
        if os.environ.get("CI"):
            pytest.fail(f"model packs missing in CI: {path}")
        pytest.skip(f"model packs not found: {path} (set NOTARIUM_MODELS_DIR)")
    return path


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """A model hub listening on 127.0.0.1 (tests/fake_hub.py), empty until a
    test adds repositories; HF_ENDPOINT points at it, and huggingface_hub's
    home is the test's own (no token or cache of the machine's is used)."""
    with serving() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield hub


class HashEmbedder:
    """Deterministic stand-in behind the Embedder interface, for pipeline tests:
    a bag of hashed words, so texts sharing words are close. Counts its work."""

    def __init__(self, dim: int = 64, salt: str = "", delay: float = 0.0) -> None:
        from notarium_search.semantic.model_config import ModelConfig

        self._config = ModelConfig("hash", dim, 512, "mean", True, "", "")
        self._salt = salt
        self.delay = delay
        self.passages_embedded = 0

    @property
    def config(self):
        return self._config

    @property
    def fingerprint(self) -> str:
        return f"hash-{self._config.dim}-{self._salt}"

    def _vector(self, text: str):
        import hashlib

        import numpy as np

        vector = np.zeros(self._config.dim, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b((self._salt + word).encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "little") % self._config.dim] += 1.0
        norm = float(np.linalg.norm(vector)) or 1.0
        return vector / norm

    def embed_passages(self, texts):
        import numpy as np

        self.passages_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self._config.dim), np.float32)

    def embed_query(self, text: str):
        if self.delay:
            time.sleep(self.delay)
        return self._vector(text)


def build_semantic(service: Service, embedder: object) -> None:
    """Index every space of a service lexically and semantically, synchronously."""
    for space in service.spaces.values():
        assert space.semantic is not None
        space.writing.build(embedder=embedder)
    service.embedder = embedder  # type: ignore[assignment]


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """The service's JSON log lines, captured (info and above), without the test client's own."""
    stream = io.StringIO()
    configure_logging("info", stream)
    client_log = logging.getLogger("httpx")  # the test client's own lines, which hold the URL
    level = client_log.level
    client_log.setLevel(logging.WARNING)
    try:
        yield stream
    finally:
        client_log.setLevel(level)
        configure_logging("warning")  # as this file leaves it for every test
