"""An OpenAI-compatible `/v1/embeddings` server on 127.0.0.1 for the tests of
semantic/remote.py: real HTTP (http.server, one thread per connection), real
vectors (the shared ONNX pack, through semantic/embedding.load_embedder), and
faults on demand: answer 503 (with Retry-After) N times, die after N requests
and come back on the same port, require a token (from the start, or after N
answers: a token rotated mid-build), name another model, answer a body far
larger than the request can need (streamed: what it managed to send is counted).

Why not Infinity or TEI: see docs/operations.md (Embeddings from an inference
server): Infinity's ONNX engine pulls torch and CUDA wheels, TEI is a Rust
binary or a Docker image; neither runs in our CI from a clean clone offline."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from notarium_search.semantic.embedding import load_embedder


class EmbedServer:
    def __init__(
        self, model_dir: Path, model: str = "sentence-transformers/all-MiniLM-L6-v2", threads: int = 1
    ) -> None:
        # The server embeds what it is sent: the client adds the prefixes.
        self.embedder = load_embedder(model_dir, {"query_prefix": "", "passage_prefix": ""}, bulk_threads=threads)
        self.model = model
        self.token: str | None = None
        self.batches: list[int] = []
        """Inputs per request answered with vectors, in arrival order."""
        self.texts_embedded = 0
        self.failures: list[tuple[int, str | None]] = []
        """Answers to give before any vector: (status, Retry-After)."""
        self.die_after: int | None = None
        """Answered requests after which the server stops listening (a crash)."""
        self.died = threading.Event()
        self.requests = 0
        """Every request received, answered or refused."""
        self.refused = 0
        """Requests answered 401 (no token, or the wrong one)."""
        self.token_after: tuple[int, str] | None = None
        """(answers, token): after that many answered requests, the server requires that token."""
        self.oversized: tuple[int, int, bool] | None = None
        """The next request's answer: (status, bytes, declared) — that many bytes of
        JSON numbers, streamed, with a Content-Length when `declared`, else chunked."""
        self.oversized_sent = 0
        """Bytes of the oversized answer the client's socket took before it was closed."""
        self.oversized_done = threading.Event()
        self._lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None
        self.alive = False
        """False once stopped: kept-alive connections are then cut, not answered."""
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/embeddings"

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self.died.clear()
        self.alive = True
        threading.Thread(target=self._http.serve_forever, name="embed-server", daemon=True).start()

    def stop(self) -> None:
        self.alive = False
        http, self._http = self._http, None
        if http is not None:
            http.shutdown()
            http.server_close()

    def fail(self, times: int, status: int = 503, retry_after: str | None = None) -> None:
        with self._lock:
            self.failures.extend([(status, retry_after)] * times)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            if self.failures:
                status, retry_after = self.failures.pop(0)
                return status, {"error": "overloaded"}, {"Retry-After": retry_after} if retry_after else {}
        given = body.get("input")
        texts: list[str] = [given] if isinstance(given, str) else list(given or [])
        vectors = self.embedder.embed_passages(texts)
        with self._lock:
            self.batches.append(len(texts))
            self.texts_embedded += len(texts)
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        return 200, {"object": "list", "model": self.model, "data": data}, {}

    def after_answer(self) -> None:
        with self._lock:
            if self.token_after is not None:
                left, token = self.token_after
                self.token_after = (left - 1, token) if left > 1 else None
                if left <= 1:
                    self.token = token
            if self.die_after is None:
                return
            self.die_after -= 1
            dying = self.die_after <= 0
            if dying:
                self.die_after = None
        if dying:
            # shutdown() waits for serve_forever, which runs this handler's loop: from another thread.
            threading.Thread(target=self._die, daemon=True).start()

    def _die(self) -> None:
        self.stop()
        self.died.set()


class _Handler(BaseHTTPRequestHandler):
    owner: EmbedServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        owner = self.owner
        if not owner.alive:  # a dead server's kept-alive connection: cut
            self.close_connection = True
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        with owner._lock:
            owner.requests += 1
            oversized, owner.oversized = owner.oversized, None
        if oversized is not None:
            self._send_oversized(*oversized)
        elif self.path != "/v1/embeddings":
            self._send(404, {"error": "not found"}, {})
        elif owner.token is not None and self.headers.get("Authorization") != f"Bearer {owner.token}":
            with owner._lock:
                owner.refused += 1
            self._send(401, {"error": "unauthorized"}, {})
        else:
            self._send(*owner.answer(body))
            owner.after_answer()

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _send_oversized(self, status: int, size: int, declared: bool) -> None:
        """`size` bytes of an embeddings answer holding one endless vector,
        written 64 KiB at a time until done or the client closes the connection."""
        owner = self.owner
        head = b'{"object": "list", "model": "m", "data": [{"object": "embedding", "index": 0, "embedding": ['
        tail = b"0.0]}]}"
        number = b"0.012345678901234567, "
        chunk = number * (65536 // len(number))
        chunks, rest = divmod(size - len(head) - len(tail), len(chunk))
        parts = itertools.chain((head,), itertools.repeat(chunk, chunks), (b" " * rest, tail))
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if declared:
                self.send_header("Content-Length", str(size))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in filter(None, parts):  # an empty chunk would end a chunked body
                self.wfile.write(part if declared else b"%x\r\n%s\r\n" % (len(part), part))
                owner.oversized_sent += len(part)
            if not declared:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client closed the connection: what it did not take is never sent
            pass
        finally:
            owner.oversized_done.set()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(model_dir: Path, **kwargs: Any) -> Iterator[EmbedServer]:
    server = EmbedServer(model_dir, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
