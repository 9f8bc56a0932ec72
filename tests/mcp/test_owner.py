"""One worker runs the MCP SDK, the others forward their /mcp calls to it
(mcp/owner.py, issue 34): through the real `serve` with two workers (one
SDK in the tree, every worker answering, the owner killed and replaced), and
in process, where the owner is held by the test (dead during a call, stopped,
gone)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import anyio
import httpx
import pytest
from litestar.testing import TestClient
from litestar.types import Scope
from msgspec.structs import replace

from notarium_search.api.app import create_app
from notarium_search.mcp import owner, route
from tests.api.test_server import STARTUP_SECONDS, Served, by_worker, served
from tests.conftest import Vault, eventually
from tests.mcp.test_mcp import INITIALIZE, STREAMABLE_ACCEPT, write_french

SEARCH = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "search_notes", "arguments": {"query": "registre dora"}},
}


def maps_the_sdk(pid: int) -> bool:
    """Whether the process loaded the SDK: its `mcp.server.request_state`
    imports cryptography, whose native library nothing else the service
    imports loads (pydantic, starlette and opentelemetry are loaded by
    Litestar and the service without the SDK)."""
    return "cryptography/hazmat/bindings" in Path(f"/proc/{pid}/maps").read_text()


def sdk_starts(server: Served) -> list[dict[str, object]]:
    return [r for r in server.records() if r["event"] == "mcp_http_started"]


def calls_by_worker(server: Served, client: httpx.Client, calls: int = 24) -> dict[int, list[httpx.Response]]:
    """MCP searches on new connections, so that every worker takes some: the
    worker that answered each (its access line) → its answers."""
    sent: dict[str, httpx.Response] = {}
    for _ in range(calls):
        answer = client.post("/mcp", json=SEARCH, headers={**STREAMABLE_ACCEPT, "Connection": "close"})
        sent[answer.headers["x-request-id"]] = answer
    return by_worker(server, sent)


def found_everywhere(server: Served, client: httpx.Client) -> bool:
    """Both workers answered MCP calls, each answer the tool's own."""
    seen = calls_by_worker(server, client)
    answers = [answer for answers in seen.values() for answer in answers]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["structuredContent"]["results"][0]["id"] == "dora-registre"
    return len(seen) == 2


@pytest.mark.slow
def test_one_worker_loads_the_sdk_and_a_survivor_takes_over_when_it_dies(vault: Vault, tmp_path: Path):
    write_french(vault)
    with served(vault, tmp_path, NOTARIUM_WORKERS="2") as server, server.client() as client:
        eventually(lambda: len(sdk_starts(server)) == 1, timeout=STARTUP_SECONDS)
        eventually(lambda: found_everywhere(server, client), timeout=STARTUP_SECONDS)
        (started,) = sdk_starts(server)  # still one: the other worker's calls went to it
        first = int(started["pid"])  # type: ignore[call-overload]
        assert started["by"] == "start"
        other = next(pid for pid in server.workers() if pid != first)
        assert maps_the_sdk(first)
        assert not maps_the_sdk(other)  # it answered MCP calls all the same

        os.kill(first, signal.SIGKILL)
        eventually(lambda: len(server.workers()) == 2 and first not in server.workers(), timeout=STARTUP_SECONDS)
        eventually(lambda: found_everywhere(server, client), timeout=STARTUP_SECONDS)
        starts = sdk_starts(server)
        # The survivor took over at the first call that found no owner; the
        # worker started in place of the dead one forwards to it.
        assert [(r["pid"], r["by"]) for r in starts] == [(first, "start"), (other, "takeover")]
        replacement = next(pid for pid in server.workers() if pid != other)
        assert not maps_the_sdk(replacement)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A sockets folder short enough for a socket's path."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mcp-") as made:
        yield Path(made)


class HeldOwner:
    """The lock of another worker that owns the endpoint, held by the test;
    `listening`: a socket that accepts a call, reads it, and closes without
    answering (an owner that dies during the call)."""

    def __init__(self, folder: Path, listening: bool) -> None:
        self.ownership = owner.Ownership(folder)
        assert self.ownership.claim()
        self.calls = 0
        self._server: socket.socket | None = None
        if listening:
            self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._server.bind(str(self.ownership.socket_path))
            self._server.listen()
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._server is not None
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            with connection:
                connection.recv(1 << 20)
                self.calls += 1

    def die(self) -> None:
        if self._server is not None:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone leaves it listening)
            self._server.close()
        os.close(self.ownership._lock)  # type: ignore[arg-type]  # the kernel's part of a death: the lock goes, the socket file stays
        self.ownership._lock = None


def app_with_folder(vault: Vault, folder: Path) -> TestClient:  # type: ignore[type-arg]
    settings = replace(vault.settings(), sockets_dir=folder)
    return TestClient(create_app(settings, vault.service(), start_indexing=False), base_url="http://127.0.0.1:8377")


