"""One model per machine through the real `serve` (issue 34): with two
workers and VECTOR_SEARCH, neither worker loads onnxruntime; both answer by
meaning through the service's model process; that process stopped, answers
are keyword answers that say why; killed, it is started again and answers
by meaning come back."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from tests.api.test_server import STARTUP_SECONDS, Served, by_worker, served
from tests.conftest import Vault, eventually, models_dir

# Found by meaning only: no word of it is in the notes.
QUESTION = "how do green plants turn sunlight into food"


def model_pid(server: Served) -> int:
    started = [r for r in server.records() if r["event"] == "model_process_started"]
    return int(started[-1]["pid"]) if started else 0  # type: ignore[call-overload]


def maps_onnxruntime(pid: int) -> bool:
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def answers(server: Served, client: httpx.Client, query: str, requests: int = 30) -> dict[int, list[dict[str, object]]]:
    """Searches on new connections, so that every worker takes some: the
    worker that answered each (its access line) → its answers."""
    by_id: dict[str, dict[str, object]] = {}
    for _ in range(requests):
        answer = client.get("/spaces/notes/search", params={"q": query}, headers={"Connection": "close"})
        assert answer.status_code == 200, answer.text
        by_id[answer.headers["x-request-id"]] = answer.json()
    return by_worker(server, by_id)


def by_meaning_everywhere(server: Served, client: httpx.Client, query: str) -> bool:
    """Every worker answered, each answer by meaning, none degraded."""
    seen = answers(server, client, query)
    return len(seen) == 2 and all(
        body["degraded"] == {} and first_id(body) == "plantes" for bodies in seen.values() for body in bodies
    )


def first_id(body: dict[str, object]) -> object:
    results = body["results"]
    assert isinstance(results, list)
    return results[0]["id"] if results else None


@pytest.mark.slow
def test_two_workers_share_one_model_which_degrades_and_recovers(vault: Vault, tmp_path: Path):
    vault.write(
        "plantes.md",
        "---\nid: plantes\n---\nPhotosynthesis: the leaves of a tree make sugars from the light of the sun.\n",
    )
    vault.write("chaines.md", "---\nid: chaines\n---\nA supply chain recovers from a disruption.\n")
    vault.write("rail.md", "---\nid: rail\n---\nLe réseau ferré relie les villes.\n")
    pack = models_dir() / "all-minilm-l6-v2-int8"
    with (
        served(vault, tmp_path, NOTARIUM_WORKERS="2", VECTOR_SEARCH="1", NOTARIUM_MODEL_DIR=str(pack)) as server,
        server.client() as client,
    ):
        eventually(lambda: by_meaning_everywhere(server, client, QUESTION), timeout=STARTUP_SECONDS)
        model = model_pid(server)
        workers = set(server.workers()) - {model}
        assert len(workers) == 2
        assert maps_onnxruntime(model)
        assert not any(maps_onnxruntime(worker) for worker in workers)  # one model, in the model process

        os.kill(model, signal.SIGSTOP)  # holds it: a query cannot be answered, whenever it comes
        try:
            stopped = answers(server, client, "chlorophyll", requests=4)
            for bodies in stopped.values():
                for body in bodies:
                    assert body["degraded"] == {"semantic": "query embedding took longer than 300 ms"}
        finally:
            os.kill(model, signal.SIGKILL)
        eventually(lambda: model_pid(server) not in (0, model), timeout=STARTUP_SECONDS)
        # Another question: the workers keep embeddings of the latest queries (query_embedding.py).
        eventually(
            lambda: by_meaning_everywhere(server, client, "what do leaves make from light"), timeout=STARTUP_SECONDS
        )
    exited = [r for r in server.records() if r["event"] == "model_process_exited"]
    assert [(r["pid"], r["code"]) for r in exited] == [(model, -signal.SIGKILL)]
