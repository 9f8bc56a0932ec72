"""Incremental indexing, bad files and rebuilds, on real files and indexes."""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from notarium_search.index import indexer as indexer_module
from notarium_search.index.opening import Role, open_space
from notarium_search.index.space import Space
from notarium_search.lexical import stored as stored_notes
from notarium_search.notes import scan
from notarium_search.notes.scan import SpaceUnavailable, scan_space
from notarium_search.service import Service
from notarium_search.settings import ConfigError, load_settings
from notarium_search.storage.faults import StorageFault
from notarium_search.types import BUILDING_MESSAGE, FeedFilter, IndexState
from tests.conftest import Vault, eventually, ids

NO_FILTER = FeedFilter()


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\ntitle: Note {note_id}\n---\n{body}\n"


def restart(service: Service, vault: Vault, **overrides: object) -> Service:
    service.stop()
    return vault.service(**overrides)  # type: ignore[arg-type]


def tree_fingerprint(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def dated(note_id: str, body: str) -> str:
    """A note whose date is in its frontmatter, not taken from its file."""
    return note(note_id, body).replace("---\n", "---\nupdated: 2024-05-01\n", 1)


def test_unchanged_restart_reindexes_nothing(vault: Vault):
    for i in range(20):
        vault.write(f"n{i}.md", dated(f"n{i}", f"contenu numéro {i}"))
    service = vault.service()
    assert service.spaces["notes"].writing.indexer.progress.indexed == 20
    service = restart(service, vault)
    progress = service.spaces["notes"].writing.indexer.progress
    assert (progress.total, progress.indexed, progress.deleted) == (0, 0, 0)
    assert service.status()[0].notes == 20
    # Touched but identical files are read and hashed, not re-indexed.
    vault.write("n3.md", dated("n3", "contenu numéro 3"))
    service = restart(service, vault)
    progress = service.spaces["notes"].writing.indexer.progress
    assert (progress.total, progress.indexed) == (1, 0)
    service.stop()


def test_a_pass_that_finds_nothing_to_read_writes_nothing(vault: Vault):
    """The periodic pass when watching is off, or a watched change to a file
    that is no note, made an empty commit and wrote the whole manifest again
    (9.8 MB at 50,000 notes). It writes neither now; a pass that reads a
    touched, identical file still saves the manifest (its new time), and one
    that finds a file gone commits."""
    for i in range(3):
        vault.write(f"n{i}.md", dated(f"n{i}", f"contenu numéro {i}"))
    service = vault.service()
    space = service.spaces["notes"]
    manifest_path = space.writing.indexer.manifest.path

    def written() -> tuple[int, int | None]:
        return manifest_path.stat().st_mtime_ns, space.lexical.committed_opstamp()

    os.utime(manifest_path, ns=(1, 1))  # any save from now on changes it
    before = written()
    for paths in (None, {"image.png"}, {"n1.md"}):
        progress = space.writing.run_reconcile(paths=paths)
        assert (progress.total, progress.indexed, progress.deleted) == (0, 0, 0)
        assert written() == before, paths
    assert space.writing.indexer.progress.last_indexed is not None  # the first pass's, kept

    vault.write("n1.md", dated("n1", "contenu numéro 1"))  # touched, identical
    assert space.writing.run_reconcile().total == 1
    assert written()[0] != before[0]
    touched = written()
    assert space.writing.run_reconcile().total == 0  # its time was saved: not read again
    assert written() == touched
    vault.remove("n2.md")
    assert space.writing.run_reconcile().deleted == 1
    assert written()[1] != touched[1]
    service = restart(service, vault)  # the manifest saved last matches the index: nothing read again
    progress = service.spaces["notes"].writing.indexer.progress
    assert (progress.total, service.status()[0].notes) == (0, 2)
    assert sorted(ids(service.search("notes", "contenu", NO_FILTER, 10))) == ["n0", "n1"]
    service.stop()


def test_a_touched_note_dated_by_its_file_takes_the_new_date(vault: Vault):
    """Without a frontmatter date a note's date is its file's: a touch (a sync, a
    checkout) moves it, as a clean build would show. Found by the crash test."""
    vault.write("a.md", note("a", "contenu"), mtime=1_700_000_000)
    service = vault.service()
    vault.write("a.md", note("a", "contenu"), mtime=1_700_000_600.25)
    progress = service.spaces["notes"].writing.run_reconcile()
    assert (progress.total, progress.indexed) == (1, 1)
    (item,) = service.feed("notes", "", FeedFilter(), 10, None).items
    assert item.updated.timestamp() == 1_700_000_600.25
    service.stop()


def test_edit_and_delete_are_reflected(vault: Vault):
    vault.write("a.md", note("a", "les girafes mangent des acacias"))
    vault.write("b.md", note("b", "les éléphants boivent"))
    service = vault.service()
    assert ids(service.search("notes", "girafes", NO_FILTER, 10)) == ["a"]
    vault.write("a.md", note("a", "les zèbres courent"))
    vault.remove("b.md")
    service.spaces["notes"].writing.run_reconcile()
    assert ids(service.search("notes", "girafes", NO_FILTER, 10)) == []
    assert ids(service.search("notes", "zèbres", NO_FILTER, 10)) == ["a"]
    assert ids(service.search("notes", "éléphants", NO_FILTER, 10)) == []
    assert service.status()[0].notes == 1
    service = restart(service, vault)
    assert ids(service.search("notes", "éléphants", NO_FILTER, 10)) == []
    assert ids(service.search("notes", "zèbres", NO_FILTER, 10)) == ["a"]
    service.stop()


def test_frontmatter_id_change_replaces_the_old_id(vault: Vault):
    vault.write("a.md", note("old-id", "un texte stable"))
    service = vault.service()
    vault.write("a.md", note("new-id", "un texte stable"))
    service.spaces["notes"].writing.run_reconcile()
    assert ids(service.search("notes", "stable", NO_FILTER, 10)) == ["new-id"]
    service.stop()


def test_duplicate_frontmatter_ids_keep_both_notes(vault: Vault):
    vault.write("a.md", note("same", "premier morceau"))
    vault.write("b.md", note("same", "second morceau"))
    service = vault.service()
    assert sorted(ids(service.search("notes", "morceau", NO_FILTER, 10))) == ["b.md", "same"]
    service.stop()


def test_a_note_takes_its_id_back_when_the_holder_goes(vault: Vault):
    """A move seen half-way (the new path read while the old one is still
    indexed) must end as a clean build would: one note, its frontmatter id."""
    vault.write("a.md", note("same", "premier morceau"))
    service = vault.service()
    vault.write("b.md", note("same", "second morceau"))
    service.spaces["notes"].writing.run_reconcile()
    assert sorted(ids(service.search("notes", "morceau", NO_FILTER, 10))) == ["b.md", "same"]
    vault.remove("a.md")
    service.spaces["notes"].writing.run_reconcile()
    assert ids(service.search("notes", "morceau", NO_FILTER, 10)) == ["same"]
    service.stop()


def id_owners(service: Service) -> dict[str, str]:
    """note id → path, as the index holds them."""
    return {p.id: p.path for p in stored_notes.all_payloads(service.spaces["notes"].lexical)}


@pytest.mark.parametrize("targeted", [False, True])
def test_a_duplicate_id_goes_to_the_first_path_whatever_the_history(vault: Vault, targeted: bool):
    """Two files claiming `id: shared`: the live index gave it to the older
    one, a clean build to the other. The first path wins both ways; the other
    note is indexed under its path, and the loser is logged."""
    vault.write("m.md", note("shared", "milieu"))
    vault.write("z.md", note("shared", "fin"))
    service = vault.service()
    space = service.spaces["notes"]
    assert id_owners(service) == {"shared": "m.md", "z.md": "z.md"}
    vault.write("a.md", note("shared", "début"))  # appears later, sorts first
    space.writing.run_reconcile(paths={"a.md"} if targeted else None)
    live = id_owners(service)
    service.stop()
    (vault.root.parent / "clean").mkdir()
    clean = Vault(vault.root.parent / "clean")
    for path in ("a.md", "m.md", "z.md"):
        clean.write(path, (vault.root / "notes" / path).read_text())
    rebuilt = clean.service()
    assert live == id_owners(rebuilt) == {"shared": "a.md", "m.md": "m.md", "z.md": "z.md"}
    rebuilt.stop()
    service = vault.service()
    vault.remove("a.md")  # the id comes free: the next path in order takes it back
    service.spaces["notes"].writing.run_reconcile(paths={"a.md"} if targeted else None)
    assert id_owners(service) == {"shared": "m.md", "z.md": "z.md"}
    service.stop()


def test_an_id_freed_by_an_edit_goes_to_the_waiting_note_in_the_same_pass(vault: Vault):
    vault.write("a.md", note("shared", "premier"))
    vault.write("b.md", note("shared", "second"))
    service = vault.service()
    vault.write("a.md", note("other", "premier renommé"))  # a.md gives the id up
    service.spaces["notes"].writing.run_reconcile(paths={"a.md"})
    assert id_owners(service) == {"other": "a.md", "shared": "b.md"}  # as a clean build gives them
    service.stop()


def test_bad_files_are_skipped_or_indexed_never_fatal(vault: Vault, caplog: pytest.LogCaptureFixture):
    vault.write("bom.md", "\ufeff---\ntitle: Avec BOM\ntags: a, b\n---\ncorps avec bom\n")
    vault.write("latin1.md", "caf\xe9 cr\xe8me".encode("latin-1"))
    vault.write("binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00binaire")
    vault.write("broken.md", "---\ntitle: [jamais fermé\n---\ncorps cassé mais indexé\n")
    vault.write("baddate.md", "---\ncreated: 2024-02-30\n---\ndate impossible\n")
    vault.write("empty.md", "")
    service = vault.service()
    status = service.status()[0]
    assert status.notes == 4  # bom, broken, baddate, empty; not latin1 nor binary
    assert status.skipped == 2
    skipped = service.spaces["notes"].writing.indexer.manifest.skipped()
    assert "not UTF-8" in skipped["latin1.md"]
    assert "binary" in skipped["binary.md"]
    hit = service.search("notes", "bom", NO_FILTER, 10).results[0]
    assert (hit.note.title, hit.note.tags) == ("Avec BOM", ("a", "b"))
    assert ids(service.search("notes", "cassé", NO_FILTER, 10)) == ["broken.md"]
    assert ids(service.search("notes", "impossible", NO_FILTER, 10)) == ["baddate.md"]
    # Each is said in the log, with the file and the reason (structlog's event dicts, as records).
    logged = {(e["event"], e.get("path")): e for e in (r.msg for r in caplog.records) if isinstance(e, dict)}
    broken = logged[("note_warning", "broken.md")]
    assert (broken["level"], broken["space"]) == ("warning", "notes")
    assert broken["warning"] == "malformed frontmatter (ParserError): indexed as body text"
    assert "'created'" in logged[("note_warning", "baddate.md")]["warning"]
    assert "not UTF-8" in logged[("note_skipped", "latin1.md")]["reason"]
    assert "binary" in logged[("note_skipped", "binary.md")]["reason"]
    # A skipped file that becomes valid is indexed at the next pass.
    vault.write("latin1.md", "café crème")
    service.spaces["notes"].writing.run_reconcile()
    assert ids(service.search("notes", "crème", NO_FILTER, 10)) == ["latin1.md"]
    service.stop()


@pytest.mark.parametrize("policy", ["truncate", "skip"])
def test_oversized_files(vault: Vault, policy: str):
    vault.write("big.md", "début " + "é" * 3000 + " milieu " + "x " * 2000 + " fin")
    service = vault.service(max_file_bytes=4096, oversize=policy)
    found = ids(service.search("notes", "début", NO_FILTER, 10))
    if policy == "truncate":
        assert found == ["big.md"]
        assert ids(service.search("notes", "fin", NO_FILTER, 10)) == []
    else:
        assert found == []
        assert service.status()[0].skipped == 1
    service.stop()


def test_hidden_excluded_and_outside_symlinks_are_not_indexed(vault: Vault, tmp_path: Path):
    vault.write("ok.md", note("ok", "visible"))
    vault.write(".obsidian/workspace.md", note("hidden", "visible"))
    vault.write(".trash/old.md", note("trash", "visible"))
    vault.write("node_modules/x.md", note("nm", "visible"))
    vault.write("notes.txt", "visible")
    outside = tmp_path / "outside.md"
    outside.write_text(note("outside", "visible"))
    os.symlink(outside, vault.root / "notes" / "link.md")
    service = vault.service()
    assert ids(service.search("notes", "visible", NO_FILTER, 10)) == ["ok"]
    service.stop()


def test_include_and_exclude_globs_choose_the_notes(tmp_path: Path):
    """`*` stays in one folder, `**/` spans any number (none included), a
    pattern is anchored at the space's root, and hidden folders (.git) are
    skipped even when `exclude` no longer lists them."""
    notes = tmp_path / "notes"
    kept = ["a.md", "projets/b.md", "projets/drafts/c.md", "projets/x/y/d.md"]
    dropped = [
        "journal/e.md",  # "*.md" does not reach into folders
        "projets/f.txt",  # not *.md
        "drafts/g.md",  # drafts/**
        "drafts/deep/h.md",
        "projets/archive/i.md",  # **/archive/**
        "projets/x/archive/j.md",
        ".git/k.md",  # hidden folder
        "projets/.cache/l.md",
        "projets/.m.md",  # hidden file
    ]
    for rel in kept + dropped:
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(note(rel.replace("/", "-").replace(".", "-"), "texte commun"), encoding="utf-8")
    config = tmp_path / "c.toml"
    config.write_text(
        f'index_dir = "{tmp_path / "index"}"\n[spaces.notes]\npath = "{notes}"\n'
        'include = ["*.md", "projets/**/*.md"]\nexclude = ["drafts/**", "**/archive/**"]\n'
    )
    settings = load_settings(config, env={})
    (space_config,) = settings.spaces
    assert [f.path for f in scan_space(notes, space_config.include, space_config.exclude).files] == sorted(kept)
    service = Service(settings)
    space = service.spaces["notes"]
    space.writing.run_reconcile()
    assert sorted(p.path for p in stored_notes.all_payloads(space.lexical)) == sorted(kept)
    # A watcher's report is filtered the same way.
    for rel in dropped:
        (notes / rel).write_text(note("changed", "modifié"), encoding="utf-8")
    assert space.writing.run_reconcile(paths=set(dropped)).indexed == 0
    service.stop()


def test_indexing_never_writes_into_the_notes_folder(vault: Vault):
    for i in range(5):
        vault.write(f"d{i}/n.md", note(f"n{i}", "contenu"))
    before = tree_fingerprint(vault.root)
    service = vault.service()
    service = restart(service, vault)
    service.search("notes", "contenu", NO_FILTER, 10)
    service.stop()
    assert tree_fingerprint(vault.root) == before


def test_index_dir_inside_notes_is_refused(vault: Vault):
    vault.write("a.md", "x")
    inside = vault.root / "notes" / ".index"
    with pytest.raises(ConfigError, match="must not be inside"):
        load_settings(env={"NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(inside)})


def test_index_dir_equal_to_the_spaces_root_is_refused(vault: Vault):
    """A space's index goes to index_dir/NAME: with index_dir = spaces_root,
    that is the space's own notes folder."""
    vault.write("a.md", "x")
    notes = (vault.root / "notes").resolve()
    env = {"NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(vault.root)}
    with pytest.raises(ConfigError, match="must not be inside") as refused:
        load_settings(env=env)
    assert f"index folder {notes} of space notes" in str(refused.value)
    assert f"notes folder {notes} of space notes" in str(refused.value)
    assert sorted(p.name for p in notes.iterdir()) == ["a.md"]  # nothing written there


def test_an_explicit_space_holding_its_own_index_folder_is_refused(tmp_path: Path):
    notes = tmp_path / "i" / "p"
    notes.mkdir(parents=True)
    config = tmp_path / "c.toml"
    config.write_text(f'index_dir = "{tmp_path / "i"}"\n[spaces.p]\npath = "{notes}"\n')
    with pytest.raises(ConfigError, match=f"index folder {notes} of space p must not be inside"):
        load_settings(config, env={})
    # Any space's notes folder counts: x keeps its notes in i/p, where p's index would go.
    other = tmp_path / "other"
    other.mkdir()
    config.write_text(f'index_dir = "{tmp_path / "i"}"\n[spaces.x]\npath = "{notes}"\n')
    assert load_settings(config, env={}).space_config("x") is not None  # i/x and i/p are apart
    config.write_text(f'index_dir = "{tmp_path / "i"}"\n[spaces.x]\npath = "{notes}"\n[spaces.p]\npath = "{other}"\n')
    with pytest.raises(ConfigError, match=f"index folder {notes} of space p must not be inside .* of space x"):
        load_settings(config, env={})
    # And the other way round: p's notes inside the index folder of a space named i.
    config.write_text(f'index_dir = "{tmp_path}"\n[spaces.p]\npath = "{notes}"\n[spaces.i]\npath = "{other}"\n')
    with pytest.raises(ConfigError, match=f"notes folder {notes} of space p must not be inside the index folder"):
        load_settings(config, env={})


def test_fingerprint_change_rebuilds_from_files(vault: Vault):
    vault.write("a.md", note("a", "les chevaux galopent"))
    service = vault.service()
    service.stop()
    manifest = vault.index_dir / "notes" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b"lexical-v", b"lexical-old"))
    service = vault.service()
    assert service.spaces["notes"].writing.indexer.progress.indexed == 1
    assert ids(service.search("notes", "cheval", NO_FILTER, 10)) == ["a"]
    service.stop()


def test_missing_meta_json_triggers_rebuild(vault: Vault):
    vault.write("a.md", note("a", "les chevaux galopent"))
    vault.service().stop()
    (vault.index_dir / "notes" / "lexical" / "meta.json").unlink()
    service = vault.service()
    assert ids(service.search("notes", "chevaux", NO_FILTER, 10)) == ["a"]
    service.stop()


def test_search_answers_from_committed_notes_while_building(vault: Vault):
    for i in range(40):
        vault.write(f"n{i:02}.md", note(f"n{i}", "texte commun"))
    service = Service(vault.settings(commit_every=10))
    space = service.spaces["notes"]
    seen = []

    def probe(progress):
        if progress.done == 25:
            status = space.status()
            response = service.search("notes", "commun", NO_FILTER, 100)
            seen.append((status.message, status.lexical.state, len(response.results), response.partial))

    space.writing.run_reconcile(probe)
    message, state, found, partial = seen[0]
    assert (message, state, partial) == (BUILDING_MESSAGE, IndexState.BUILDING, True)
    assert 10 <= found < 40
    final = service.search("notes", "commun", NO_FILTER, 100)
    assert (len(final.results), final.partial, space.status().message) == (40, False, None)
    service.stop()


def test_interrupted_build_resumes(vault: Vault):
    for i in range(30):
        vault.write(f"n{i:02}.md", note(f"n{i}", "texte commun"))
    service = Service(vault.settings(commit_every=5))
    space = service.spaces["notes"]
    space.writing.run_reconcile(lambda p: space.writing.stop_event.set() if p.done == 12 else None)
    assert space.writing.indexer.progress.state == IndexState.BUILDING
    service.stop()
    service = vault.service()
    progress = service.spaces["notes"].writing.indexer.progress
    assert progress.total <= 30 - 10  # the committed part is not redone
    assert len(service.search("notes", "commun", NO_FILTER, 100).results) == 30
    service.stop()


def test_unexpected_error_on_one_file_does_not_stop_the_scan(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    from notarium_search.notes import parse
    from notarium_search.notes.parse import parse_note as real_parse

    def flaky_parse(text, rel_path, mtime):
        if rel_path == "bad.md":
            raise RecursionError("pathological note")
        return real_parse(text, rel_path, mtime)

    monkeypatch.setattr(parse, "parse_note", flaky_parse)
    vault.write("bad.md", note("bad", "texte piégé"))
    vault.write("good.md", note("good", "texte sain"))
    service = vault.service()
    assert ids(service.search("notes", "texte", NO_FILTER, 10)) == ["good"]
    assert service.status()[0].lexical.state == IndexState.READY
    monkeypatch.setattr(parse, "parse_note", real_parse)
    service.spaces["notes"].writing.run_reconcile()  # the failed file is retried
    assert sorted(ids(service.search("notes", "texte", NO_FILTER, 10))) == ["bad", "good"]
    service.stop()


def test_failed_commit_is_reported_and_recovered(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    vault.write("a.md", note("a", "premier"))
    service = vault.service()
    space = service.spaces["notes"]
    vault.write("b.md", note("b", "second"))
    real_commit = space.lexical.commit

    def failing_commit() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(space.lexical, "commit", failing_commit)
    with pytest.raises(OSError, match="No space left"):
        space.writing.run_reconcile()
    status = space.status()
    assert status.lexical.state == IndexState.FAILED
    assert "No space left" in (status.lexical.error or "")
    assert ids(service.search("notes", "premier", NO_FILTER, 10)) == ["a"]  # last commit still served
    monkeypatch.setattr(space.lexical, "commit", real_commit)
    space.writing.run_reconcile()
    assert ids(service.search("notes", "second", NO_FILTER, 10)) == ["b"]
    assert space.status().lexical.error is None
    service.stop()


@pytest.mark.parametrize("crash_after", ["lexical_commit", "nothing"])
def test_crash_between_the_index_commit_and_the_manifest_leaves_no_ghost(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, crash_after: str
):
    """The lexical commit and the manifest are two files: a crash between
    them must not leave a note in the index that no manifest entry names
    (deleted while the service was down, it would rank forever)."""
    import notarium_search.index.manifest as manifest_module

    vault.write("a.md", note("a", "ancien"))
    service = vault.service()
    space = service.spaces["notes"]
    vault.write("b.md", note("b", "fantôme"))
    vault.write("a.md", note("a2", "renommé"))  # the id changes: the old one must go too
    real_save = manifest_module.Manifest.save

    def crash(self: manifest_module.Manifest) -> None:
        raise KeyboardInterrupt  # what a kill -9 leaves: nothing more is written

    if crash_after == "lexical_commit":
        monkeypatch.setattr(manifest_module.Manifest, "save", crash)
    else:
        monkeypatch.setattr(space.lexical, "commit", lambda: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        space.writing.run_reconcile()
    monkeypatch.setattr(manifest_module.Manifest, "save", real_save)
    service.stop()
    vault.remove("b.md")  # while the service is down
    service = vault.service()
    # The index itself, not the answers: those hide notes whose file is gone.
    stored = {p.id: p.text for p in stored_notes.all_payloads(service.spaces["notes"].lexical)}
    assert stored == {"a2": "renommé"}
    service.stop()


def test_unreadable_unsettled_record_redoes_every_note(vault: Vault):
    vault.write("a.md", note("a", "premier"))
    vault.write("b.md", note("b", "second"))
    service = vault.service()
    service.stop()
    (vault.index_dir / "notes" / "unsettled.json").write_bytes(b"\x00{half")
    vault.remove("b.md")
    service = vault.service()
    space = service.spaces["notes"]
    assert {p.id for p in stored_notes.all_payloads(space.lexical)} == {"a"}
    assert space.writing.indexer.progress.indexed == 1  # read again, though unchanged: nothing was certain
    assert not (vault.index_dir / "notes" / "unsettled.json").exists()
    service.stop()


def test_a_read_only_space_is_partial_while_the_writers_records_say_so(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A read-only space (a search from the shell) runs no pass: its answers
    are partial by what the writer recorded, a commit cut short or files a
    pass had still to read, including those a crash's redo dropped before
    the pass went on."""
    for name in "abc":
        vault.write(f"{name}.md", note(name, "texte"))
    vault.service().stop()

    def reader() -> Space:
        return open_space(vault.settings().spaces[0], vault.settings(), Role.READER)

    assert (reader().ready, reader().behind) == (True, [])
    record = vault.index_dir / "notes" / "unsettled.json"
    record.write_bytes(b'{"ids": ["a", "b"], "paths": ["a.md", "b.md"]}')  # what a crash mid-commit leaves
    assert (reader().ready, reader().behind) == (False, ["a commit under way, or cut short by a crash"])

    service = Service(vault.settings())
    space = service.spaces["notes"]
    with monkeypatch.context() as patched:
        patched.setattr(indexer_module, "survey", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt()))
        with pytest.raises(KeyboardInterrupt):  # killed right after the redo dropped a and b
            space.writing.run_reconcile()
    service.stop()
    assert not record.exists()
    assert reader().behind == ["2 files left to read by an indexing pass under way or cut short"]
    vault.service().stop()
    assert (reader().ready, reader().behind) == (True, [])


def test_a_pass_over_reported_files_keeps_what_an_unfinished_full_pass_left(vault: Vault):
    """A watcher's pass over the files it saw change finishes with nothing
    left of its own, but the other files an interrupted pass over every file
    had left are still unread: a read-only reader must still be told."""
    for i in range(30):
        vault.write(f"n{i:02}.md", note(f"n{i}", f"texte {i}"))
    service = Service(vault.settings(commit_every=5))
    space = service.spaces["notes"]
    space.writing.run_reconcile(lambda p: space.writing.stop_event.set() if p.done == 12 else None)  # what Ctrl+C does
    service.stop()
    reader = functools.partial(open_space, vault.settings().spaces[0], vault.settings(), Role.READER)
    assert reader().behind == ["18 files left to read by an indexing pass under way or cut short"]

    vault.write("n29.md", note("n29", "modifié"))
    service = Service(vault.settings())
    space = service.spaces["notes"]
    assert space.writing.run_reconcile(paths={"n29.md"}).total == 1  # the reported file alone
    assert reader().behind == ["18 files left to read by an indexing pass under way or cut short"]
    space.writing.run_reconcile()
    service.stop()
    assert (reader().ready, reader().behind) == (True, [])


def failing_on_read(space: Space, monkeypatch: pytest.MonkeyPatch, at: int, times: int = 1) -> None:
    """The pass meets a passing fault of the machine (too many open files) as
    it opens its `at`-th file, `times` times."""
    real, calls = scan.open_note, {"n": 0, "failed": 0}

    def open_note(root: str, path: str) -> Any:
        calls["n"] += 1
        if calls["n"] == at and calls["failed"] < times:
            calls["failed"] += 1
            calls["n"] = 0
            raise OSError(errno.EMFILE, "Too many open files", path)
        return real(root, path)

    monkeypatch.setattr("notarium_search.index.note_file.open_note", open_note)


def test_a_pass_that_fails_before_its_first_commit_still_says_what_it_left(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
):
    """Unread files were recorded only at a commit: a pass that failed before
    its first one left the previous pass's 0, and a read-only reader said
    complete while none of the edits were in. Nor may the writer call itself
    ready once a pass over one reported file succeeds after it."""
    for i in range(20):
        vault.write(f"n{i:02}.md", note(f"n{i}", "avant"))
    vault.service().stop()
    for i in range(20):
        vault.write(f"n{i:02}.md", note(f"n{i}", "après"))
    monkeypatch.setattr(indexer_module, "FIRST_COMMIT_SECONDS", 3600.0)  # no commit before the fault, however slow
    service = Service(vault.settings())
    space = service.spaces["notes"]
    failing_on_read(space, monkeypatch, at=5)
    with pytest.raises(StorageFault):
        space.writing.run_reconcile()
    reader = open_space(vault.settings().spaces[0], vault.settings(), Role.READER)
    assert reader.behind == ["20 files left to read by an indexing pass under way or cut short"]
    assert space.writing.run_reconcile(paths={"n19.md"}).total == 1  # a watcher's pass goes through
    assert not space.ready  # 19 files are still as they were
    assert space.status().lexical.state == IndexState.BUILDING  # what the other workers follow
    assert service.search("notes", "avant", NO_FILTER, 50).partial
    space.writing.run_reconcile()
    assert space.ready
    assert len(service.search("notes", "après", NO_FILTER, 50).results) == 20
    service.stop()


def test_a_full_reindex_that_fails_half_way_is_tried_again(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A full reindex empties the index, then reads every note: failed half
    way, it was never tried again, and with the watcher on (no periodic pass)
    the notes it had not read were missing until a restart."""
    import notarium_search.index.writer as writer_module

    monkeypatch.setattr(writer_module, "RETRY_FIRST_SECONDS", 0.2)  # the retry delay, not the behaviour
    for i in range(10):
        vault.write(f"n{i:02}.md", note(f"n{i}", "texte commun"))
    service = Service(vault.settings(reconcile_interval=0, commit_every=2))  # some notes committed, then the fault
    service.start()
    space = service.spaces["notes"]
    try:
        assert space.writing.wait_ready(30)
        failing_on_read(space, monkeypatch, at=4)
        service.reindex("notes", full=True)
        eventually(lambda: len(service.search("notes", "commun", NO_FILTER, 50).results) == 10)
        eventually(lambda: space.ready)
        assert space.status().lexical.error is None
    finally:
        service.stop()


def test_a_repair_that_fails_is_tried_again(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """A repair that failed as it made the index folder again left its
    request standing: the retry was an ordinary pass, which met the missing
    folder and asked for a repair, and that request was dropped as already
    queued. Nothing was indexed again until a restart."""
    import notarium_search.index.writer as writer_module

    monkeypatch.setattr(writer_module, "RETRY_FIRST_SECONDS", 0.2)  # the retry delay, not the behaviour
    for i in range(5):
        vault.write(f"n{i}.md", note(f"n{i}", "texte commun"))
    service = Service(vault.settings(reconcile_interval=0))
    service.start()
    space = service.spaces["notes"]
    try:
        assert space.writing.wait_ready(30)
        real, calls = space.lexical.recreate, []

        def recreate() -> None:
            calls.append(1)
            if len(calls) == 1:
                shutil.rmtree(space.lexical.directory)
                raise StorageFault("cannot make the index again: no space left on device")
            real()

        monkeypatch.setattr(space.lexical, "recreate", recreate)
        space.request_repair("damage seen by a test")
        eventually(lambda: len(calls) == 2 and space.ready)
        assert len(service.search("notes", "commun", NO_FILTER, 50).results) == 5
        assert space.status().lexical.error is None
    finally:
        service.stop()


def test_a_pass_over_reported_paths_reads_only_those(vault: Vault):
    vault.write("a.md", note("a", "avant"))
    vault.write("b.md", note("b", "avant"))
    vault.write("dossier/c.md", note("c", "avant"))
    service = vault.service()
    space = service.spaces["notes"]
    vault.write("a.md", note("a", "après"))
    vault.write("b.md", note("b", "après"))  # changed, but not reported
    progress = space.writing.run_reconcile(paths={"a.md", ".a.md.swp", "gone-temp.md"})
    assert (progress.indexed, progress.deleted) == (1, 0)
    assert ids(service.search("notes", "après", NO_FILTER, 10)) == ["a"]
    vault.remove("a.md")
    progress = space.writing.run_reconcile(paths={"a.md"})
    assert (progress.indexed, progress.deleted) == (0, 1)
    # A folder among the paths: only a full scan sees what moved with it.
    (vault.root / "notes" / "dossier").rename(vault.root / "notes" / "classeur")
    progress = space.writing.run_reconcile(paths={"dossier"})
    assert progress.indexed == 2  # b (unreported before) and c at its new path
    assert {p.path for p in stored_notes.all_payloads(space.lexical)} == {"b.md", "classeur/c.md"}
    service.stop()


def test_a_reported_path_is_filtered_like_a_scan(vault: Vault, tmp_path: Path):
    vault.write("a.md", note("a", "texte"))
    service = vault.service()
    space = service.spaces["notes"]
    vault.write(".cache/x.md", note("x", "caché"))
    vault.write("notes.txt", "pas une note")
    outside = tmp_path / "outside.md"
    outside.write_text(note("o", "dehors"), encoding="utf-8")
    (vault.root / "notes" / "lien.md").symlink_to(outside)
    progress = space.writing.run_reconcile(paths={".cache/x.md", "notes.txt", "lien.md"})
    assert progress.indexed == 0
    assert {p.id for p in stored_notes.all_payloads(space.lexical)} == {"a"}
    service.stop()


def test_a_vanished_space_folder_keeps_the_index(vault: Vault, caplog: pytest.LogCaptureFixture):
    """An unmounted share or a missing bind mount looks, to a walk, like a
    space whose notes were all deleted: the index must wait for it instead."""
    for name in ("a", "b", "c"):
        vault.write(f"{name}.md", note(name, "texte commun"))
    service = vault.service()
    space = service.spaces["notes"]
    manifest = vault.index_dir / "notes" / "manifest.json"
    saved = manifest.read_bytes()
    folder = vault.root / "notes"
    folder.rename(vault.root / "away")
    for paths in (None, {"a.md"}):  # a full pass, and one over a watcher's report
        with pytest.raises(SpaceUnavailable, match="is missing"):
            space.writing.run_reconcile(paths=paths)
    response = service.search("notes", "commun", NO_FILTER, 10)
    assert (sorted(ids(response)), response.partial) == (["a", "b", "c"], True)
    status = space.status()
    assert status.lexical.state == IndexState.FAILED
    assert f"the notes folder {folder} is missing" in (status.lexical.error or "")
    assert status.notes == 3
    assert manifest.read_bytes() == saved
    logged = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg["event"] == "space_folder_unavailable"]
    assert logged
    assert logged[0]["level"] == "error"

    # A file in its place is no better.
    folder.write_text("pas un dossier")
    with pytest.raises(SpaceUnavailable, match="is not a folder"):
        space.writing.run_reconcile()
    folder.unlink()

    (vault.root / "away").rename(folder)
    progress = space.writing.run_reconcile()
    assert (progress.indexed, progress.deleted) == (0, 0)  # nothing to redo
    status = space.status()
    assert (status.lexical.state, status.lexical.error, status.notes) == (IndexState.READY, None, 3)
    assert not service.search("notes", "commun", NO_FILTER, 10).partial
    service.stop()


def test_an_empty_mount_point_keeps_the_index_until_a_full_reindex(vault: Vault):
    """An unmounted share usually leaves its mount point: an empty folder. Read
    as "every note deleted", it would cost every note and embedding again."""
    for name in ("a", "b"):
        vault.write(f"{name}.md", note(name, "texte commun"))
    service = vault.service()
    space = service.spaces["notes"]
    folder = vault.root / "notes"
    folder.rename(vault.root / "share")
    folder.mkdir()
    with pytest.raises(SpaceUnavailable, match="holds no note while the index holds 2"):
        space.writing.run_reconcile()
    assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "b"]
    assert "reindex?full=1" in (space.status().lexical.error or "")
    folder.rmdir()
    (vault.root / "share").rename(folder)
    assert space.writing.run_reconcile().deleted == 0
    # Deleting every note one by one (a watcher's report) is taken as said,
    # and so is a full reindex of a folder really emptied.
    vault.remove("a.md")
    assert space.writing.run_reconcile(paths={"a.md"}).deleted == 1
    vault.remove("b.md")
    service.stop()
    rebuilt = open_space(space.config, service.settings, Role.WRITER, rebuild=True)  # `index notes --full`
    rebuilt.writing.run_reconcile()
    assert rebuilt.status().notes == 0
    rebuilt.stop()


def test_the_writer_recovers_by_itself_when_the_folder_comes_back(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    import notarium_search.index.writer as writer_module

    monkeypatch.setattr(writer_module, "RETRY_FIRST_SECONDS", 0.2)  # the retry delay, not the behaviour
    for name in ("a", "b", "c"):
        vault.write(f"{name}.md", note(name, "texte commun"))
    service = Service(vault.settings(watch=False, reconcile_interval=0))  # only the retries can see it back
    service.start()
    space = service.spaces["notes"]
    try:
        assert space.writing.wait_ready(30)
        folder = vault.root / "notes"
        folder.rename(vault.root / "away")
        space.request_reindex()
        eventually(lambda: "is missing" in (space.status().lexical.error or ""))
        eventually(lambda: "retrying in" in (space.status().lexical.error or ""))
        assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "b", "c"]
        # Nor does a full reindex asked meanwhile empty the index first.
        manifest = vault.index_dir / "notes" / "manifest.json"
        saved = manifest.read_bytes()
        service.reindex("notes", full=True)
        done = threading.Event()
        space.writing.writer.put(done.set)  # the writer runs its jobs in order: this one runs after the reindex
        assert done.wait(15)
        assert manifest.read_bytes() == saved  # emptied, a restart now would drop the whole index
        assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "b", "c"]
        (vault.root / "away").rename(folder)
        vault.write("d.md", note("d", "texte commun"))  # changed while it was away
        eventually(lambda: space.status().lexical.state == IndexState.READY)
        assert space.status().lexical.error is None
        assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "b", "c", "d"]
    finally:
        service.stop()


def permissions_enforced(tmp_path: Path) -> bool:
    """Root (os.geteuid() == 0, as in CI) lists a chmod 000 folder anyway,
    unless it runs without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH: ask the system."""
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0)
    try:
        os.listdir(probe)
    except PermissionError:
        return True
    finally:
        probe.chmod(0o755)
        probe.rmdir()
    return False


def test_an_unreadable_folder_keeps_its_notes(vault: Vault, tmp_path: Path, caplog: pytest.LogCaptureFixture):
    if os.geteuid() == 0 and not permissions_enforced(tmp_path):
        pytest.skip("running as root: a chmod 000 folder stays readable")
    vault.write("a.md", note("a", "texte commun"))
    vault.write("privé/b.md", note("b", "texte commun"))
    vault.write("privé/sous/c.md", note("c", "texte commun"))
    service = vault.service()
    space = service.spaces["notes"]
    locked = vault.root / "notes" / "privé"
    locked.chmod(0)
    try:
        for paths in (None, {"privé/b.md"}):  # a full pass, and one over a watcher's report
            progress = space.writing.run_reconcile(paths=paths)
            assert progress.deleted == 0
        assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "b", "c"]
        assert space.status().lexical.error is None  # the space works; the log names the folder
        logged = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg["event"] == "folder_unreadable"]
        assert logged
        assert logged[0]["path"] == "privé"
        assert "Permission denied" in logged[0]["reason"]
    finally:
        locked.chmod(0o755)
    vault.remove("privé/b.md")
    progress = space.writing.run_reconcile()
    assert progress.deleted == 1  # readable again: a real deletion is seen
    assert sorted(ids(service.search("notes", "commun", NO_FILTER, 10))) == ["a", "c"]
    service.stop()


