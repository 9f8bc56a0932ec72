"""Finding the notes on disk, and reading them safely: deep trees, symlinks
swapped under the writer, files that cannot be stat'ed."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from notarium_search.lexical import stored as stored_notes
from notarium_search.notes.scan import MAX_FOLDER_DEPTH, OutsideSpace, open_note, scan_space
from notarium_search.settings import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from notarium_search.types import FeedFilter, IndexProgress
from tests.conftest import Vault, ids


def note(note_id: str, body: str) -> str:
    return f"---\nid: {note_id}\n---\n{body}\n"


def logged(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, object]]:
    return [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == event]


def nest(root: Path, depth: int) -> Path:
    """`depth` folders one inside the other, made with relative mkdirs: the
    whole path (2 characters a level) stays far below PATH_MAX."""
    folder = root
    for _ in range(depth):  # os.makedirs recurses too
        folder = folder / "d"
        folder.mkdir(parents=False, exist_ok=True)
    return folder


def unnest(root: Path) -> None:
    """Remove what `nest` made under `root`, deepest folder first, without
    recursion. Left in place, the tree broke a later pytest session that had
    passed: its clean-up of old temporary folders (shutil.rmtree, one recursion
    per level) raised RecursionError, an internal error and exit status 1 (seen
    on the shared CI machine, where every run's folders sit side by side)."""
    chain = [root / "d"]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        folder.rmdir()


def test_a_very_deep_tree_never_blocks_the_space(vault: Vault, caplog: pytest.LogCaptureFixture):
    """1,000 nested folders: os.walk recursed once per level on Python 3.11 and
    raised RecursionError, so the space stayed at 0 notes, retrying forever.
    Folders past the bound are skipped with a logged reason; the rest is indexed."""
    space_root = vault.root / "notes"
    vault.write("top.md", note("top", "racine visible"))
    deepest = nest(space_root, 1000)
    try:
        (deepest / "deep.md").write_text(note("deep", "racine enfouie"))
        shallow = space_root.joinpath(*["d"] * 5)
        (shallow / "five.md").write_text(note("five", "racine moyenne"))
        bounded = space_root.joinpath(*["d"] * MAX_FOLDER_DEPTH)
        (bounded / "edge.md").write_text(note("edge", "racine limite"))
        assert sys.getrecursionlimit() < 1000 + 50  # the tree is deeper than a recursive walk could go
        service = vault.service()
        found = sorted(ids(service.search("notes", "racine", FeedFilter(), 10)))
        assert found == ["edge", "five", "top"]
        assert service.spaces["notes"].ready
        skipped = logged(caplog, "folder_skipped")
        assert len(skipped) == 1  # once, for the cut, not once per folder below it
        assert "deeper than" in str(skipped[0]["reason"])
        # A watcher's report of the deep file is filtered like the scan.
        report = {str(deepest.relative_to(space_root) / "deep.md")}
        assert service.spaces["notes"].writing.run_reconcile(paths=report).total == 0
        service.stop()
    finally:
        unnest(space_root)


def test_a_symlink_swapped_after_the_scan_is_not_read(vault: Vault, tmp_path: Path):
    """The scan checks a symlink's target; the read comes later. A link
    swapped in between to a file outside the space must not be indexed:
    the file opened is checked, not the path checked before."""
    outside = tmp_path / "secret.md"
    outside.write_text(note("secret", "mot de passe bancaire"))
    vault.write("a.md", note("a", "premier texte"))
    vault.write("inside.md", note("inside", "contenu permis"))
    link = vault.root / "notes" / "b.md"
    link.symlink_to(vault.root / "notes" / "inside.md")  # inside the space: allowed
    service = vault.service()
    space = service.spaces["notes"]
    assert "b.md" in {p.path for p in stored_notes.all_payloads(space.lexical)}
    os.utime(link, follow_symlinks=False)
    (vault.root / "notes" / "inside.md").write_text(note("inside", "contenu permis modifié"))

    def swap_after_first(progress: IndexProgress) -> None:  # the pass reads a.md, then b.md
        if progress.done == 1 and link.resolve() != outside:
            link.unlink()
            link.symlink_to(outside)

    vault.write("a.md", note("a", "premier texte modifié"))
    space.writing.run_reconcile(swap_after_first)
    assert link.resolve() == outside  # the swap happened between the scan and the read of b.md
    stored = {p.path: p.text for p in stored_notes.all_payloads(space.lexical)}
    assert not any("bancaire" in text for text in stored.values())
    assert "b.md" not in stored
    service.stop()


def test_open_note_checks_what_it_opened(tmp_path: Path):
    space = tmp_path / "space"
    space.mkdir()
    (space / "ok.md").write_text("dedans")
    (tmp_path / "out.md").write_text("dehors")
    (space / "out.md").symlink_to(tmp_path / "out.md")
    (space / "in.md").symlink_to(space / "ok.md")
    os.mkfifo(space / "fifo.md")
    with open_note(str(space.resolve()), "ok.md") as handle:
        assert handle.read() == b"dedans"
    with open_note(str(space.resolve()), "in.md") as handle:  # a link inside the space is followed
        assert handle.read() == b"dedans"
    with pytest.raises(OutsideSpace):
        open_note(str(space.resolve()), "out.md")
    with pytest.raises(OutsideSpace):  # never blocks on a FIFO swapped in
        open_note(str(space.resolve()), "fifo.md")
    with pytest.raises(FileNotFoundError):
        open_note(str(space.resolve()), "gone.md")


def test_a_note_that_cannot_be_stated_is_kept_not_deleted(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    """An error stat'ing one listed file (EACCES, EIO) says nothing about its
    note: it stays indexed as it was; only a file that is gone is deleted."""
    vault.write("a.md", note("a", "texte commun"))
    vault.write("b.md", note("b", "texte commun"))
    service = vault.service()
    real_stat = os.stat

    def failing_stat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).endswith("b.md"):
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", failing_stat)
    progress = service.spaces["notes"].writing.run_reconcile()
    assert progress.deleted == 0
    monkeypatch.undo()
    assert sorted(ids(service.search("notes", "commun", FeedFilter(), 10))) == ["a", "b"]
    service.stop()


def test_too_many_open_files_stops_the_scan_instead_of_skipping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """EMFILE while listing a folder is the machine, not the folder: the scan
    raises StorageFault (the pass is retried) rather than reporting the folder
    unreadable or its notes gone."""
    from notarium_search.storage.faults import StorageFault

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.md").write_text("x")
    real_scandir = os.scandir

    def exhausted(path: str) -> Any:
        if str(path).endswith("sub/"):
            raise OSError(errno.EMFILE, "Too many open files", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", exhausted)
    with pytest.raises(StorageFault, match="EMFILE"):
        scan_space(tmp_path, DEFAULT_INCLUDE, DEFAULT_EXCLUDE)
