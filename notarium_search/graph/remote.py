"""A space's link graph held once per service: its writer answers the other
workers' questions about links over a Unix socket (issue 34).

Each worker of a `serve` used to read every note's links into a graph of its
own: ~95 MiB of RssAnon a worker at 50,000 notes (docs/benchmarks.md), the
largest thing a follower held. Now the writer, which keeps its graph in step
with its passes anyway, serves it (`GraphServer`), and a follower asks
(`RemoteGraph`): the graph channel's neighbours of a query's seeds (one
question a query), a note's links and backlinks, what a link names.

The socket lives in the serve's sockets folder (mode 0700, made by `serve`:
model_process.py `socket_folder`), so only the service's user connects.
Frames are a 4-byte length and a msgpack body, each side bounded.

A writer that does not answer (dying, restarting, a new one not yet
listening) raises `GraphUnreachable`: the graph channel then degrades like a
channel still building, and the note endpoint says 503 (graph/channel.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import socketserver
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from queue import Empty, SimpleQueue

import msgspec

from notarium_search.collector import HEAP, FrozenHeap
from notarium_search.graph.links import Link
from notarium_search.graph.ranking import GraphHit
from notarium_search.logsetup import get_logger
from notarium_search.storage.sockets_folder import SOCKET_PATH_MAX

# A question is a few seed ids, an answer a query's neighbours or a note's
# links: frames beyond these are not ours, and close the connection.
QUESTION_MAX_BYTES = 1024 * 1024
ANSWER_MAX_BYTES = 64 * 1024 * 1024
_LENGTH = struct.Struct(">I")
# How long a follower waits for an answer. A query's neighbours take ~0.3 ms
# at 50,000 notes: a writer silent for RANK_TIMEOUT_SECONDS is hung (stopped,
# swapping), and the query is answered without links. A note's links at the
# first question of a service without GRAPH_BOOST make the writer read every
# note's links (~5 s at 50,000 notes on 2 cores): a loaded machine is allowed more.
RANK_TIMEOUT_SECONDS = 5.0
LINKS_TIMEOUT_SECONDS = 60.0
# A follower that found its writer silent asks it this often (each look, at
# most every FOLLOW_INTERVAL_SECONDS) whether it answers again, waiting this long.
PROBE_TIMEOUT_SECONDS = 1.0
# Connections a follower keeps open between questions: one per request thread
# asking at once (the HTTP worker's pool is ~40); more are closed after their answer.
IDLE_CONNECTIONS = 64

log = get_logger(__name__)


class GraphUnreachable(RuntimeError):
    """The space's writer did not answer (not listening, gone, or its answer broken)."""


class Rank(msgspec.Struct, tag="rank", frozen=True):
    """The graph channel's neighbours of a query's seeds (graph/ranking.py),
    every seed counted, ranked with the writer's own fusion constant (the
    serve's one setting)."""

    seeds: list[str]
    limit: int | None = None  # the best this many are kept (None: all, the follower filters them)


class LinksOf(msgspec.Struct, tag="links", frozen=True):
    """A note's outgoing links (resolved or dangling) and its backlinks."""

    note_id: str


class Resolve(msgspec.Struct, tag="resolve", frozen=True):
    """The note a link written nowhere in particular names."""

    target: str


class Ping(msgspec.Struct, tag="ping", frozen=True):
    """Whether the writer answers at all (a follower's probe): answered without the graph."""


Question = Rank | LinksOf | Resolve | Ping


class Answer(msgspec.Struct, frozen=True):
    hits: list[GraphHit] = []
    outgoing: list[Link] = []
    backlinks: list[str] = []
    resolved: str | None = None
    refused: str | None = None  # why the writer's graph cannot answer now (not yet read: GRAPH_BOOST building)


Answering = Callable[[Question], Answer]


def graph_socket(folder: Path, space: str) -> Path | None:
    """The socket of `space`'s graph in the serve's sockets folder; None when
    the path would not fit a Unix socket's (then each worker keeps its own graph)."""
    digest = hashlib.sha256(space.encode()).hexdigest()[:16]  # any space name, a short fixed file name
    path = folder / f"graph-{digest}.sock"
    return path if len(os.fsencode(path)) < SOCKET_PATH_MAX else None


