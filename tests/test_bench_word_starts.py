"""The first-letters benchmark still runs end to end (bench/word_starts.py; its figures are not checked here)."""

from __future__ import annotations

import pytest

from bench import word_starts

SMOKE_NOTES = 60


@pytest.mark.slow
def test_word_starts_smoke(tmp_path):
    """Lexical over a tiny generated vault: every query kind reported, and the abbreviations answered."""
    argv = ["--collections", "vault-fr", "--vault-notes", str(SMOKE_NOTES), "--sample", "5", "--no-minisearch"]
    results = word_starts.main([*argv, "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out.json")])
    found = results["collections"]["vault-fr"]
    assert found["names"] == 5
    for kind in word_starts.QUERIES:
        assert 0 <= found["lexical"][kind][f"top{word_starts.DEPTH}_pct"] <= 100
    assert found["lexical"]["initials"]["top10_pct"] > 0
    assert (tmp_path / "out.json").is_file()
