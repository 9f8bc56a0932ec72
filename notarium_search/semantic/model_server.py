"""The service's model process (issue 34): one copy of the embedding model
for every worker of a `serve`, behind the OpenAI-compatible
`POST /v1/embeddings` the project already speaks to inference servers
(semantic/remote.py), on a Unix socket in a folder only the service's user
can enter.

    python -m notarium_search.semantic.model_server --socket PATH --parent PID --settings JSON

Each worker held its own onnxruntime session, tokenizer and arena (~235 MiB
with multilingual-e5-small): 2 workers' hybrid service measured 783 MiB
against 592 for one. Here the pack is loaded once; the workers send their
queries and the space writers their passages (semantic/shared_model.py).

Each request's texts run on its own thread, beside the others', as a
worker's queries and its writer's passages did in the worker: they share
one session, whose `run` is thread-safe. Queries are not batched together:
with e5-small int8 a query's vector changes with its batch-mates (cosine
0.997 with another query beside it: the quantisation is dynamic, per batch),
so an answer would depend on who else was searching, for ~10 % of model
time (batch 1 → 16: 10.7 → 9.5 ms a text on 2 cores, docs/benchmarks.md).

The model loads after the socket is bound: `GET /info` says "loading", then
"ready" with the model's fingerprint (the one the vectors were made with), or
"failed" with why — the process stays up to say so, rather than exiting and
being restarted in a loop. It dies with the service (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from notarium_search.lean_imports import load_without_console_extras
from notarium_search.logsetup import configure_logging, get_logger
from notarium_search.malloc_trim import MemoryTrimmer, limit_arenas
from notarium_search.semantic.embedding import MAX_CHARS_PER_TOKEN, OnnxEmbedder, load_embedder
from notarium_search.semantic.model_probe import EMBEDDINGS_PATH, INFO_PATH

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Vectors

# A request body is refused (413) past what its texts can need: the client
# sends at most TEXTS_PER_REQUEST texts cut at max_tokens × 32 characters
# (semantic/embedding.py), each character 12 bytes at most as JSON (a
# surrogate pair as \uXXXX\uXXXX), and the envelope.
TEXTS_PER_REQUEST = 64
JSON_BYTES_PER_CHAR = 12
ENVELOPE_BYTES = 64 * 1024
# Every connection has a thread of its own, and glibc gives each new thread
# an arena of its own (up to 8 a core; 12 after six connections): capped, the
# process stays 20–45 MiB smaller after a load, at the same speed
# (malloc_trim.py has the measurement).
MALLOC_ARENAS = 2
# A connection silent this long is closed (a worker's pool opens another).
IDLE_SECONDS = 60.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
LOADING, READY, FAILED = "loading", "ready", "failed"

log = get_logger(__name__)


class ModelHolder:
    """The model once loaded, or why it is not (yet)."""

    def __init__(self) -> None:
        self.state = LOADING
        self.error = ""
        self.embedder: OnnxEmbedder | None = None
        # What loading the pack and each request's JSON freed goes back to the
        # system (malloc_trim.py): the loaded process held 241 MiB of RssAnon
        # untrimmed, 206 trimmed (e5-small int8, its arena shrunk: embedding.py).
        self.trimmer = MemoryTrimmer()

    def load(self, model_dir: Path, overrides: dict[str, object], threads: int, batch_size: int) -> None:
        started = time.monotonic()
        try:
            embedder = load_embedder(model_dir, overrides, bulk_threads=threads, batch_size=batch_size)
        except Exception as exc:  # noqa: BLE001 - said by /info, the workers degrade to keywords
            self.error = str(exc) or type(exc).__name__
            self.state = FAILED
            log.error("model_process_failed", error=self.error)
            return
        self.embedder = embedder
        self.state = READY
        self.trimmer.note_activity()
        log.info("model_process_ready", model=embedder.config.name, seconds=round(time.monotonic() - started, 3))

    def info(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"state": self.state, "pid": os.getpid()}
        if self.embedder is not None:
            answer |= {"fingerprint": self.embedder.fingerprint, "model": self.embedder.config.name}
        if self.error:
            answer["error"] = self.error
        return answer

    def embed(self, texts: list[str]) -> Vectors:
        assert self.embedder is not None
        try:
            return self.embedder.embed_texts(texts)
        finally:
            self.trimmer.note_activity()

    def request_bound(self) -> int:
        """The most bytes a request's body may hold (its model loaded)."""
        max_tokens = self.embedder.config.max_tokens if self.embedder is not None else 512
        return ENVELOPE_BYTES + TEXTS_PER_REQUEST * max_tokens * MAX_CHARS_PER_TOKEN * JSON_BYTES_PER_CHAR


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept-alive connections: a worker's pool reuses them
    timeout = IDLE_SECONDS
    server: _Server

    def do_GET(self) -> None:
        if self.path != INFO_PATH:
            self._answer(404, {"error": f"no {self.path} here"})
            return
        self._answer(200, self.server.holder.info())

    def do_POST(self) -> None:
        if self.path != EMBEDDINGS_PATH:
            self._answer(404, {"error": f"no {self.path} here"})
            return
        texts = self._texts()
        if texts is None:
            return
        holder = self.server.holder
        if holder.state != READY:
            status = 503 if holder.state == LOADING else 500
            self._answer(status, {"error": holder.error or "the model is loading"})
            return
        try:
            vectors = holder.embed(texts)
        except Exception as exc:  # noqa: BLE001 - the request fails, the process serves on
            log.error("model_process_embedding_failed", error=str(exc), texts=len(texts))
            self._answer(500, {"error": str(exc) or type(exc).__name__})
            return
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(vectors.tolist())]
        info = holder.info()
        # The fingerprint in every answer: a worker connected to the model this
        # process had before a restart sees that it changed (its pack replaced on disk).
        self._answer(200, {"object": "list", "data": data, "model": info["model"], "fingerprint": info["fingerprint"]})

    def _texts(self) -> list[str] | None:
        """The request's `input` (texts), or None once answered 4xx."""
        length = self.headers.get("Content-Length", "")
        if not (length.isascii() and length.isdecimal()):
            self.close_connection = True
            self._answer(411, {"error": "Content-Length required"})
            return None
        bound = self.server.holder.request_bound()
        if int(length) > bound:
            self.close_connection = True  # its body is not read
            self._answer(413, {"error": f"request larger than {bound} bytes"})
            return None
        try:
            texts = json.loads(self.rfile.read(int(length)))["input"]
        except (ValueError, KeyError, TypeError):
            texts = None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            self._answer(400, {"error": "input must be a non-empty list of texts"})
            return None
        return texts

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = msgspec.json.encode(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line a query would flood the service's log; failures are logged where they happen


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, holder: ModelHolder) -> None:
        self.holder = holder
        super().__init__(path, _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """One line, not a traceback on the service's stderr: a worker that
        gave up on a query (its deadline) has closed the connection the
        answer is written to."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError | TimeoutError):
            log.warning("model_process_request_failed", error=f"{type(error).__name__}: {error}")


def _die_with(parent: int) -> None:
    """Killed (SIGKILL) when the service dies, even by SIGKILL: no orphan
    holds the model's memory (the service's supervisor does the same for its workers)."""
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="notarium_search.semantic.model_server")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--parent", required=True, type=int)
    parser.add_argument("--settings", required=True, help="JSON: model_dir, model, threads, batch_size, log_level")
    args = parser.parse_args(argv)
    _die_with(args.parent)
    # Before the threads that allocate (numpy's OpenBLAS thread, started at import, made no arena).
    limit_arenas(MALLOC_ARENAS)
    given = json.loads(args.settings)
    load_without_console_extras("structlog")  # 5 MiB less (lean_imports.py); no other thread yet
    configure_logging(str(given.get("log_level", "info")))
    holder = ModelHolder()
    holder.trimmer.start()
    args.socket.unlink(missing_ok=True)  # a killed predecessor's
    server = _Server(str(args.socket), holder)
    stopping = threading.Event()

    def stop(signum: int, frame: object) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, name="stop", daemon=True).start()

    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop_signal, stop)
    log.info("model_process_started", pid=os.getpid())
    pack = (Path(given["model_dir"]), dict(given.get("model") or {}), int(given["threads"]), int(given["batch_size"]))
    loading = threading.Thread(target=holder.load, args=pack, name="model-load", daemon=True)
    loading.start()
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
    log.info("model_process_stopped")
    sys.stdout.flush()
    # Not the interpreter's shutdown: a request's thread may be inside
    # onnxruntime, which then aborts the process (SIGABRT, "terminate called
    # without an active exception") when a stop comes during a build.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
