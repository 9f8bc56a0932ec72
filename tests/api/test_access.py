"""Tokens, rate limits, CORS, input limits and path escapes, over real HTTP
through Litestar's test client: always a precise 4xx, never a 5xx."""

from __future__ import annotations

from pathlib import Path

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.service import read_markdown
from tests.conftest import Vault

READ = "read-token-0123456789"
ADMIN = "admin-token-0123456789"


def client_for(vault: Vault, **settings: object) -> TestClient:  # type: ignore[type-arg]
    vault.write("a.md", "---\nid: a\ntitle: Alpha\n---\nLe texte alpha.\n")
    service = vault.service(**settings)  # type: ignore[arg-type]
    return TestClient(create_app(service.settings, service, start_indexing=False))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json() == {"error": code, "detail": response.json()["detail"], "status": status}


def test_tokens(vault: Vault):
    with client_for(vault, api_token=READ, admin_token=ADMIN) as client:
        assert client.get("/healthz").status_code == 200  # always open
        missing = client.get("/status")
        assert_error(missing, 401, "unauthorized")
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert_error(
            client.get("/spaces/notes/search", params={"q": "alpha"}, headers=bearer("x" * 20)), 401, "unauthorized"
        )
        assert_error(client.get("/status", headers={"Authorization": f"Basic {READ}"}), 401, "unauthorized")
        assert_error(client.get("/schema/openapi.json"), 401, "unauthorized")
        found = client.get("/spaces/notes/search", params={"q": "alpha"}, headers=bearer(READ))
        assert [r["id"] for r in found.json()["results"]] == ["a"]
        assert client.get("/status", headers={"Authorization": f"bearer {READ}"}).status_code == 200
        assert_error(client.post("/spaces/notes/reindex", headers=bearer(READ)), 403, "forbidden")
        assert_error(client.post("/spaces/notes/reindex"), 401, "unauthorized")
        accepted = client.post("/spaces/notes/reindex", headers=bearer(ADMIN))
        assert accepted.status_code == 202
        assert accepted.json() == {"space": "notes", "full": False, "status_url": "/spaces/notes/status"}
        assert client.get("/spaces/notes/status", headers=bearer(ADMIN)).status_code == 200  # admin may read


def test_read_token_alone_guards_everything_including_reindex(vault: Vault):
    with client_for(vault, api_token=READ) as client:
        assert_error(client.post("/spaces/notes/reindex"), 401, "unauthorized")
        assert client.post("/spaces/notes/reindex", params={"full": "1"}, headers=bearer(READ)).status_code == 202
        assert_error(client.post("/spaces/nope/reindex", headers=bearer(READ)), 404, "unknown_space")


def test_no_token_configured_is_open(vault: Vault):
    with client_for(vault) as client:
        assert client.get("/status").status_code == 200
        assert client.post("/spaces/notes/reindex").status_code == 202


def test_rate_limit_per_client(vault: Vault):
    with client_for(vault, rate_limit_per_minute=5) as client:
        statuses = [client.get("/spaces/notes/search", params={"q": "alpha"}).status_code for _ in range(6)]
        assert statuses == [200] * 5 + [429]
        limited = client.get("/status")
        assert_error(limited, 429, "too_many_requests")
        assert limited.headers["ratelimit-limit"] == "5"
        assert all(client.get("/healthz").status_code == 200 for _ in range(10))  # exempt


def test_cors_only_for_configured_origins(vault: Vault):
    preflight = {"Origin": "https://notes.example.org", "Access-Control-Request-Method": "GET"}
    with client_for(vault, cors_origins=("https://notes.example.org",)) as client:
        allowed = client.options("/spaces/notes/search", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == "https://notes.example.org"
        other = client.get("/status", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    with client_for(vault) as client:
        assert (
            "access-control-allow-origin" not in client.get("/status", headers={"Origin": preflight["Origin"]}).headers
        )


@pytest.mark.parametrize(
    "path",
    [
        "/spaces/notes/notes/../../etc/passwd",
        "/spaces/notes/notes/..%2F..%2Fetc%2Fpasswd",
        "/spaces/notes/notes/%2Fetc%2Fpasswd",
        "/spaces/notes/notes//etc/passwd",
        "/spaces/notes/notes/a%00b",
        "/spaces/notes/notes/..%5C..%5Cwindows",
    ],
)
def test_note_paths_never_escape_the_space(vault: Vault, path: str):
    with client_for(vault) as client:
        response = client.get(path, params={"content": "1"})
        assert 400 <= response.status_code < 500, (path, response.status_code)
        assert "root:" not in response.text


def test_content_is_read_only_inside_the_space(tmp_path: Path):
    space = tmp_path / "space"
    space.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (space / "link.md").symlink_to(tmp_path / "secret.md")
    (space / "own.md").write_text("mine")
    assert read_markdown(space, "own.md", 1000) == "mine"
    assert read_markdown(space, "link.md", 1000) is None  # resolves outside
    assert read_markdown(space, "../secret.md", 1000) is None
    assert read_markdown(space, "/etc/passwd", 1000) is None
    assert read_markdown(space, "gone.md", 1000) is None


def test_oversized_inputs_are_400(vault: Vault):
    with client_for(vault) as client:
        assert_error(client.get("/spaces/notes/search", params={"q": "x" * 1001}), 400, "invalid_parameter")
        assert_error(client.get("/spaces/notes/search", params={"q": "x", "limit": 101}), 400, "invalid_parameter")
        assert_error(client.get("/spaces/notes/feed", params={"tag": "t" * 501}), 400, "invalid_parameter")
        assert_error(client.get("/spaces/notes/notes", params={"field": "f" * 501}), 400, "invalid_parameter")
        assert_error(client.post("/spaces/notes/reindex", params={"full": "perhaps"}), 400, "invalid_parameter")
