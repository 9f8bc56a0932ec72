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

Queries are batched as they come: one thread runs the model over every query
waiting when it is free (at most MAX_QUERY_BATCH), so a lone query never waits
for a timer and queries that arrive while the model runs share its next run
(e5-small, 2 cores: 9 → 7 ms a text from batch 1 to 16, semantic/embedding.py).
Passages (many texts a request) run on their request's thread, beside
queries, as they did in a worker: both share one session, whose `run` is
thread-safe.

The model loads after the socket is bound: `GET /info` says "loading", then
"ready" with the model's fingerprint (the one the vectors were made with), or
"failed" with why — the process stays up to say so, rather than exiting and
being restarted in a loop. It dies with the service (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from notarium_search.logsetup import configure_logging, get_logger
from notarium_search.semantic.embedding import OnnxEmbedder, load_embedder

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Vectors

# Queries run together at most (the pack's default batch): more waiting are
# taken by the next run.
MAX_QUERY_BATCH = 16
# A request body larger than this is refused (413): 64 fragments cut at
# max_tokens × 32 characters (semantic/embedding.py) are ~1 MiB at 512 tokens.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
PR_SET_PDEATHSIG = 1  # linux/prctl.h
LOADING, READY, FAILED = "loading", "ready", "failed"

log = get_logger(__name__)


class QueryBatcher:
    """Queries embedded together: whatever waits when the model is free."""

    def __init__(self, embed: Callable[[Sequence[str]], Vectors], max_batch: int = MAX_QUERY_BATCH) -> None:
        self._embed = embed
        self._max_batch = max_batch
        self._waiting: queue.SimpleQueue[tuple[str, Future[Vectors]] | None] = queue.SimpleQueue()
        self.runs = 0
        """Model runs so far (tests: queries that arrived together shared one)."""
        self._thread = threading.Thread(target=self._serve, name="query-batcher", daemon=True)
        self._thread.start()

    def embed(self, text: str) -> Vectors:
        pending: Future[Vectors] = Future()
        self._waiting.put((text, pending))
        return pending.result()

    def stop(self) -> None:
        self._waiting.put(None)

    def _serve(self) -> None:
        while (first := self._waiting.get()) is not None:
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    item = self._waiting.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._waiting.put(None)  # stop after this run
                    break
                batch.append(item)
            self._run(batch)

    def _run(self, batch: list[tuple[str, Future[Vectors]]]) -> None:
        try:
            vectors = self._embed([text for text, _ in batch])
        except Exception as exc:  # noqa: BLE001 - each waiting request answers the failure
            for _, pending in batch:
                pending.set_exception(exc)
            return
        self.runs += 1
        for row, (_, pending) in enumerate(batch):
            pending.set_result(vectors[row])


class ModelHolder:
    """The model once loaded, or why it is not (yet)."""

    def __init__(self) -> None:
        self.state = LOADING
        self.error = ""
        self.embedder: OnnxEmbedder | None = None
        self.batcher: QueryBatcher | None = None

    def load(self, model_dir: Path, overrides: dict[str, object], threads: int, batch_size: int) -> None:
        started = time.monotonic()
        try:
            embedder = load_embedder(model_dir, overrides, bulk_threads=threads, batch_size=batch_size)
        except Exception as exc:  # noqa: BLE001 - said by /info, the workers degrade to keywords
            self.error = str(exc) or type(exc).__name__
            self.state = FAILED
            log.error("model_process_failed", error=self.error)
            return
        self.batcher = QueryBatcher(embedder.embed_texts)
        self.embedder = embedder
        self.state = READY
        log.info("model_process_ready", model=embedder.config.name, seconds=round(time.monotonic() - started, 3))

    def info(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"state": self.state, "pid": os.getpid()}
        if self.embedder is not None:
            answer |= {"fingerprint": self.embedder.fingerprint, "model": self.embedder.config.name}
        if self.error:
            answer["error"] = self.error
        return answer

    def embed(self, texts: list[str]) -> Vectors:
        """One text (a query, mostly): batched with others; more: in one call."""
        assert self.embedder is not None
        assert self.batcher is not None
        if len(texts) == 1:
            return self.batcher.embed(texts[0])[None, :]
        return self.embedder.embed_texts(texts)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # kept-alive connections: a worker's pool reuses them
    server: _Server

    def do_GET(self) -> None:
        if self.path != "/info":
            self._answer(404, {"error": f"no {self.path} here"})
            return
        self._answer(200, self.server.holder.info())

    def do_POST(self) -> None:
        if self.path != "/v1/embeddings":
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
        self._answer(200, {"object": "list", "data": data, "model": holder.info().get("model", "")})

    def _texts(self) -> list[str] | None:
        """The request's `input` (texts), or None once answered 4xx."""
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self._answer(411, {"error": "Content-Length required"})
            return None
        if int(length) > MAX_REQUEST_BYTES:
            self.close_connection = True  # its body is not read
            self._answer(413, {"error": f"request larger than {MAX_REQUEST_BYTES} bytes"})
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
    given = json.loads(args.settings)
    configure_logging(str(given.get("log_level", "info")))
    holder = ModelHolder()
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
        if holder.batcher is not None:
            holder.batcher.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
