"""The known-item benchmark still runs end to end (bench/known_items.py; its figures are not checked here)."""

from __future__ import annotations

import pytest

from bench import known_baseline, known_items
from bench.known_vault import write_vault

# The smallest generated vault that still holds every shape the benchmark
# types: shared names, aliases, headings that belong to one note.
SMOKE_NOTES = 60


def test_generated_vault_is_deterministic(tmp_path):
    first = write_vault(tmp_path / "a", "fr", SMOKE_NOTES, seed=3)
    second = write_vault(tmp_path / "b", "fr", SMOKE_NOTES, seed=3)
    assert [n.path for n in first] == [n.path for n in second]
    for note in first:
        assert (tmp_path / "a" / note.path).read_bytes() == (tmp_path / "b" / note.path).read_bytes()
    names = [n.name for n in first]
    assert len(set(names)) < len(names)  # shared names, in different folders
    assert len({n.path for n in first}) == len(first)
    notes = known_baseline.read_notes(tmp_path / "a")
    assert any(n.aliases for n in notes)
    assert any(level == 2 for n in notes for level, _, _ in n.headings)


@pytest.mark.slow
def test_known_items_smoke(tmp_path):
    """Lexical and graph modes over a tiny generated vault: every measure reported."""
    argv = ["--collections", "vault-en", "--vault-notes", str(SMOKE_NOTES), "--sample", "3", "--no-minisearch"]
    results = known_items.main([*argv, "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out.json")])
    found = results["collections"]["vault-en"]
    assert found["notes"] == SMOKE_NOTES
    for mode in ("lexical", "lexical+graph"):
        run = found[mode]
        assert run["unique_names"] > 0
        assert 0 <= run["exact_name_first_unique_pct"] <= 100
        assert run["typed_names"] == 3
        assert run["headings"] > 0
        assert run["aliases"] > 0
    assert (tmp_path / "out.json").is_file()


@pytest.mark.slow
def test_known_items_minisearch_smoke(tmp_path):
    """The Omnisearch-like baseline (node + bench/minisearch) answers the same measures."""
    why = known_baseline.available()
    if why is not None:
        pytest.skip(why)
    argv = ["--collections", "vault-fr", "--vault-notes", str(SMOKE_NOTES), "--sample", "3", "--modes", ""]
    results = known_items.main([*argv, "--work", str(tmp_path / "work")])
    run = results["collections"]["vault-fr"]["minisearch"]
    assert run["unique_names"] > 0
    assert run["exact_name_first_unique_pct"] > 0
    assert run["typed_names"] == 3
    assert run["headings"] > 0
