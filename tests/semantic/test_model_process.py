"""One model per service (issue 34): the model process (semantic/model_server.py)
started and restarted by `serve`'s supervisor (model_process.py), and the
workers' client of it (semantic/shared_model.py), with the real MiniLM pack."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from msgspec.structs import replace

from notarium_search import model_process
from notarium_search.model_process import SOCKET_NAME, ModelProcess, socket_folder, wants_model_process
from notarium_search.semantic import model_probe, model_server
from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.semantic.embedding import OnnxEmbedder, load_embedder, pack_fingerprint
from notarium_search.semantic.loading import load_configured_embedder
from notarium_search.semantic.shared_model import INFO_URL, SharedModelEmbedder
from notarium_search.semantic.shared_model import URL as EMBEDDINGS_URL
from notarium_search.service import Service
from notarium_search.settings import Settings
from notarium_search.types import ChannelState, FeedFilter
from tests.conftest import WAIT_SECONDS, Vault, eventually, ids, models_dir

PASSAGES = [
    "La photosynthèse convertit l'énergie lumineuse en énergie chimique.",
    "A supply chain is resilient when it recovers quickly from a disruption.",
    "court",
]


@pytest.fixture(scope="module")
def pack() -> Path:
    return models_dir() / "all-minilm-l6-v2-int8"


@pytest.fixture(scope="module")
def own_copy(pack: Path) -> OnnxEmbedder:
    return load_embedder(pack, bulk_threads=1)


@pytest.fixture
def running(pack: Path, tmp_path: Path) -> Iterator[ModelProcess]:
    settings = Settings(index_dir=tmp_path, vector_search=True, model_dir=pack)
    process = ModelProcess(settings, socket_folder(settings) or tmp_path)
    process.start()
    try:
        yield process
    finally:
        process.stop()


def client_settings(process: ModelProcess) -> Settings:
    return replace(process.settings, model_socket=process.socket_path)


def info(process: ModelProcess) -> dict[str, object]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(process.socket_path))) as client:
        answer: dict[str, object] = client.get(INFO_URL).json()
        return answer


def ready(process: ModelProcess) -> bool:
    try:
        return info(process).get("state") == "ready"
    except httpx.ConnectError:  # not listening yet
        return False


def test_a_worker_gets_the_packs_vectors_and_fingerprint_from_the_model_process(
    running: ModelProcess, pack: Path, own_copy: OnnxEmbedder
):
    """Bit for bit what a model of its own gives: the vectors built before
    (or by `notarium-search index`) are kept."""
    embedder = load_configured_embedder(client_settings(running))
    assert isinstance(embedder, SharedModelEmbedder)
    try:
        assert embedder.fingerprint == pack_fingerprint(pack) == own_copy.fingerprint
        assert embedder.config == own_copy.config
        assert np.array_equal(
            embedder.embed_query("how do plants make energy"), own_copy.embed_query("how do plants make energy")
        )
        assert np.array_equal(embedder.embed_passages(PASSAGES), own_copy.embed_passages(PASSAGES))
        assert info(running)["pid"] == running.process.pid  # type: ignore[union-attr]
    finally:
        embedder.close()


def test_a_model_that_cannot_load_says_why_and_the_process_stays(pack: Path, tmp_path: Path):
    empty = tmp_path / "no-model"  # its settings, not its graph
    empty.mkdir()
    for name in ("model.json", "tokenizer.json"):
        (empty / name).write_bytes((pack / name).read_bytes())
    settings = Settings(index_dir=tmp_path, vector_search=True, model_dir=empty)
    process = ModelProcess(settings, socket_folder(settings) or tmp_path)
    process.start()
    try:
        with pytest.raises(EmbedderUnavailable, match=r"model\.onnx is missing"):
            load_configured_embedder(client_settings(process))
        assert process.process is not None
        assert process.process.poll() is None  # said, not restarted in a loop
        assert process.starts == 1
    finally:
        process.stop()


def test_a_killed_model_process_degrades_then_is_restarted(running: ModelProcess):
    embedder = load_configured_embedder(client_settings(running))
    assert isinstance(embedder, SharedModelEmbedder)
    spawn, restarting = running._spawn, threading.Event()

    def held_spawn() -> None:  # the restart waits until the test has seen the process gone
        assert restarting.wait(WAIT_SECONDS)
        spawn()

    running._spawn = held_spawn  # type: ignore[method-assign]
    try:
        before = embedder.embed_query("résilience")
        first = running.process
        assert first is not None
        os.kill(first.pid, signal.SIGKILL)
        first.wait(WAIT_SECONDS)
        with pytest.raises(EmbedderUnreachable, match="the model process is not answering"):
            embedder.embed_query("résilience")
        restarting.set()
        eventually(lambda: running.starts == 2, timeout=WAIT_SECONDS)

        def answers_again() -> bool:
            try:
                return bool(np.array_equal(embedder.embed_query("résilience"), before))
            except EmbedderUnavailable:
                return False

        eventually(answers_again, timeout=WAIT_SECONDS)
    finally:
        restarting.set()
        embedder.close()


# glibc's HEAP_MAX_SIZE on 64-bit: each malloc arena but the main one lives
# in heaps reserved at this size and alignment.
MALLOC_HEAP_SPAN = 64 * 1024 * 1024


def malloc_heaps(pid: int) -> int:
    """The glibc heaps in a process's memory map: the part in use (rw-p) at a
    multiple of MALLOC_HEAP_SPAN, then the reserved rest (---p) up to one span
    on, both anonymous."""
    anonymous = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) == 5:  # no path: not a file, nor [heap] or [stack]
            start, end = (int(address, 16) for address in fields[0].split("-"))
            anonymous.append((start, end, fields[1]))
    reserved = {start: end for start, end, permissions in anonymous if permissions == "---p"}
    return sum(
        1
        for start, end, permissions in anonymous
        if permissions == "rw-p" and not start % MALLOC_HEAP_SPAN and reserved.get(end) == start + MALLOC_HEAP_SPAN
    )


def test_the_model_process_keeps_to_its_malloc_arenas_whatever_its_threads(running: ModelProcess):
    """Each connection has a thread of its own, and glibc would give each
    thread that allocates an arena of its own (up to 8 a core), each keeping
    what its thread freed: 20–45 MiB more after a load (malloc_trim.py).
    Six connections held open, each having embedded once, and at most
    MALLOC_ARENAS arenas: the main one and heaps for the others."""
    clients = [httpx.Client(transport=httpx.HTTPTransport(uds=str(running.socket_path))) for _ in range(6)]
    try:
        eventually(lambda: ready(running), timeout=WAIT_SECONDS)
        for client in clients:  # each connection's thread stays, waiting for its next request
            answer = client.post(EMBEDDINGS_URL, json={"input": PASSAGES, "model": "m"})
            assert answer.status_code == 200, answer.text
        pid = info(running)["pid"]
        assert isinstance(pid, int)
        # The arenas beside the main one, each in a heap or two (one that outgrew
        # 64 MiB takes another): found, and shared by the threads.
        assert 1 <= malloc_heaps(pid) <= 2 * (model_server.MALLOC_ARENAS - 1)
    finally:
        for client in clients:
            client.close()


def test_two_services_share_one_model(vault: Vault, running: ModelProcess):
    """A writer and a follower (two workers) of one space: both answer by
    meaning through the one model process."""
    vault.write("plantes.md", "---\nid: plantes\n---\nLa photosynthèse convertit la lumière en sucres.\n")
    vault.write("chaines.md", "---\nid: chaines\n---\nA supply chain recovers from a disruption.\n")
    settings = replace(vault.settings(watch=False), vector_search=True, model_socket=running.socket_path)
    settings = replace(settings, model_dir=running.settings.model_dir)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    writer.start()
    follower.start()
    try:
        for service in (writer, follower):
            eventually(lambda s=service: s.status()[0].semantic.state == ChannelState.READY, timeout=WAIT_SECONDS)  # type: ignore[misc]
            assert isinstance(service.embedder, SharedModelEmbedder)
            answer = service.search("notes", "how do plants turn light into energy", FeedFilter(), 5)
            assert answer.degraded == {}
            assert ids(answer)[0] == "plantes"
    finally:
        follower.stop()
        writer.stop()


def test_serve_runs_a_model_process_for_several_workers_of_a_local_pack(pack: Path, tmp_path: Path):
    hybrid = Settings(index_dir=tmp_path, vector_search=True, model_dir=pack)
    assert wants_model_process(hybrid, workers=2)
    assert not wants_model_process(hybrid, workers=1)  # its own model: no socket on the way
    assert not wants_model_process(replace(hybrid, vector_search=False), workers=2)
    assert not wants_model_process(replace(hybrid, embed_url="http://gpu:8080"), workers=2)


def test_the_sockets_folder_is_the_users_alone_and_falls_back_to_the_index_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    settings = Settings(index_dir=tmp_path / "index")
    settings.index_dir.mkdir()
    folder = socket_folder(settings)
    assert folder is not None
    mode = folder.stat().st_mode & 0o777
    model_process.remove_socket_folder(folder)  # made in the system's temporary folder: not the test's to leave
    assert (mode, folder.parent) == (0o700, Path(tempfile.gettempdir()))
    # No temporary folder to write in (a container run with --read-only: what
    # is refused there is mkdtemp, as here, where even root cannot make one).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    folder = socket_folder(settings)
    assert folder is not None
    assert folder.parent == settings.index_dir
    deep = Settings(index_dir=tmp_path / ("x" * 120))
    deep.index_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep.index_dir))
    assert socket_folder(deep) is None  # no room for the socket's name: each worker keeps its model
    assert len(str(deep.index_dir / SOCKET_NAME)) > 108


def test_a_process_that_stops_answering_is_killed_and_started_again(
    pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A process that hangs does not exit: the supervisor's probe finds it.
    SIGSTOP holds it, whatever the machine's speed; the probe's period is the
    test's patience (a stopped process never answers, however long it is given)."""
    monkeypatch.setattr(model_process, "PROBE_SECONDS", 0.2)
    monkeypatch.setattr(model_process, "PROBE_TIMEOUT_SECONDS", 2.0)
    settings = Settings(index_dir=tmp_path, vector_search=True, model_dir=pack)
    process = ModelProcess(settings, socket_folder(settings) or tmp_path)
    process.start()
    try:
        embedder = load_configured_embedder(client_settings(process))
        stopped = process.process
        assert stopped is not None
        os.kill(stopped.pid, signal.SIGSTOP)
        eventually(lambda: process.starts >= 2, timeout=WAIT_SECONDS)
        assert stopped.wait(WAIT_SECONDS) == -signal.SIGKILL

        def answers_again() -> bool:
            try:
                return embedder.embed_query("résilience").shape == (384,)
            except EmbedderUnavailable:
                return False

        eventually(answers_again, timeout=WAIT_SECONDS)
    finally:
        process.stop()