def _send(sock: socket.socket, body: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(body)) + body)


def _receive(sock: socket.socket, max_bytes: int) -> bytes | None:
    """One frame's body; None at a clean end of the connection."""
    head = _exactly(sock, _LENGTH.size, eof_ok=True)
    if head is None:
        return None
    (length,) = _LENGTH.unpack(head)
    if length > max_bytes:
        raise ValueError(f"a frame of {length} bytes")
    body = _exactly(sock, length, eof_ok=False)
    assert body is not None
    return body


def _exactly(sock: socket.socket, size: int, eof_ok: bool) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = sock.recv_into(view[got:])
        if not count:
            if eof_ok and not got:
                return None
            raise ConnectionError("the connection ended within a frame")
        got += count
    return bytes(buffer)


_QUESTIONS = msgspec.msgpack.Decoder(Question)
_ANSWERS = msgspec.msgpack.Decoder(Answer)
_ENCODER = msgspec.msgpack.Encoder()


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        sock: socket.socket = self.request
        self.server.opened(sock)
        try:
            while (body := _receive(sock, QUESTION_MAX_BYTES)) is not None:
                _send(sock, _ENCODER.encode(self._answer(_QUESTIONS.decode(body))))
        except (OSError, ValueError, msgspec.DecodeError) as exc:
            log.debug("graph_connection_closed", error=str(exc))
        finally:
            self.server.closed(sock)

    def _answer(self, question: Question) -> Answer:
        if not isinstance(question, Ping):
            # A follower's request waits on this answer: the writer is not idle,
            # even with no request of its own. Its idle full collection (a pause
            # with the GIL held, collector.py) ran while it answered: at 50,000
            # notes one query of a client on a follower took 106-108 ms, ~30 s
            # after the writer's last request (p50 27 ms; docs/benchmarks.md).
            self.server.heap.note_activity()
        try:
            return self.server.answering(question)
        # A failure of the writer's own (its index unreadable while it reads the
        # links) is the answer, not a dropped connection: the follower would
        # take the writer for gone and stop asking until its next look.
        except Exception as exc:  # noqa: BLE001 - said to the follower, which degrades; the writer serves on
            log.error("graph_question_failed", question=type(question).__name__, error=f"{type(exc).__name__}: {exc}")
            return Answer(refused=f"the writer's link graph failed: {exc}")


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    # socketserver's default backlog is 5: a follower's burst of new
    # connections (its pool filling at start, after a writer's restart) past it
    # failed at once (EAGAIN on a Unix socket with a timeout), read as a writer gone.
    request_queue_size = socket.SOMAXCONN

    def __init__(self, path: Path, answering: Answering, heap: FrozenHeap) -> None:
        self.answering = answering
        self.heap = heap
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._ended = False
        super().__init__(str(path), _Handler)

    def opened(self, sock: socket.socket) -> None:
        with self._open_lock:
            if self._ended:  # accepted as the server stopped: no answer from a stopped writer
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                return
            self._open.add(sock)

    def closed(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(sock)

    def end_connections(self) -> None:
        """Its answers end with it: a follower's open connection fails, and it asks again elsewhere."""
        with self._open_lock:
            self._ended = True
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class GraphServer:
    """The writer's side: answers its followers from its own graph, on
    threads of its own, from `start` to `stop`."""

    def __init__(self, path: Path, answering: Answering, space: str, heap: FrozenHeap = HEAP) -> None:
        self.path = path
        self._answering = answering
        self._space = space
        self._heap = heap
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wanted = False  # between start and stop: listening, or to listen again
        self._failures = 0  # starts failed in a row
        self._lock = threading.Lock()  # a stop is never followed by keep_listening's start

    @property
    def listening(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Listen. A socket file left by a writer that died is replaced: this
        process holds the space's writer lock, so no live writer owns it. A
        start that fails (no descriptor left, no memory) is tried again by
        `keep_listening`: the followers meanwhile say the graph unavailable."""
        with self._lock:
            self._wanted = True
            self._listen()

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        try:
            self._server = _Server(self.path, self._answering, self._heap)
        except OSError as exc:
            self._failures += 1
            if self._failures == 1:  # once a streak: the next ones come every publish round
                log.error("graph_server_failed", space=self._space, socket=str(self.path), error=str(exc))
            return
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"graph-server-{self._space}", daemon=True
        )
        self._thread.start()
        log.info("graph_server_listening", space=self._space, socket=str(self.path), failed_starts=self._failures)
        self._failures = 0

    def keep_listening(self) -> None:
        """Start again after a failed start (the writer's peer loop, every
        publish round): a passing shortage of the machine at the writer's
        start no longer leaves its followers without links until a restart."""
        with self._lock:
            if self._wanted and self._server is None:
                self._listen()

    def stop(self) -> None:
        with self._lock:
            self._wanted = False
            server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.end_connections()
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self._thread is not None:
            self._thread.join()


class RemoteGraph:
    """A follower's side: the writer's graph, one question at a time per
    connection, connections kept open between questions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._idle: SimpleQueue[socket.socket] = SimpleQueue()
        self._closed = False

    def ask(self, question: Question) -> Answer:
        """The writer's answer; `GraphUnreachable` when there is none. A kept
        connection that fails (the writer it reached is gone) is given one
        more try on a new one, which reaches the writer listening now."""
        body = _ENCODER.encode(question)
        timeout = RANK_TIMEOUT_SECONDS if isinstance(question, Rank | Ping) else LINKS_TIMEOUT_SECONDS
        kept = self._kept()
        if kept is not None:
            try:
                return self._exchange(kept, body, timeout)
            except TimeoutError as exc:
                raise GraphUnreachable(f"the writer did not answer within {timeout:.0f} s") from exc
            except (OSError, ValueError, msgspec.DecodeError):
                pass  # the writer it reached is gone
        sock = self._connect()
        try:
            return self._exchange(sock, body, timeout)
        except TimeoutError as exc:
            raise GraphUnreachable(f"the writer did not answer within {timeout:.0f} s") from exc
        except (OSError, ValueError, msgspec.DecodeError) as exc:
            raise GraphUnreachable(f"the writer did not answer ({exc})") from exc

    def reachable(self) -> bool:
        """Whether a writer answers now: a question that needs no graph, within
        PROBE_TIMEOUT_SECONDS (a hung writer's kernel still accepts connections)."""
        try:
            sock = self._connect()
            self._exchange(sock, _ENCODER.encode(Ping()), PROBE_TIMEOUT_SECONDS)
        except (GraphUnreachable, OSError, ValueError, msgspec.DecodeError):
            return False
        return True

    def close(self) -> None:
        self._closed = True
        while (sock := self._kept()) is not None:
            sock.close()

    def _connect(self) -> socket.socket:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:  # out of descriptors: a 503 to the request, as for the indexes' files
            raise GraphUnreachable(f"no connection to the writer ({exc.strerror or exc})") from exc
        try:
            sock.settimeout(PROBE_TIMEOUT_SECONDS)
            sock.connect(str(self.path))
        except OSError as exc:
            sock.close()
            raise GraphUnreachable(f"no writer listening ({exc.strerror or exc})") from exc
        return sock

    def _exchange(self, sock: socket.socket, body: bytes, timeout: float) -> Answer:
        try:
            sock.settimeout(timeout)
            _send(sock, body)
            reply = _receive(sock, ANSWER_MAX_BYTES)
            if reply is None:
                raise ConnectionError("the writer closed the connection")
            answer = _ANSWERS.decode(reply)
        except BaseException:
            sock.close()
            raise
        self._keep(sock)
        return answer

    def _kept(self) -> socket.socket | None:
        try:
            return self._idle.get_nowait()
        except Empty:
            return None

    def _keep(self, sock: socket.socket) -> None:
        if self._closed or self._idle.qsize() >= IDLE_CONNECTIONS:
            sock.close()
        else:
            self._idle.put(sock)
