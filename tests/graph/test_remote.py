"""A space's link graph held once per `serve` (graph/remote.py): the writer
answers the other workers' questions about links over a Unix socket, and a
follower holds no graph of its own. Two services in one process stand for two
workers (tests/index/test_follower.py); the socket is a real one."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from notarium_search.collector import IDLE_SECONDS, FrozenHeap
from notarium_search.errors import ChannelUnavailable
from notarium_search.graph import remote
from notarium_search.graph.links import Link
from notarium_search.graph.remote import (
    Answer,
    GraphServer,
    GraphUnreachable,
    LinksOf,
    Ping,
    Rank,
    RemoteGraph,
    Resolve,
)
from notarium_search.index.follower import Follower
from notarium_search.index.space_writer import SpaceWriter
from notarium_search.model_process import remove_socket_folder, socket_folder
from notarium_search.service import Service
from notarium_search.types import ChannelState, FeedFilter
from tests.conftest import PROJECT_ROOT, Vault, eventually, ids, run_child


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\n---\n{body}\n"


@pytest.fixture
def sockets(vault: Vault) -> Iterator[Path]:
    """The serve's sockets folder, made as `serve` makes it (a pytest tmp_path
    can be too long for a socket's path)."""
    folder = socket_folder(vault.settings())
    assert folder is not None
    yield folder
    remove_socket_folder(folder)


@contextmanager
def workers(vault: Vault, sockets: Path, **overrides: object) -> Iterator[tuple[Service, Service]]:
    """A writer and a follower of one serve, started, the follower ready; stopped after."""
    settings = replace(vault.settings(watch=False), sockets_dir=sockets, **overrides)
    writer = Service(settings, shared=True)
    follower = Service(settings, shared=True)
    assert isinstance(follower.spaces["notes"].role, Follower)
    writer.start()
    follower.start()
    try:
        eventually(lambda: follower.spaces["notes"].ready)
        yield writer, follower
    finally:
        follower.stop()
        writer.stop()


@contextmanager
def linked_workers(vault: Vault, sockets: Path) -> Iterator[tuple[Service, Service]]:
    """`workers` with GRAPH_BOOST over a note that links to another, the
    follower's graph channel ready (as the writer published it)."""
    vault.write("cafe.md", note("cafe", "Le café du matin. Voir [[the]]."))
    vault.write("the.md", note("the", "Le thé vert."))
    with workers(vault, sockets, graph_boost=True) as (writer, follower):
        eventually(lambda: follower.status()[0].graph.state == ChannelState.READY)
        yield writer, follower


def graph_found(service: Service, text: str) -> dict[str, str]:
    """The hits the graph channel brought, with why."""
    response = service.search("notes", text, FeedFilter(), 20)
    return {h.note.id: h.reason or "" for h in response.results if "graph" in h.channels}


def server_of(writer: Service) -> GraphServer:
    role = writer.spaces["notes"].role
    assert isinstance(role, SpaceWriter)
    assert role.graph_server is not None
    return role.graph_server


def test_a_follower_asks_the_writers_graph_and_holds_none(vault: Vault, sockets: Path):
    with linked_workers(vault, sockets) as (writer, follower):
        assert graph_found(follower, "café") == {"the": "linked from: cafe"}
        channel = follower.spaces["notes"].graph
        assert channel.remote is not None
        assert (len(channel.graph), channel.built) == (0, False)  # the writer's graph answered
        assert len(writer.spaces["notes"].graph.graph) == 2
        assert follower.status()[0].graph.links == 1  # the writer's count, as it published it
        detail = follower.note("notes", "cafe")
        assert [link.note.id for link in detail.links if link.note is not None] == ["the"]
        assert follower.resolve_link("notes", "Thé") == "the"  # accents ignored, as the writer's graph resolves
        assert follower.resolve_link("notes", "Nulle part") is None

        # A new note: the writer's pass puts it in its graph, the follower sees it there.
        vault.write("tisane.md", note("tisane", "Une tisane, comme [[cafe]]. [[Nulle part]]"))
        follower.reindex("notes", full=False)
        eventually(lambda: [n.id for n in follower.note("notes", "cafe").backlinks] == ["tisane"])
        detail = follower.note("notes", "tisane")
        assert [link.target for link in detail.dangling] == ["Nulle part"]
        assert len(channel.graph) == 0


