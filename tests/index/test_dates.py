"""A note's dates: written in its frontmatter, else its file's, the file's
creation time for `created` where the platform gives it (scan.birth_ns), and
which of them each note's `created` and `updated` are (`created_from`,
`updated_from`), through a real index."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from notarium_search.notes import scan
from notarium_search.types import FeedFilter
from tests.conftest import Vault

BORN = datetime(2023, 3, 1, tzinfo=UTC)
MODIFIED = datetime(2024, 7, 1, tzinfo=UTC)


def dates(vault: Vault) -> dict[str, tuple[datetime, str, datetime, str]]:
    service = vault.service()
    try:
        page = service.feed("notes", "", FeedFilter(), 20, None)
        return {n.id: (n.created, n.created_from, n.updated, n.updated_from) for n in page.items}
    finally:
        service.stop()


def write_notes(vault: Vault) -> None:
    modified = MODIFIED.timestamp()
    vault.write("plain.md", "Sans frontmatter.\n", mtime=modified)
    vault.write("created.md", "---\ncreated: 2020-01-02\n---\nCréée.\n", mtime=modified)
    vault.write("updated.md", "---\nupdated: 2021-05-06\n---\nMise à jour.\n", mtime=modified)


def test_a_note_without_dates_is_created_when_its_file_was_where_the_platform_says(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(scan, "birth_ns", lambda info: int(BORN.timestamp() * 1_000_000_000))
    write_notes(vault)
    found = dates(vault)
    assert found["plain.md"] == (BORN, "file", MODIFIED, "file")
    # A date written in the note wins; a written `updated` is its `created` too, as before.
    assert found["created.md"] == (datetime(2020, 1, 2, tzinfo=UTC), "frontmatter", MODIFIED, "file")
    assert found["updated.md"][:2] == (datetime(2021, 5, 6, tzinfo=UTC), "frontmatter")


def test_a_file_born_after_its_last_change_says_nothing_of_its_creation(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    # Copied with its modification time kept (cp -p, some sync tools): created no later than updated.
    monkeypatch.setattr(scan, "birth_ns", lambda info: int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1e9))
    write_notes(vault)
    assert dates(vault)["plain.md"] == (MODIFIED, "file", MODIFIED, "file")


def test_without_a_creation_time_a_file_dates_a_note_by_its_modification(vault: Vault):
    # Linux with Python 3.11 here: os.stat gives no birth time (statx(2) is not called).
    write_notes(vault)
    if hasattr(os.stat(vault.root / "notes" / "plain.md"), "st_birthtime"):
        pytest.skip("this platform's os.stat gives a birth time")
    assert dates(vault)["plain.md"] == (MODIFIED, "file", MODIFIED, "file")


def test_birth_ns_reads_st_birthtime_where_os_stat_has_it():
    assert scan.birth_ns(SimpleNamespace(st_birthtime=1_700_000_000.5)) == 1_700_000_000_500_000_000  # type: ignore[arg-type]
    assert scan.birth_ns(SimpleNamespace()) is None  # type: ignore[arg-type]
    assert scan.birth_ns(SimpleNamespace(st_birthtime=0)) is None  # type: ignore[arg-type]  # "unknown" on some systems