def test_a_call_whose_owner_dies_during_it_is_a_503_to_retry(vault: Vault, folder: Path):
    write_french(vault)
    held = HeldOwner(folder, listening=True)
    try:
        with app_with_folder(vault, folder) as client:
            answer = client.post("/mcp", json=INITIALIZE, headers=STREAMABLE_ACCEPT)
            assert answer.status_code == 503
            assert answer.json()["error"] == "mcp_unavailable"
            assert answer.headers["retry-after"] == "1"
            assert held.calls == 1  # sent once, not again behind the client's back
    finally:
        held.die()


def test_an_owner_that_holds_the_lock_but_never_listens_is_a_503(
    vault: Vault, folder: Path, monkeypatch: pytest.MonkeyPatch
):
    write_french(vault)
    monkeypatch.setattr(owner, "LISTEN_WAIT_SECONDS", 0.2)
    held = HeldOwner(folder, listening=False)  # stopped before it could bind
    try:
        with app_with_folder(vault, folder) as client:
            answer = client.post("/mcp", json=INITIALIZE, headers=STREAMABLE_ACCEPT)
            assert answer.status_code == 503
            assert answer.json()["error"] == "mcp_unavailable"
    finally:
        held.die()


def test_the_first_call_after_the_owner_died_takes_over(vault: Vault, folder: Path):
    write_french(vault)
    held = HeldOwner(folder, listening=True)
    with app_with_folder(vault, folder) as client:
        held.die()  # its socket file stays behind, as a killed process's does
        answer = client.post("/mcp", json=INITIALIZE, headers=STREAMABLE_ACCEPT)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["serverInfo"]["name"] == "notarium-search"
        # It now owns the endpoint: another worker's call, forwarded, is answered by its SDK.
        forwarded = route._forwarded_request(
            forwarded_scope(), b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}'
        )
        answered = anyio.run(forward_to, folder / owner.SOCKET_NAME, forwarded)
        assert answered.status == 200
        assert b'"search_notes"' in answered.body
        # The id is checked where the SDK is: a forwarding worker parses no JSON.
        bad = route._forwarded_request(forwarded_scope(), b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}')
        refused = anyio.run(forward_to, folder / owner.SOCKET_NAME, bad)
        assert refused.status == 400
        assert json.loads(refused.body)["error"]["code"] == -32600
    assert not (folder / owner.SOCKET_NAME).exists()  # removed at stop, before the lock went


def forwarded_scope() -> Scope:
    headers = [(b"host", b"127.0.0.1:8377"), (b"accept", b"application/json, text/event-stream")]
    scope = {"method": "POST", "path": "/mcp", "headers": [*headers, (b"content-type", b"application/json")]}
    return cast(Scope, scope)


async def forward_to(path: Path, request: owner.Forwarded) -> owner.Answered:
    stream = await owner.connect(path)
    assert stream is not None
    return await owner.forward(stream, request)


def test_one_lock_one_owner(folder: Path):
    first, second = owner.Ownership(folder), owner.Ownership(folder)
    assert first.claim()
    assert not second.claim()
    first.socket_path.touch()
    first.release()
    assert not first.socket_path.exists()
    assert second.claim()
    second.release()
    assert owner.Ownership(None).owned  # no sockets folder: every worker owns its own endpoint


def test_a_frame_longer_than_its_bound_is_not_read(folder: Path):
    async def check() -> None:
        async def answer(request: owner.Forwarded) -> owner.Answered:
            raise AssertionError("never called")

        async with anyio.create_task_group() as group:
            await owner.listen(folder / owner.SOCKET_NAME, answer, 100, group)
            stream = await owner.connect(folder / owner.SOCKET_NAME)
            assert stream is not None
            big = route._forwarded_request(forwarded_scope(), b"x" * (owner.HEADERS_MAX_BYTES + 200))
            with pytest.raises(owner.OwnerGone):
                await owner.forward(stream, big)
            group.cancel_scope.cancel()

    anyio.run(check)


def test_a_call_that_fails_at_the_owner_is_its_500_and_the_owner_serves_on(folder: Path):
    async def check() -> None:
        calls = []

        async def answer(request: owner.Forwarded) -> owner.Answered:
            calls.append(request.body)
            if len(calls) == 1:
                raise RuntimeError("the SDK failed")
            return owner.Answered(200, [(b"content-type", b"application/json")], b"{}")

        async with anyio.create_task_group() as group:
            await owner.listen(folder / owner.SOCKET_NAME, answer, 1000, group)
            for expected in (500, 200):
                stream = await owner.connect(folder / owner.SOCKET_NAME)
                assert stream is not None
                answered = await owner.forward(stream, route._forwarded_request(forwarded_scope(), b"{}"))
                assert answered.status == expected
            group.cancel_scope.cancel()
        assert len(calls) == 2

    anyio.run(check)


def test_an_owner_whose_socket_cannot_be_made_answers_its_own_calls_and_lets_the_lock_go(vault: Vault, folder: Path):
    write_french(vault)
    (folder / owner.SOCKET_NAME).mkdir()  # the socket's path taken: its bind fails
    with app_with_folder(vault, folder) as client:
        answer = client.post("/mcp", json=INITIALIZE, headers=STREAMABLE_ACCEPT)
        assert answer.status_code == 200, answer.text
        other = owner.Ownership(folder)
        assert other.claim()  # another worker may try to make the socket
        other.release()
