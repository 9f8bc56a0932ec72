"""A channel is one folder and one registration line (index/channels.py,
docs/architecture.md "Recipe: a channel"): the tag channel of
tests/tag_channel, registered here only, is searched, fused, reported in
/status and followed by another worker, with nothing else written for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.index.channels import register_channel, registered
from notarium_search.service import Service
from notarium_search.types import ChannelState, FeedFilter
from tests.conftest import Vault, eventually, ids
from tests.tag_channel.channel import TagChannel


@pytest.fixture
def tag_channel() -> Iterator[None]:
    unregister = register_channel("tags", TagChannel.open)  # the one line a channel needs
    yield
    unregister()


def note(note_id: str, body: str, tags: str = "") -> str:
    return f"---\nid: {note_id}\n{f'tags: [{tags}]' if tags else ''}\n---\n{body}\n"


def write_vault(vault: Vault) -> None:
    vault.write("voyage.md", note("voyage", "Un voyage en bateau vers une île.", tags="zanzibar"))
    vault.write("ile.md", note("ile", "Zanzibar, Zanzibar : une île et son port, Zanzibar."))
    vault.write("autre.md", note("autre", "Rien de plus."))


def test_a_registered_channel_is_searched_fused_and_reported(vault: Vault, tag_channel: None):
    write_vault(vault)
    service = Service(vault.settings(watch=False))
    try:
        service.spaces["notes"].writing.run_reconcile()
        response = service.search("notes", "zanzibar", FeedFilter(), 10)
        assert response.channels_used == ("lexical", "tags")
        by_id = {hit.note.id: hit for hit in response.results}
        assert by_id["voyage"].channels["tags"] == 1  # found by its tag ...
        assert "tags" not in by_id["ile"].channels  # ... the other by its words alone
        assert "lexical" in by_id["ile"].channels
        # Fused: the note both channels found ranks first, though its words say zanzibar once.
        assert ids(response)[0] == "voyage"
        assert set(by_id["voyage"].channels) == {"lexical", "tags"}
        with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
            body = client.get("/spaces/notes/status").json()
        assert body["channels"]["tags"]["state"] == "ready"
        assert body["channels"]["tags"]["total"] == 3  # notes read, tagged or not
        assert list(body["channels"]) == ["lexical", "semantic", "graph", "tags"]
        assert body["semantic"] == body["channels"]["semantic"]  # the documented fields, kept
    finally:
        service.stop()


def test_without_its_registration_nothing_of_it_remains(vault: Vault):
    write_vault(vault)
    assert [p.name for p in registered()] == ["lexical", "semantic", "graph"]
    service = Service(vault.settings(watch=False))
    try:
        service.spaces["notes"].writing.run_reconcile()
        response = service.search("notes", "zanzibar", FeedFilter(), 10)
        assert response.channels_used == ("lexical",)
        assert "tags" not in service.status()[0].channels
    finally:
        service.stop()


def test_another_worker_follows_a_registered_channel(vault: Vault, tag_channel: None):
    write_vault(vault)
    settings = vault.settings(watch=False)
    writer, follower = Service(settings, shared=True), Service(settings, shared=True)
    writer.start()
    follower.start()
    try:
        eventually(lambda: follower.spaces["notes"].ready)
        assert "voyage" in ids(follower.search("notes", "zanzibar", FeedFilter(), 10))
        vault.write("escale.md", note("escale", "Une escale de deux jours.", tags="Zanzibar"))
        follower.reindex("notes", full=False)  # asked of the writer; its journal brings the tags back

        def tagged_on_the_follower() -> bool:
            hits = follower.search("notes", "zanzibar", FeedFilter(), 10).results
            return any(hit.note.id == "escale" and "tags" in hit.channels for hit in hits)

        eventually(tagged_on_the_follower)
        status = follower.status()[0]
        assert status.channels["tags"].state == ChannelState.READY
        assert status.channels["tags"].total == 4
    finally:
        follower.stop()
        writer.stop()