def test_a_pass_written_in_several_commits_leaves_one_segment(vault: Vault):
    """Each commit of a long pass leaves a Tantivy segment, which the merge
    policy leaves as they are below 8 a level, and every query pays for each
    (lexical/segments.py): the pass writes its last notes again until they merge."""
    from notarium_search.lexical.segments import committed

    for i in range(30):
        vault.write(f"n{i:02}.md", note(f"n{i}", f"texte commun {i}"))
    service = Service(vault.settings(commit_every=5))  # 6 commits: 6 segments
    space = service.spaces["notes"]
    space.writing.run_reconcile()
    lexical_dir = vault.index_dir / "notes" / "lexical"
    assert len(committed(lexical_dir)) == 1
    assert space.lexical.searcher().num_segments == 1  # the writer's own searcher sees the merge
    found = ids(service.search("notes", "commun", NO_FILTER, 100))
    assert sorted(found) == sorted(f"n{i}" for i in range(30))  # each note once, the rewritten ones too
    assert space.writing.indexer.progress.indexed == 30
    assert space.writing.indexer.manifest.opstamp == space.lexical.committed_opstamp()
    assert len(space.writing.indexer._written) == 0  # up to 7 notes of 2 MB, not kept until the next pass
    vault.write("n00.md", note("n0", "texte commun modifié"))
    space.writing.run_reconcile()  # one commit: nothing written again
    assert len(committed(lexical_dir)) == 2
    service = restart(service, vault)  # the index matches its manifest: nothing redone
    progress = service.spaces["notes"].writing.indexer.progress
    assert (progress.total, progress.indexed) == (0, 0)
    assert len(service.search("notes", "commun", NO_FILTER, 100).results) == 30
    service.stop()


def test_segments_that_cannot_be_read_leave_the_pass_whole(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """meta.json unreadable for a moment after the pass (no descriptor left):
    the notes stay committed and found, the pass is not failed, nothing is
    written again; the next long pass merges."""
    from notarium_search.lexical import segments

    def no_descriptor(lexical_dir: Path) -> list[segments.Segment]:
        raise OSError(errno.EMFILE, "Too many open files")

    for i in range(30):
        vault.write(f"n{i:02}.md", note(f"n{i}", f"texte commun {i}"))
    service = Service(vault.settings(commit_every=5))
    space = service.spaces["notes"]
    monkeypatch.setattr(segments, "committed", no_descriptor)
    progress = space.writing.run_reconcile()
    assert progress.state == IndexState.READY
    assert space.lexical.searcher().num_segments == 6
    assert len(service.search("notes", "commun", NO_FILTER, 100).results) == 30
    assert space.writing.indexer.manifest.opstamp == space.lexical.committed_opstamp()
    service.stop()
