"""The manifest and the unsettled-commit record: what a failed read of them
means. Only content read and found invalid is damage; an OS error while
reading (too many open files) changes nothing and is retried."""

from __future__ import annotations

import errno
import textwrap
from pathlib import Path

import msgspec
import pytest

from notarium_search.index.manifest import Entry, Manifest
from notarium_search.semantic.embedding import load_embedder
from notarium_search.service import Service
from notarium_search.storage.faults import StorageFault
from tests.conftest import Vault, build_semantic, models_dir, run_child

# Fills the process's descriptor table (real EMFILE, no patching) and runs a
# pass that needs to write, twice (as the service retries), frees the table,
# deletes notes, runs passes again.
EXHAUSTION = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from notarium_search.lexical import stored as stored_notes
    from notarium_search.logsetup import configure_logging
    from notarium_search.service import Service
    from notarium_search.settings import Settings, SpaceConfig

    configure_logging("critical", sys.stderr)
    notes, index = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings(spaces=(SpaceConfig("notes", notes, "fr"),), index_dir=index, watch=False,
                        reconcile_interval=0, rate_limit_per_minute=0)
    service = Service(settings)
    space = service.spaces["notes"]
    space.writing.run_reconcile()
    (notes / "n00.md").write_text("---\\nid: n00\\n---\\nmodifiée\\n")  # the next pass must write
    held, failed = [], []
    for attempt in range(2):  # the first failure drops the writer (freeing its files); the retry meets EMFILE anew
        try:
            while True:
                held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        try:
            space.writing.run_reconcile()
            failed.append(None)
        except BaseException as exc:
            failed.append(type(exc).__name__)
    for fd in held:
        os.close(fd)
    for i in range(1, 6):  # deleted once the descriptors are back, before the next pass
        (notes / f"n{i:02}.md").unlink()
    passes = []
    for _ in range(2):
        try:
            space.writing.run_reconcile()
            passes.append("ok")
        except BaseException as exc:
            passes.append(type(exc).__name__)
    indexed = sorted(p.path for p in stored_notes.all_payloads(space.lexical))
    service.stop()
    print(json.dumps({"failed": failed, "passes": passes, "indexed": indexed,
                      "files": sorted(p.name for p in notes.iterdir())}))
    """
)


def test_too_many_open_files_never_leaves_ghost_notes(tmp_path: Path):
    """Under EMFILE the manifest could not be read back after a failed pass and
    was taken for empty: notes deleted meanwhile stayed in the index for good
    (3,000 notes for 2,980 files in the attack review)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(30):
        (notes / f"n{i:02}.md").write_text(f"---\nid: n{i:02}\n---\ntexte {i}\n", encoding="utf-8")
    result = run_child(EXHAUSTION, str(notes), str(tmp_path / "index"))
    assert result["failed"] == ["StorageFault", "StorageFault"]  # stopped; nothing taken for damage
    assert result["passes"] == ["ok", "ok"]
    assert result["indexed"] == result["files"]  # 25 notes for 25 files


@pytest.mark.parametrize("name", ["manifest.json", "unsettled.json"])
def test_an_os_error_reading_a_record_is_not_damage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str):
    manifest = Manifest(tmp_path / "manifest.json", "fp", {"a.md": Entry(1, 2, "d", "a")})
    manifest.save()
    manifest.mark_unsettled({"a"}, {"a.md"})
    real_read = Path.read_bytes

    def exhausted(path: Path) -> bytes:
        if path.name == name:
            raise OSError(errno.EMFILE, "Too many open files", str(path))
        return real_read(path)

    monkeypatch.setattr(Path, "read_bytes", exhausted)
    read = (
        (lambda: Manifest.load(tmp_path / "manifest.json", "fp"))
        if name == "manifest.json"
        else manifest.load_unsettled
    )
    with pytest.raises(StorageFault, match="EMFILE"):
        read()


def test_invalid_content_is_damage(tmp_path: Path):
    (tmp_path / "manifest.json").write_bytes(b"\x00{half")
    assert Manifest.load(tmp_path / "manifest.json", "fp").entries == {}
    manifest = Manifest(tmp_path / "manifest.json", "fp")
    manifest.unsettled_path.write_bytes(b"{")
    unsettled = manifest.load_unsettled()
    assert unsettled is not None
    assert unsettled.everything


def test_the_opstamp_is_kept_and_forgotten_with_the_entries(tmp_path: Path):
    manifest = Manifest(tmp_path / "manifest.json", "fp", {"a.md": Entry(1, 2, "d", "a")}, opstamp=7)
    manifest.save()
    loaded = Manifest.load(tmp_path / "manifest.json", "fp")
    assert (loaded.opstamp, loaded.indexed_notes()) == (7, 1)
    loaded.forget()
    assert (loaded.opstamp, loaded.entries) == (None, {})


