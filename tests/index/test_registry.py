"""Each space opened on its own (index/registry.py): one that cannot open is
reported with why and tried again, while the others serve."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from notarium_search.errors import SpaceUnavailable
from notarium_search.index import registry
from notarium_search.service import Service
from notarium_search.types import FeedFilter, IndexState
from tests.conftest import Vault, eventually


def ids(service: Service, space: str, query: str) -> list[str]:
    return [hit.note.id for hit in service.search(space, query, FeedFilter(), 10).results]


def test_a_space_that_cannot_open_is_reported_and_tried_again(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(registry, "RETRY_FIRST_SECONDS", 0.05)
    vault.write("a.md", "---\nid: a\n---\nun café\n", space="good")
    vault.write("b.md", "---\nid: b\n---\nun thé\n", space="broken")
    vault.index_dir.mkdir()
    (vault.index_dir / "broken").write_text("a file where its index folder goes")  # the open fails
    service = Service(vault.settings(watch=False))
    try:
        assert list(service.spaces) == ["good"]
        statuses = {s.space: s for s in service.status()}
        assert list(statuses) == ["broken", "good"]  # every configured space, in order
        broken = statuses["broken"]
        assert broken.lexical.state == IndexState.FAILED
        assert "could not open" in (broken.lexical.error or "")
        assert str(vault.index_dir / "broken") in (broken.lexical.error or "")
        with pytest.raises(SpaceUnavailable, match="could not open"):
            service.search("broken", "thé", FeedFilter(), 10)
        service.start()
        assert service.spaces["good"].writing.wait_ready(60)
        assert ids(service, "good", "café") == ["a"]
        assert "tried again in" in (next(s for s in service.status() if s.space == "broken").lexical.error or "")

        (vault.index_dir / "broken").unlink()  # fixed: the next try opens it, the service indexes it
        eventually(lambda: "broken" in service.spaces)
        assert service.spaces["broken"].writing.wait_ready(60)
        assert ids(service, "broken", "thé") == ["b"]
        assert not service.registry.unopened
    finally:
        service.stop()


def test_a_read_only_process_is_told_why_at_once(vault: Vault):
    """`notarium-search search` asks for one space: it fails with the reason instead of answering empty."""
    vault.write("a.md", "texte\n")
    with pytest.raises(Exception, match="not indexed yet"):
        Service(vault.settings(), read_only=True)


def test_a_space_whose_folder_comes_later_is_served_once_it_is_there(vault: Vault):
    """A share mounted after the service started: reported, then indexed, without a restart."""
    vault.write("a.md", "---\nid: a\n---\nun café\n", space="good")
    settings = vault.settings(watch=False)
    share = vault.root.parent / "share"
    settings = replace(settings, spaces=(*settings.spaces, replace(settings.spaces[0], name="share", path=share)))
    service = Service(settings)
    try:
        service.start()
        eventually(
            lambda: "is missing" in (next(s for s in service.status() if s.space == "share").lexical.error or "")
        )
        share.mkdir()
        (share / "b.md").write_text("---\nid: b\n---\nun thé\n")
        service.spaces["share"].request_reindex()  # what the retry does, without waiting for it
        eventually(lambda: ids(service, "share", "thé") == ["b"])
        assert ids(service, "good", "café") == ["a"]
    finally:
        service.stop()


def test_a_configured_space_between_two_states_is_a_503_never_a_404(vault: Vault):
    """Opened by a retry between the service's two looks (the open, then the
    unopened spaces): a client would not retry a 404 unknown_space."""
    vault.write("a.md", "texte\n")
    service = Service(vault.settings(watch=False))
    try:
        service.registry.opened = {}  # the moment between the two looks, held
        with pytest.raises(SpaceUnavailable, match="opening"):
            service.space("notes")
    finally:
        service.stop()


def test_a_space_opened_later_is_told_why_there_is_no_model(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(registry, "RETRY_FIRST_SECONDS", 0.05)
    vault.write("b.md", "---\nid: b\n---\nun thé\n", space="broken")
    vault.index_dir.mkdir()
    (vault.index_dir / "broken").write_text("a file where its index folder goes")
    service = Service(vault.settings(watch=False, vector_search=True, model_dir=vault.root.parent / "no-model"))
    try:
        service.load_model()  # fails: no pack there (the service does it on a thread of its own)
        service.start()
        (vault.index_dir / "broken").unlink()
        eventually(lambda: "broken" in service.spaces)
        eventually(lambda: service.spaces["broken"].status().semantic.reason is not None)
        assert "no-model" in (service.spaces["broken"].status().semantic.reason or "")
    finally:
        service.stop()


def test_a_space_tried_again_says_so_while_it_is_tried(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A retry that failed wrote the space's status without its next try for
    a moment, until that try was scheduled: a status read then said only
    "could not open" (a CI run on a slow machine read it there)."""
    monkeypatch.setattr(registry, "RETRY_FIRST_SECONDS", 3600.0)  # no timer fires during the test
    vault.write("b.md", "---\nid: b\n---\nun thé\n", space="broken")
    vault.index_dir.mkdir()
    (vault.index_dir / "broken").write_text("a file where its index folder goes")
    service = Service(vault.settings(watch=False))

    def error() -> str:
        return next(s for s in service.status() if s.space == "broken").lexical.error or ""

    try:
        service.start()
        assert "tried again in 3600 s" in error()
        (config,) = [c for c in service.settings.spaces if c.name == "broken"]
        assert service.registry._open(config) is None  # a retry's open, failing, before its next try is set
        assert "could not open" in error()
        assert "tried again in" in error()
    finally:
        service.stop()
