"""Who may address the service: the Host a request names (DNS rebinding), the
Origin of requests that change something (cross-site writes), and the one
error body for answers written outside our handlers."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from litestar.testing import TestClient

from notarium_search.api.access_log import AccessLog
from notarium_search.api.app import create_app
from notarium_search.api.asgi import Receive, Scope, Send
from notarium_search.api.exposure import Exposure, host_name, origin_of
from notarium_search.logsetup import Throttle
from notarium_search.settings import ConfigError, load_settings
from tests.api.test_app import service_of
from tests.conftest import Vault

OWN = "http://127.0.0.1:8377"
ERROR_KEYS = {"error", "detail", "status"}
NOTE = "---\nid: secret\ntags: [t]\n---\nmot de passe bancaire\n"
STREAMABLE_ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def client_for(vault: Vault, **overrides: Any) -> TestClient[Any]:
    overrides = {"allowed_hosts": (), **overrides}  # the default policy, unless a test sets one
    settings = vault.settings(**overrides)
    return TestClient(create_app(settings, vault.service(**overrides), start_indexing=False), base_url=OWN)


@pytest.fixture
def client(vault: Vault) -> Iterator[TestClient[Any]]:
    vault.write("secret.md", NOTE)
    with client_for(vault) as test_client:
        yield test_client


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert set(body) == ERROR_KEYS
    assert (body["status"], body["error"]) == (status, code)
    return body


EVERY_ROUTE = [
    "/spaces/notes/notes/secret?content=1",
    "/spaces/notes/search?q=bancaire",
    "/spaces/notes/feed",
    "/spaces/notes/notes",
    "/spaces/notes/activations",
    "/spaces/notes/status",
    "/status",
    "/spaces",
    "/",
    "/web/app.js",
    "/schema",
    "/schema/openapi.json",
]


@pytest.mark.parametrize("path", EVERY_ROUTE)
def test_a_rebound_name_reads_nothing(client: TestClient[Any], path: str):
    """`curl -H 'Host: attacker.example:8377' http://127.0.0.1:8377/spaces/S/notes/ID?content=1`
    returned the note: what a page on attacker.example gets once its name resolves to 127.0.0.1."""
    assert client.get(path).status_code == 200
    for host in ("attacker.example:8377", "attacker.example"):
        body = assert_error(client.get(path, headers={"Host": host}), 421, "host_not_allowed")
        assert "NOTARIUM_ALLOWED_HOSTS" in body["detail"]
        assert "bancaire" not in str(body)


def test_mcp_and_preflights_check_the_host_too(client: TestClient[Any]):
    rebound = {"Host": "attacker.example"}
    assert_error(
        client.post("/mcp", json=INITIALIZE, headers={**STREAMABLE_ACCEPT, **rebound}), 421, "host_not_allowed"
    )
    preflight = {**rebound, "Origin": "http://attacker.example", "Access-Control-Request-Method": "GET"}
    assert_error(client.options("/spaces/notes/search", headers=preflight), 421, "host_not_allowed")


def test_healthz_stays_open(client: TestClient[Any]):
    assert client.get("/healthz", headers={"Host": "whatever.example"}).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["localhost", "LOCALHOST", "localhost.", "localhost:9999", "127.0.0.1:8377", "[::1]:8377", "[::1]"],
)
def test_loopback_names_pass_with_any_port_case_or_trailing_dot(client: TestClient[Any], host: str):
    assert client.get("/spaces", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "localhost.attacker.example",
        "attacker-localhost",
        "mylocalhost",
        "127.0.0.1.nip.io",
        "1127.0.0.1",
        "[::2]",
    ],
)
def test_names_that_merely_look_allowed_are_refused(client: TestClient[Any], host: str):
    assert_error(client.get("/spaces", headers={"Host": host}), 421, "host_not_allowed")


@pytest.mark.parametrize("host", ["", " ", "localhost:80x", "[::1", "[::1]x"])
def test_a_host_that_is_not_a_host_name_is_a_bad_request(client: TestClient[Any], host: str):
    """RFC 9112 3.2: 400 for a Host missing (granian gives the application an
    empty one), repeated, or not a host; a name that is not ours stays a 421."""
    body = assert_error(client.get("/spaces", headers={"Host": host}), 400, "invalid_host")
    assert "Host header" in body["detail"]


def test_two_host_headers_are_a_bad_request(vault: Vault):
    """The check read the first Host, and a layer behind it could read the
    other. (The test client joins repeated headers: the scope is made here;
    tests/api/test_server.py sends them over a socket.)"""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"the notes"})

    exposure = Exposure(served, vault.settings(allowed_hosts=()))
    for hosts in (["127.0.0.1", "attacker.example"], ["attacker.example", "127.0.0.1"], ["localhost", "LOCALHOST"]):
        sent = asgi_call(exposure, [(b"host", h.encode()) for h in hosts])
        assert sent[0]["status"] == 400
        body = json.loads(sent[1]["body"])
        assert (body["error"], body["status"]) == ("invalid_host", 400)
        assert "2 Host headers" in body["detail"]
    assert asgi_call(exposure, [(b"host", b"localhost")])[0]["status"] == 200


def asgi_call(app: Any, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    """The messages `app` sends for a GET /spaces with these headers."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/spaces", "query_string": b"", "headers": headers}
    anyio.run(app, scope, receive, send)
    return sent