def test_a_search_counts_the_records_without_decoding_them(tmp_path: Path):
    """`load_counted` (a search from the shell): no record, the counts its
    writer saved, the same checks; the whole manifest when it was written
    before the counts; never saved (it would write no record)."""
    path = tmp_path / "manifest.json"
    entries = {"a.md": Entry(1, 2, "d", "a"), "b.md": Entry(1, 2, "d", "b"), "c.bin": Entry(1, 2, "d", None, "binary")}
    Manifest(path, "fp", entries, opstamp=7, unread=0).save()
    counted = Manifest.load_counted(path, "fp")
    assert (counted.entries, counted.file_count(), counted.indexed_notes()) == ({}, 3, 2)
    assert (counted.opstamp, counted.unread) == (7, 0)
    whole = Manifest.load(path, "fp")
    assert (whole.file_count(), whole.indexed_notes()) == (3, 2)
    assert Manifest.load_counted(path, "another fingerprint").file_count() == 0  # rebuilt, as with `load`
    with pytest.raises(RuntimeError, match="never saved"):
        counted.save()
    assert Manifest.load(path, "fp").entries == entries

    older = {"fingerprint": "fp", "entries": entries, "opstamp": 7, "unread": 0}
    for counts in ({}, {"files": "3", "indexed": 2}, {"files": 3, "indexed": -1}, {"files": 1, "indexed": 2}):
        path.write_bytes(msgspec.json.encode({**older, **counts}))  # before the counts, or counts that cannot be
        fallback = Manifest.load_counted(path, "fp")
        assert (fallback.entries, fallback.file_count(), fallback.indexed_notes()) == (entries, 3, 2), counts
        assert Manifest.load(path, "fp").entries == entries  # a bad count never costs the writer its records
    with pytest.raises(RuntimeError, match="never saved"):
        Manifest.load_head(path, "fp").save()  # a follower's: no record either


def test_a_search_from_the_shell_does_not_decode_the_records(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """offline_search opens the space with the records' counts only (12 of
    its ~165 ms at 10,000 notes went to decoding them) and still sees an
    index that lost a note behind its manifest's back."""
    from notarium_search import offline_search
    from notarium_search.lexical.store import LexicalIndex
    from notarium_search.types import FeedFilter

    for i in range(3):
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\ntexte commun {i}\n")
    settings = vault.settings()
    service = Service(settings)
    service.spaces["notes"].writing.run_reconcile()
    service.stop()

    def decoded(*_: object) -> Manifest:
        raise AssertionError("the records were decoded")

    monkeypatch.setattr(Manifest, "load", decoded)
    response, behind = offline_search.search(settings, "notes", "commun", FeedFilter(), 10, "relevance")
    assert (len(response.results), response.partial, behind) == (3, False, [])
    lexical = LexicalIndex(settings.index_dir / "notes" / "lexical", "fr")
    lexical.delete("n0")
    lexical.commit()
    lexical.close()
    response, behind = offline_search.search(settings, "notes", "commun", FeedFilter(), 10, "relevance")
    assert (len(response.results), response.partial) == (2, True)
    assert behind == ["the index holds 2 notes, its manifest 3"]


def test_something_else_in_a_records_place_is_damage_not_a_passing_fault(tmp_path: Path):
    """A folder where the manifest should be will not pass by waiting (unlike
    EMFILE): it reads as invalid, so the index is rebuilt from the notes."""
    (tmp_path / "manifest.json").mkdir()
    assert Manifest.load(tmp_path / "manifest.json", "fp").entries == {}
    manifest = Manifest(tmp_path / "manifest.json", "fp")
    manifest.unsettled_path.mkdir()
    unsettled = manifest.load_unsettled()
    assert unsettled is not None
    assert unsettled.everything


def test_a_writer_holds_one_copy_of_each_path(vault: Vault):
    """The manifest, the link graph and the vector manifest each took a note's
    path apart (decoded from their files, parsed from the note): three copies
    of every path in a writer, 21 MiB beyond the first at 50,000 notes. They
    are one string (index/manifest.interned), after a pass and after a restart."""
    pack = models_dir() / "all-minilm-l6-v2-int8"
    for i in range(11):
        vault.write(f"dossier/Compte rendu n°{i}.md", f"Le compte rendu {i} suit [[Compte rendu n°{(i + 1) % 12}]].\n")
    vault.write("dossier/Compte rendu n°11.md", "---\nid: cr-onze\n---\nLe dernier suit [[Compte rendu n°0]].\n")
    settings = vault.settings(vector_search=True, graph_boost=True, model_dir=pack)
    embedder = load_embedder(pack)
    built = Service(settings)
    build_semantic(built, embedder)
    built_space = built.spaces["notes"]
    built_space.graph.ensure_built()
    spaces = [built_space]
    built.stop()
    restarted = Service(settings)
    build_semantic(restarted, embedder)  # the vectors read back from their file, none embedded again
    spaces.append(restarted.spaces["notes"])
    for space in spaces:
        space.graph.ensure_built()
        assert space.semantic is not None
        assert space.semantic.index is not None
        entries = space.writing.indexer.manifest.entries
        graph = {e.note_id: e.note_id for e in space.graph.graph._entries.values()}
        vectors = {note_id: note_id for note_id in space.semantic.index.notes}
        assert len(entries) == len(graph) == len(vectors) == 12
        for path, entry in entries.items():
            note_id = entry.note_id
            assert note_id is not None
            assert note_id is path or (path.endswith("n°11.md") and note_id == "cr-onze")
            assert graph[note_id] is note_id
            assert vectors[note_id] is note_id
