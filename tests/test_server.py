"""A real uvicorn process on 127.0.0.1: start-up, JSON logs, search, shutdown."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import Vault

STARTUP_SECONDS = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_real_server_end_to_end(vault: Vault, tmp_path: Path):
    for i in range(50):
        vault.write(
            f"dossier{i % 3}/n{i}.md", f"---\nid: n{i}\ntags: [t{i % 2}]\n---\nL'interopérabilité numéro {i}.\n"
        )
    port = free_port()
    env = {
        **os.environ,
        "NOTARIUM_SPACES_ROOT": str(vault.root),
        "NOTARIUM_INDEX_DIR": str(tmp_path / "index"),
        "NOTARIUM_PORT": str(port),
        "NOTARIUM_LOG_LEVEL": "info",
    }
    env.pop("NOTARIUM_CONFIG", None)
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=5) as client:
            wait_until_ready(client, process)
            body = client.get("/spaces/notes/search", params={"q": "interoperabilite", "limit": 5}).json()
            assert len(body["results"]) == 5
            assert body["results"][0]["snippets"][0]["highlights"]
            feed = client.get("/spaces/notes/feed", params={"tag": "t1", "folder": "dossier1", "limit": 100}).json()
            assert {n["id"] for n in feed["items"]} == {f"n{i}" for i in range(50) if i % 2 == 1 and i % 3 == 1}
            error = client.get("/spaces/absent/search", params={"q": "x"})
            assert error.status_code == 404
            assert error.json()["error"] == "unknown_space"
    finally:
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=30)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert exit_code in (0, -signal.SIGTERM)
    lines = [line for line in log_path.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    events = {r["event"] for r in records}
    assert "space_indexed" in events
    assert "Application shutdown complete." in events
    assert any(r.get("logger", "").startswith("uvicorn") for r in records)


def wait_until_ready(client: httpx.Client, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, "server exited during start-up"
        try:
            status = client.get("/status").json()
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        if status["message"] is None and all(s["lexical"]["state"] == "ready" for s in status["spaces"]):
            return
        time.sleep(0.1)
    raise AssertionError("server did not become ready")