def test_allowed_hosts_add_names_and_subdomains(vault: Vault):
    vault.write("secret.md", NOTE)
    with client_for(vault, allowed_hosts=("notes.example.org", "*.lan")) as client:
        for host in ("notes.example.org", "Notes.Example.Org.:443", "nas.lan", "a.b.lan", "localhost"):
            assert client.get("/spaces", headers={"Host": host}).status_code == 200, host
        for host in ("example.org", "lan", "notes.example.org.evil", "evil-nas.lan.example"):
            assert_error(client.get("/spaces", headers={"Host": host}), 421, "host_not_allowed")
    with client_for(vault, allowed_hosts=("*",)) as client:
        assert client.get("/spaces", headers={"Host": "anything.example"}).status_code == 200


def test_the_bound_address_is_allowed_unless_it_is_a_wildcard(vault: Vault):
    with client_for(vault, host="192.168.1.20") as client:
        assert client.get("/spaces", headers={"Host": "192.168.1.20:8377"}).status_code == 200
    with client_for(vault, host="0.0.0.0") as client:  # noqa: S104 - the Docker image's bind
        assert_error(client.get("/spaces", headers={"Host": "0.0.0.0:8377"}), 421, "host_not_allowed")
        assert client.get("/spaces", headers={"Host": "127.0.0.1:8377"}).status_code == 200


def test_allowed_hosts_are_validated(tmp_path: Any):
    settings = load_settings(env={"NOTARIUM_ALLOWED_HOSTS": "Notes.Example.org., ::1,*.lan"})
    assert settings.allowed_hosts == ("notes.example.org", "[::1]", "*.lan")
    for bad in ("http://notes.example.org", "notes.example.org:8377", "a b", "*notes.org"):
        with pytest.raises(ConfigError, match="allowed_hosts"):
            load_settings(env={"NOTARIUM_ALLOWED_HOSTS": bad})
    assert load_settings(env={"NOTARIUM_TRUSTED_PROXIES": "10.0.0.2, 172.17.0.0/16"}).trusted_proxies == (
        "10.0.0.2/32",
        "172.17.0.0/16",
    )
    with pytest.raises(ConfigError, match="trusted_proxies"):
        load_settings(env={"NOTARIUM_TRUSTED_PROXIES": "proxy.lan"})


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def test_a_cross_site_form_cannot_trigger_a_rebuild(client: TestClient[Any], vault: Vault):
    """A plain form on another site POSTed to reindex?full=1 and got 202."""
    space = service_of(client).spaces["notes"]
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # a sandboxed frame, a file:// page
        {"Origin": "http://127.0.0.1:8378"},  # another port is another origin
        {"Referer": "http://evil.example/page.html"},  # no Origin: the Referer tells
    ):
        refused = client.post("/spaces/notes/reindex?full=1", content=b"a=1", headers={**FORM, **headers})
        assert_error(refused, 403, "cross_site_refused")
    assert space.writing.writer.idle  # nothing was queued
    for headers in (
        {},  # curl, scripts: no browser, no cross-site request
        {"Origin": OWN},
        {"Origin": "http://LOCALHOST:8377", "Host": "localhost:8377"},
        {"Referer": f"{OWN}/"},
    ):
        assert client.post("/spaces/notes/reindex", headers=headers).status_code == 202, headers