def test_a_failed_start_is_tried_again(running: ModelProcess, monkeypatch: pytest.MonkeyPatch):
    """Fork failing once (EAGAIN after the OOM killer took the process) does
    not end the restarts: the thread that would start it again is the one that failed."""
    popen = subprocess.Popen
    failures: list[int] = []

    def fails_once(*args: object, **kwargs: object) -> object:
        if not failures:
            failures.append(1)
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return popen(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("notarium_search.model_process.subprocess.Popen", fails_once)
    first = running.process
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    eventually(lambda: running.starts == 2, timeout=WAIT_SECONDS)
    assert failures == [1]
    embedder = load_configured_embedder(client_settings(running))
    assert embedder.embed_query("résilience").shape == (384,)


def test_a_worker_refuses_vectors_of_a_model_it_did_not_start_with(pack: Path, tmp_path: Path):
    """The pack replaced on disk while the service runs, then the process
    restarted: its vectors would be stored as the old model's."""
    copy = tmp_path / "pack"
    shutil.copytree(pack, copy)
    settings = Settings(index_dir=tmp_path, vector_search=True, model_dir=copy)
    process = ModelProcess(settings, socket_folder(settings) or tmp_path)
    process.start()
    try:
        embedder = load_configured_embedder(client_settings(process))
        assert embedder.embed_query("résilience").shape == (384,)
        described = json.loads((copy / "model.json").read_text())
        (copy / "model.json").write_text(json.dumps({**described, "pooling": "cls"}))
        first = process.process
        assert first is not None
        os.kill(first.pid, signal.SIGKILL)
        eventually(lambda: process.starts == 2, timeout=WAIT_SECONDS)

        def refused() -> bool:
            try:
                embedder.embed_query("résilience")
            except EmbedderUnreachable:
                return False  # not answering yet
            except EmbedderUnavailable as exc:
                return "another model" in str(exc)
            return False

        eventually(refused, timeout=WAIT_SECONDS)
    finally:
        process.stop()


# `serve` stopped where its supervisor hands over to granian, which forks the
# workers: the modules it holds then are what every worker inherits.
SUPERVISOR_AT_FORK = """
import json, os, sys
import notarium_search.api.server as server

def handed_over(settings, load_app):
    open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules)))
    return 0

server.serve = handed_over
from notarium_search.cli import main
sys.exit(main(["serve"]))
"""
# What the supervisor never runs: the indexes, the model, their libraries.
NOT_FOR_THE_SUPERVISOR = (
    "notarium_search.service",
    "notarium_search.offline",
    "notarium_search.index.indexer",
    "notarium_search.lexical",
    "notarium_search.semantic.embedding",
    "notarium_search.semantic.shared_model",
    "tantivy",
    "numpy",
    "httpx",
    "onnxruntime",
    "usearch",
)


def test_the_supervisor_holds_no_index_nor_model_when_it_hands_over(pack: Path, tmp_path: Path):
    """The supervisor's probe of the model process was httpx's client, and its
    checks before serving were `offline`'s: numpy, httpx, the embedder,
    Tantivy and the index stack were in the supervisor (37 of its 40 MiB of
    PSS were private) and in every worker it forked before their own imports."""
    (tmp_path / "notes" / "notes").mkdir(parents=True)
    out = tmp_path / "modules.json"
    env = {
        **os.environ,
        "NOTARIUM_SPACES_ROOT": str(tmp_path / "notes"),
        "NOTARIUM_INDEX_DIR": str(tmp_path / "index"),
        "NOTARIUM_WORKERS": "2",
        "NOTARIUM_PORT": str(free_port()),
        "VECTOR_SEARCH": "1",
        "NOTARIUM_MODEL_DIR": str(pack),
        "MODULES_OUT": str(out),
    }
    env.pop("NOTARIUM_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-c", SUPERVISOR_AT_FORK], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(out.read_text()))
    assert {"notarium_search.model_process", "notarium_search.semantic.model_probe"} <= modules  # a model process ran
    held = sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in NOT_FOR_THE_SUPERVISOR))
    assert not held


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_probe_tells_listening_from_absent_and_from_hung(running: ModelProcess, tmp_path: Path):
    """model_probe.responsive, the supervisor's check: None when nothing
    listens, True once the model embeds its word, False from a process held
    by SIGSTOP (it never answers, whatever the time given), its socket's
    queue free or full."""
    assert model_probe.responsive(tmp_path / "no.sock", 5.0) is None

    eventually(lambda: ready(running), timeout=WAIT_SECONDS)
    assert model_probe.responsive(running.socket_path, WAIT_SECONDS) is True
    process = running.process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)
    queued: list[socket.socket] = []
    try:
        assert model_probe.responsive(running.socket_path, 0.5) is False
        # Its queue full of the workers' connections, a connect fails at once (EAGAIN).
        for _ in range(4096):  # the listen queue's bound (socketserver's: 5)
            waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            waiting.setblocking(False)
            queued.append(waiting)
            try:
                waiting.connect(str(running.socket_path))
            except BlockingIOError:
                break
        else:
            pytest.fail("the model process's listen queue never filled")
        assert model_probe.responsive(running.socket_path, 0.5) is False
    finally:
        os.kill(process.pid, signal.SIGCONT)
        for waiting in queued:
            waiting.close()
