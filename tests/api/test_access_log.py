"""The access log (api/access_log.py): one JSON line per request with its
fields, and a request id accepted or made, returned and bound to every line
logged while the request runs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from tests.api.test_app import service_of
from tests.conftest import Vault


@pytest.fixture
def client(vault: Vault) -> Iterator[TestClient[Any]]:
    vault.write("a.md", "---\nid: a\n---\nLe registre des tiers.\n")
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as test_client:
        yield test_client


def records(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]  # every line is JSON


def requests(stream: io.StringIO) -> list[dict[str, Any]]:
    return [r for r in records(stream) if r["event"] == "request"]


def test_each_request_is_one_structured_line_without_the_query_text(client, logged):
    answer = client.get("/spaces/notes/search", params={"q": "registre secret", "limit": 5})
    assert answer.status_code == 200
    (line,) = requests(logged)
    assert line["logger"] == "notarium_search.access"
    assert line["level"] == "info"
    assert (line["method"], line["path"], line["query"], line["status"]) == (
        "GET",
        "/spaces/notes/search",
        ["limit", "q"],
        200,
    )
    assert isinstance(line["duration_ms"], float)
    assert line["client"] == "testclient"  # the connection's address (Litestar's test client names it so)
    assert line["request_id"] == answer.headers["x-request-id"]
    assert "secret" not in logged.getvalue()  # the search text never reaches the log
    client.get("/spaces/notes/search?free+text+as+a+name")
    assert requests(logged)[-1]["query"] == ["?"]  # nor a "name" that is text


def test_a_clients_request_id_is_kept_and_a_bad_one_replaced(client, logged):
    kept = client.get("/healthz", headers={"X-Request-ID": "req-42.a:b"})
    assert kept.headers["x-request-id"] == "req-42.a:b"
    for bad in ("a b", "x" * 129, "é"):
        replaced = client.get("/healthz", headers={"X-Request-ID": bad.encode()})
        assert len(replaced.headers["x-request-id"]) == 32  # a new uuid4, hex
    made = {client.get("/healthz").headers["x-request-id"] for _ in range(3)}
    assert len(made) == 3  # one per request
    assert [r["request_id"] for r in requests(logged)][:1] == ["req-42.a:b"]


def test_refused_requests_are_logged_too(client, logged):
    rebound = client.get("/spaces", headers={"Host": "attacker.example"})
    assert rebound.status_code == 421
    assert rebound.headers["x-request-id"]
    (line,) = requests(logged)
    assert (line["status"], line["request_id"]) == (421, rebound.headers["x-request-id"])


def test_the_request_id_is_bound_to_every_line_of_the_request(client, logged, monkeypatch):
    service = service_of(client)
    search = service.search

    def logging_search(*args: Any, **kwargs: Any) -> Any:  # runs in Litestar's handler thread
        structlog.get_logger("test").warning("inside_the_handler")
        return search(*args, **kwargs)

    monkeypatch.setattr(service, "search", logging_search)
    answer = client.get("/spaces/notes/search", params={"q": "registre"}, headers={"X-Request-ID": "trace-1"})
    assert answer.status_code == 200
    (inside,) = [r for r in records(logged) if r["event"] == "inside_the_handler"]
    assert inside["request_id"] == "trace-1"

    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("a fault")

    monkeypatch.setattr(service, "search", boom)
    failed = client.get("/spaces/notes/search", params={"q": "x"}, headers={"X-Request-ID": "trace-2"})
    assert failed.status_code == 500
    assert failed.headers["x-request-id"] == "trace-2"
    (error,) = [r for r in records(logged) if r["event"] == "unhandled_error"]
    assert error["request_id"] == "trace-2"
    assert [r["request_id"] for r in requests(logged)] == ["trace-1", "trace-2"]
    client.get("/healthz")
    assert "request_id" not in structlog.contextvars.get_contextvars()  # unbound once the request is done
