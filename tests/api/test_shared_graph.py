"""One link graph per service through the real `serve` (issue 34): with two
workers and GRAPH_BOOST, only the space's writer reads the notes' links; the
other worker's graph answers and note links are the writer's, over its
socket; the writer killed, a new one serves the graph and both workers
answer with links again."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.test_server import STARTUP_SECONDS, Served, served, writer_of
from tests.api.test_shared_model import answers
from tests.conftest import Vault, eventually


def graph_answers(server: Served, client: httpx.Client) -> dict[int, set[str]]:
    """Each worker (its access lines) → how its answers found "the" (linked
    from the query's best hit only): "graph", or "degraded" when the answer
    said the graph could not answer."""

    def how(body: dict[str, Any]) -> str:
        by_link = [hit for hit in body["results"] if hit["id"] == "the" and "graph" in hit["channels"]]
        return "graph" if by_link else "degraded" if body["degraded"] else "none"

    return {worker: {how(body) for body in bodies} for worker, bodies in answers(server, client, "café matin").items()}


def backlinks(client: httpx.Client) -> list[object]:
    answer = client.get("/spaces/notes/notes/the", headers={"Connection": "close"})
    assert answer.status_code == 200, answer.text
    return [link["id"] for link in answer.json()["backlinks"]]


@pytest.mark.slow
def test_two_workers_share_the_writers_link_graph_and_a_new_writer_serves_it(vault: Vault, tmp_path: Path):
    vault.write("cafe.md", "---\nid: cafe\n---\nLe café du matin, avec [[the]].\n")
    vault.write("the.md", "---\nid: the\n---\nUne infusion verte.\n")
    for i in range(8):
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\nUne note sans lien, numéro {i}.\n")
    with served(vault, tmp_path, NOTARIUM_WORKERS="2", GRAPH_BOOST="1") as server, server.client() as client:
        workers = set(server.workers())
        eventually(lambda: writer_of(server) in workers, timeout=STARTUP_SECONDS)
        writer = writer_of(server)
        eventually(
            lambda: graph_answers(server, client) == {pid: {"graph"} for pid in workers}, timeout=STARTUP_SECONDS
        )
        assert all(backlinks(client) == ["cafe"] for _ in range(10))
        events = [r["event"] for r in server.records()]
        assert events.count("graph_built") == 1  # the writer's: the other worker read no links
        assert events.count("graph_server_listening") == 1

        os.kill(writer, signal.SIGKILL)
        eventually(lambda: len(server.workers()) == 2 and writer not in server.workers(), timeout=STARTUP_SECONDS)
        eventually(lambda: writer_of(server) in server.workers(), timeout=STARTUP_SECONDS)
        workers = set(server.workers())
        eventually(
            lambda: graph_answers(server, client) == {pid: {"graph"} for pid in workers}, timeout=STARTUP_SECONDS
        )
        assert all(backlinks(client) == ["cafe"] for _ in range(10))
        assert server.process.poll() is None
    events = [r["event"] for r in server.records()]
    assert events.count("graph_server_listening") == 2  # the first writer's, then the new one's
