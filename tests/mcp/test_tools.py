"""What the tools answer (mcp/tools.py, mcp/text.py), asked over /mcp in
process: a search while the first build is held halfway, and a note opened
by its path or title. The transports themselves: tests/mcp/test_mcp.py."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.types import IndexProgress
from tests.conftest import WAIT_SECONDS, Vault
from tests.mcp.test_mcp import RECENT, STREAMABLE_ACCEPT, write_french

BASE_URL = "http://127.0.0.1:8377"


def mcp_call(client: TestClient[Any], tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A tool's text and structured content, by one stateless POST /mcp."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    reply = client.post("/mcp", json=request, headers=STREAMABLE_ACCEPT)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    text = "\n".join(block["text"] for block in result["content"])
    assert not result.get("isError"), text
    return text, result.get("structuredContent") or {}


def mcp_refused(client: TestClient[Any], tool: str, **arguments: Any) -> str:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    result = client.post("/mcp", json=request, headers=STREAMABLE_ACCEPT).json()["result"]
    assert result["isError"] is True
    return "\n".join(block["text"] for block in result["content"])


def test_a_search_during_the_first_build_says_indexing_is_under_way(vault: Vault):
    """The first pass is held before the one note with the word is read:
    the answer says the index is being built and what was searched, never
    "No note contains", a claim an assistant would repeat as a fact."""
    for i in range(3):
        vault.write(f"a{i}.md", f"---\ntitle: Note {i}\n---\nUn texte ordinaire, le numéro {i}.\n")
    vault.write(  # the last path: read after the pass is held (files are read in path order)
        "zz.md",
        f'---\nid: z-interop\ntitle: Systèmes ouverts\ntags: [dora]\nused_in: ["{RECENT} Newsletter"]\n---\n'
        "L'interopérabilité des systèmes ouverts.\n",
    )
    settings = vault.settings()
    service = Service(settings)
    reached, release = threading.Event(), threading.Event()

    def hold_before_the_last(progress: IndexProgress) -> None:
        if progress.done == 3:
            reached.set()
            release.wait()  # no bound: the test sets it, in `finally` too

    run_pass = service.spaces["notes"].writing.run_reconcile
    indexing = threading.Thread(target=run_pass, args=(hold_before_the_last,), daemon=True)
    try:
        with TestClient(create_app(settings, service, start_indexing=False), base_url=BASE_URL) as client:
            indexing.start()
            assert reached.wait(WAIT_SECONDS)
            text, data = mcp_call(client, "search_notes", query="interopérabilité")
            assert (data["partial"], data["results"]) == (True, [])
            assert "No note contains" not in text
            assert "No note matches" not in text
            first = text.splitlines()[0]
            # 0 to 3 notes are committed by then: a commit every few notes or seconds.
            so_far = r"(\d notes? indexed so far|notes indexed so far \(none yet\)); none matches\.$"
            assert re.match(f'Indexing is under way in space notes: searched "interopérabilité" in the {so_far}', first)
            assert "Search again once indexing ends" in text
            text, _ = mcp_call(client, "query_frontmatter", tags=["dora"])
            assert text.startswith("No note indexed so far in space notes matches (tagged dora).")
            text, _ = mcp_call(client, "list_recent_activations")
            assert text.startswith("No note indexed so far in space notes records a use")
            assert "Indexing is under way" in text
            release.set()
            indexing.join(WAIT_SECONDS)
            assert not indexing.is_alive()
            text, data = mcp_call(client, "search_notes", query="interopérabilité")
            assert data["partial"] is False
            assert [hit["id"] for hit in data["results"]] == ["z-interop"]
            assert "Indexing" not in text
            text, _ = mcp_call(client, "list_recent_activations")
            assert "Indexing" not in text
            assert "Newsletter" in text
    finally:
        release.set()


@pytest.fixture
def french(vault: Vault) -> Service:
    write_french(vault)
    return vault.service()


def test_get_note_opens_a_note_with_an_id_by_its_path_or_title(vault: Vault, french: Service):
    """As a wiki-link opens it (graph/links.py): its path (with or without
    .md), its title, ignoring case and accents; its id first. The answer is
    the note's, with its id, for the other tools."""
    with TestClient(create_app(vault.settings(), french, start_indexing=False), base_url=BASE_URL) as client:
        for name in (
            "z-agent",
            "zettel/agent-sans-api.md",
            "zettel/agent-sans-api",
            "L'agent sans API est aveugle",
            "l'agent sans api est aveugle",
        ):
            text, data = mcp_call(client, "get_note", note=name)
            assert data["note"]["id"] == "z-agent", name
            assert data["content"].startswith("---\nid: z-agent")
            assert "id: z-agent | path: zettel/agent-sans-api.md" in text
        _, data = mcp_call(client, "get_note", note="Protocoles ouverts")  # a title that is also a link's text
        assert data["note"]["id"] == "z-protocoles"
        text, data = mcp_call(client, "get_related", note="lectures/dora.md")  # same rule: the note asked about
        assert data["note"]["id"] == "dora-registre"
        assert 'Notes related to "Registre DORA" (id: dora-registre)' in text
        message = mcp_refused(client, "get_note", note="Note absente")
        assert "no note with id 'Note absente' in space notes, nor with that path, file name, title or alias" in message


def test_a_search_that_names_a_note_says_so(vault: Vault, french: Service):
    """Issue 29: the note the query names comes first, and the answer says by which name."""
    with TestClient(create_app(vault.settings(), french, start_indexing=False), base_url=BASE_URL) as client:
        text, data = mcp_call(client, "search_notes", query="agent-sans-api.md", space="notes")
        assert data["results"][0]["id"] == "z-agent"
        assert data["results"][0]["known"] == "file_name"
        assert "named: the query is its file name" in text.split("\n2. ")[0]
        text, data = mcp_call(client, "search_notes", query="L'agent sans A", space="notes")
        assert data["results"][0]["known"] == "title_prefix"
        assert "named: the query is the start of its title" in text