def test_cors_origins_may_write(vault: Vault):
    vault.write("secret.md", NOTE)
    with client_for(vault, cors_origins=("https://notes.example.org",)) as client:
        headers = {"Origin": "https://notes.example.org"}
        assert client.post("/spaces/notes/reindex", headers=headers).status_code == 202
        headers = {"Origin": "https://other.example.org"}
        assert_error(client.post("/spaces/notes/reindex", headers=headers), 403, "cross_site_refused")


def test_a_refused_preflight_has_the_error_body(vault: Vault):
    vault.write("secret.md", NOTE)
    with client_for(vault, cors_origins=("https://notes.example.org",)) as client:
        preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"}
        body = assert_error(client.options("/spaces/notes/search", headers=preflight), 400, "invalid_parameter")
        assert "CORS" in body["detail"]
        allowed = {"Origin": "https://notes.example.org", "Access-Control-Request-Method": "GET"}
        assert client.options("/spaces/notes/search", headers=allowed).status_code == 204


def test_mcp_refusals_have_the_error_body(client: TestClient[Any]):
    too_big = client.post(
        "/mcp",
        content=b"{" + b" " * 5_000_000 + b"}",
        headers={**STREAMABLE_ACCEPT, "Content-Type": "application/json"},
    )
    assert_error(too_big, 413, "request_too_large")
    wrong_type = client.post("/mcp", content=b"{}", headers={**STREAMABLE_ACCEPT, "Content-Type": "text/plain"})
    assert_error(wrong_type, 400, "invalid_parameter")
    assert_error(client.get("/mcp"), 405, "method_not_allowed")


def test_host_and_origin_parsing():
    assert host_name("[::1]:8377") == "[::1]"
    assert host_name("Notes.Example.ORG.:443") == "notes.example.org"
    assert host_name("a:b") is None
    assert origin_of("HTTPS://Notes.Example.org:443/x") == "https://notes.example.org"
    assert origin_of("http://[::1]:80") == "http://[::1]"
    assert origin_of("null") is None
    assert origin_of("http://x:99999") is None


def test_a_flood_of_refusals_logs_a_line_a_minute_per_kind(client: TestClient[Any], logged: io.StringIO):
    """Each refused request was one access line: a flood of them (1,100 slow
    bodies logged 1.1 MB) is one line a minute per kind now, which counts
    those not logged; answered requests are each logged still."""
    now = [0.0]
    access_log = client.app.asgi_handler
    assert isinstance(access_log, AccessLog)
    access_log.refusals = Throttle(60.0, lambda: now[0])
    for _ in range(5):
        assert client.get("/spaces", headers={"Host": "attacker.example"}).status_code == 421
        assert client.get("/spaces", headers={"Host": ""}).status_code == 400
        assert client.post("/spaces/notes/reindex", headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.get("/spaces").status_code == 200
    now[0] = 61.0
    assert client.get("/spaces", headers={"Host": "attacker.example"}).status_code == 421
    lines = [json.loads(line) for line in logged.getvalue().splitlines()]
    requests = [r for r in lines if r["event"] == "request"]
    assert [r["status"] for r in requests if "refused" not in r] == [200] * 5
    refusals = [(r["refused"], r["status"], r["not_logged"]) for r in requests if "refused" in r]
    assert refusals == [
        ("host_not_allowed", 421, 0),
        ("invalid_host", 400, 0),
        ("cross_site_refused", 403, 0),
        ("host_not_allowed", 421, 4),  # a minute later: the 4 held back are counted
    ]