def test_a_writer_that_does_not_answer_degrades_the_followers_graph_until_it_does(vault: Vault, sockets: Path):
    with linked_workers(vault, sockets) as (writer, follower):
        assert graph_found(follower, "café") == {"the": "linked from: cafe"}
        server = server_of(writer)
        server.stop()  # a writer dying: its kept connections end, nothing listens

        first = follower.search("notes", "café", FeedFilter(), 20)
        assert ids(first) == ["cafe"]  # the text channels answered
        assert "did not answer" in first.caveats["graph"]
        second = follower.search("notes", "café", FeedFilter(), 20)
        assert "did not answer" in second.degraded["graph"]
        assert "graph" not in second.channels_used
        status = follower.status()[0].graph
        assert status.state == ChannelState.UNAVAILABLE
        with pytest.raises(ChannelUnavailable):
            follower.note("notes", "cafe")
        role = follower.spaces["notes"].role
        assert isinstance(role, Follower)
        role.refresh()  # a look finds no writer listening
        assert "graph" in follower.search("notes", "café", FeedFilter(), 20).degraded

        server.start()  # a writer listening again (a new one, after a crash)
        eventually(lambda: follower.spaces["notes"].graph.ready)  # the follower's next look
        assert graph_found(follower, "café") == {"the": "linked from: cafe"}
        assert [n.id for n in follower.note("notes", "the").backlinks] == ["cafe"]


def test_a_writer_whose_socket_could_not_listen_tries_again_until_it_does(
    vault: Vault, sockets: Path, monkeypatch: pytest.MonkeyPatch
):
    """A passing shortage at the writer's start (no descriptor left): its
    followers say the graph unavailable, then get it back without a restart."""
    failing = threading.Event()
    failing.set()
    tries: list[bool] = []

    class Shortage(remote._Server):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            tries.append(failing.is_set())
            if failing.is_set():
                raise OSError(errno.EMFILE, "Too many open files")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(remote, "_Server", Shortage)
    vault.write("cafe.md", note("cafe", "Le café du matin. Voir [[the]]."))
    vault.write("the.md", note("the", "Le thé vert."))
    with workers(vault, sockets, graph_boost=True) as (writer, follower):
        server = server_of(writer)
        eventually(lambda: len(tries) >= 3)  # tried at start, then again by the writer's rounds
        assert not server.listening
        answer = follower.search("notes", "café", FeedFilter(), 20)
        assert "did not answer" in answer.caveats.get("graph", "") + answer.degraded.get("graph", "")
        failing.clear()  # the shortage is over
        eventually(lambda: server.listening)
        eventually(lambda: follower.spaces["notes"].graph.ready)
        assert graph_found(follower, "café") == {"the": "linked from: cafe"}
        server.stop()  # a stop is final: no round listens again
        count = len(tries)
        role = writer.spaces["notes"].role
        assert isinstance(role, SpaceWriter)
        for step in role.peer_steps()[1]:
            step()
        assert (server.listening, len(tries)) == (False, count)


def test_without_graph_boost_the_writer_reads_the_links_at_a_followers_first_question(vault: Vault, sockets: Path):
    vault.write("a.md", note("a", "alpha [[b]]"))
    vault.write("b.md", note("b", "beta"))
    with workers(vault, sockets) as (writer, follower):
        graph = writer.spaces["notes"].graph
        assert not graph.built  # nothing asked for links yet
        assert [n.id for n in follower.note("notes", "b").backlinks] == ["a"]
        assert graph.built
        assert len(follower.spaces["notes"].graph.graph) == 0
        assert "graph" not in follower.search("notes", "alpha", FeedFilter(), 20).degraded  # GRAPH_BOOST off: not asked


