"""The integrity check that decides a repair (lexical/integrity.py): Tantivy's
footer checksums read from the files of the last commit."""

from __future__ import annotations

import errno
from pathlib import Path

import msgspec
import pytest

from notarium_search.lexical import integrity
from notarium_search.lexical.integrity import Verdicts, check, suspected_damage
from notarium_search.storage.faults import StorageFault
from tests.conftest import Vault
from tests.index.test_corruption import DAMAGE, fill


@pytest.fixture
def lexical_dir(vault: Vault) -> Path:
    fill(vault)
    vault.service().stop()
    return vault.index_dir / "notes" / "lexical"


def test_a_whole_index_passes(lexical_dir: Path):
    assert check(lexical_dir) is None


@pytest.mark.parametrize("damage", [d for d in DAMAGE if not d.startswith("manifest")])
def test_each_damage_of_the_files_fails_the_check_with_what_is_damaged(lexical_dir: Path, damage: str):
    DAMAGE[damage](lexical_dir.parent)
    verdict = check(lexical_dir)
    assert verdict is not None
    assert "meta.json" in verdict or any(verdict.startswith(p.stem) for p in lexical_dir.iterdir())


def test_a_folder_in_place_of_a_segment_file_is_damage(lexical_dir: Path):
    store = next(p for p in lexical_dir.iterdir() if p.suffix == ".store")
    store.unlink()
    store.mkdir()
    assert "directory" in (check(lexical_dir) or "")


def test_a_passing_read_error_says_nothing_of_the_content(lexical_dir: Path, monkeypatch: pytest.MonkeyPatch):
    def failing(path: Path) -> str | None:
        raise OSError(errno.EIO, "Input/output error", str(path))

    monkeypatch.setattr(integrity, "_file_damage", failing)
    with pytest.raises(StorageFault, match="EIO"):
        check(lexical_dir)


def test_one_verdict_per_commit_for_a_minute_at_most(lexical_dir: Path):
    now = [0.0]
    verdicts = Verdicts(lexical_dir, clock=lambda: now[0])
    assert verdicts.damage() is None
    DAMAGE["terms flipped"](lexical_dir.parent)
    assert verdicts.damage() is None  # the same commit: not read again
    meta = lexical_dir / "meta.json"
    meta.write_bytes(meta.read_bytes())  # what a commit does: meta.json replaced
    assert "checksum mismatch" in (verdicts.damage() or "")


def test_a_whole_verdict_is_not_trusted_past_a_minute(lexical_dir: Path):
    """Damaged later (a bad block) with no commit since: an idle space must not answer 500 for ever."""
    now = [0.0]
    verdicts = Verdicts(lexical_dir, clock=lambda: now[0])
    assert verdicts.damage() is None
    DAMAGE["terms flipped"](lexical_dir.parent)
    now[0] = 61.0
    assert "checksum mismatch" in (verdicts.damage() or "")


@pytest.mark.parametrize(
    ("exc", "suspected"),
    [
        (ValueError("An IO error occurred: 'Failed to read codec type'"), True),
        (ValueError("Data corrupted: 'x'"), True),
        (ValueError("Failed to open file for read: 'x'"), True),
        (msgspec.DecodeError("truncated"), True),
        (ValueError("An IO error occurred: 'Too many open files (os error 24)'"), False),  # a shortage
        (ValueError("year 10000 is out of range"), False),
        (ValueError("An invalid argument was passed: 'x'"), False),
        (OverflowError("date value out of range"), False),
        (KeyError("id"), False),
    ],
)
def test_only_the_index_library_s_file_errors_are_suspected(exc: BaseException, suspected: bool):
    assert suspected_damage(exc) is suspected