def test_the_writers_server_closes_a_connection_that_is_not_ours_and_answers_the_next(tmp_path: Path, sockets: Path):
    path = sockets / "graph-test.sock"
    asked: list[object] = []

    def answering(question: object) -> Answer:
        asked.append(question)
        if question == Resolve("boom"):
            raise OSError("the writer's own index unreadable")
        return Answer(outgoing=[Link("b", "B", "Intro", None)], backlinks=["c"])

    server = GraphServer(path, answering, "test")
    server.start()
    try:
        for garbage in (struct.pack(">I", 0xFFFF_FFFF), struct.pack(">I", 3) + b"\xc1\xc1\xc1"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
                raw.settimeout(30)
                raw.connect(str(path))
                raw.sendall(garbage)
                assert raw.recv(16) == b""  # closed, without an answer
        remote = RemoteGraph(path)
        answer = remote.ask(LinksOf("a"))
        assert answer.outgoing == [Link("b", "B", "Intro", None)]
        assert answer.backlinks == ["c"]
        assert remote.ask(Resolve("x")).resolved is None
        # A failure of the writer's is its answer: the connection serves on.
        failed = remote.ask(Resolve("boom"))
        assert failed.refused == "the writer's link graph failed: the writer's own index unreadable"
        assert remote.ask(LinksOf("a")).backlinks == ["c"]
        assert asked == [LinksOf("a"), Resolve("x"), Resolve("boom"), LinksOf("a")]
        remote.close()
    finally:
        server.stop()
    assert not path.exists()


def test_a_writer_refusing_a_querys_question_is_said_in_its_answer(vault: Vault, sockets: Path):
    """The writer reading its links again (a new writer, before its first pass
    is done) refuses; the follower, still told "ready" by the published status, says so."""
    with linked_workers(vault, sockets) as (writer, follower):
        writers_graph = writer.spaces["notes"].graph
        writers_graph.built = False
        answer = follower.search("notes", "café", FeedFilter(), 20)
        assert answer.caveats["graph"] == "the space's writer could not answer about links: reading the notes' links"
        assert ids(answer) == ["cafe"]
        writers_graph.built = True
        assert graph_found(follower, "café") == {"the": "linked from: cafe"}


SERVE_ALONE = """
import sys, threading
from pathlib import Path
from notarium_search.graph.remote import Answer, GraphServer
server = GraphServer(Path(sys.argv[1]), lambda question: Answer(backlinks=["b"]), "alone")
server.start()
print("listening", flush=True)
threading.Event().wait()
"""


def test_a_stopped_writer_queues_connections_and_is_not_taken_for_answering(sockets: Path):
    """A writer process stopped (SIGSTOP: hung, swapping): its kernel still
    accepts connections. A follower's burst of new connections waits in its
    backlog (socketserver's 5 refused the rest at once, read as a writer gone),
    a query's question gives up, and a look's probe does not take it for back."""
    path = sockets / "graph-alone.sock"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE_ALONE, str(path)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True
    )
    held: list[socket.socket] = []
    try:
        assert server.stdout is not None
        while server.stdout.readline().strip() != "listening":  # after the server's own log line
            assert server.poll() is None
        remote = RemoteGraph(path)
        assert remote.ask(LinksOf("a")).backlinks == ["b"]
        os.kill(server.pid, signal.SIGSTOP)
        for _ in range(32):
            held.append(remote._connect())  # a burst of the pool's new connections
        with pytest.raises(GraphUnreachable, match="did not answer within"):
            RemoteGraph(path).ask(Rank(["a"]))
        assert not remote.reachable()
        os.kill(server.pid, signal.SIGCONT)
        # Answered once the process runs again and has taken the queued
        # connections: a probe's 1 s, on a loaded machine, may come first.
        eventually(remote.reachable)
        assert remote.ask(Ping()).refused is None
        remote.close()
    finally:
        for sock in held:
            sock.close()
        os.kill(server.pid, signal.SIGCONT)
        server.kill()
        server.wait()


OUT_OF_DESCRIPTORS = """
import json, os, resource, sys
from pathlib import Path
from notarium_search.graph.remote import GraphUnreachable, LinksOf, RemoteGraph
remote = RemoteGraph(Path(sys.argv[1]))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
try:
    remote.ask(LinksOf("a"))
    asked = "answered"
except GraphUnreachable as exc:
    asked = str(exc)
reachable = remote.reachable()
for fd in held:
    os.close(fd)
print(json.dumps({"asked": asked, "reachable": reachable}))
"""


def test_a_follower_out_of_descriptors_finds_the_writer_unreachable_not_a_crash(sockets: Path):
    path = sockets / "graph-none.sock"
    result = run_child(OUT_OF_DESCRIPTORS, str(path))
    assert result["asked"].startswith("no connection to the writer")
    assert result["reachable"] is False
    assert json.dumps(result)  # the child exited cleanly: no UnboundLocalError


def test_a_followers_question_keeps_the_writer_from_its_idle_full_collection(sockets: Path):
    """The writer's idle full collection (collector.py: a pause with the GIL
    held) ran while it answered a follower's graph questions, its own HTTP
    idle: a follower's query waited on it. A question is activity; the
    followers' pings are not (an idle service still collects)."""
    now = [1_000.0]
    heap = FrozenHeap(clock=lambda: now[0])
    heap.note_activity()  # something to collect, once idle
    server = GraphServer(sockets / "graph-idle.sock", lambda question: Answer(backlinks=["c"]), "test", heap=heap)
    server.start()
    remote = RemoteGraph(sockets / "graph-idle.sock")
    try:
        now[0] += IDLE_SECONDS - 1
        assert remote.ask(LinksOf("a")).backlinks == ["c"]
        now[0] += IDLE_SECONDS - 1  # idle for the writer's requests, not for the follower's
        assert not heap.tick()
        assert remote.ask(Ping()).refused is None
        now[0] += 2
        assert heap.tick()  # the ping kept nothing from it
    finally:
        remote.close()
        server.stop()
