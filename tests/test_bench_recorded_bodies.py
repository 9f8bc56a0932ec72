"""bench/recorded_bodies.py still records and still tells answers apart (issue 30).

A real server of this checkout on the sample vault, lexical only, a handful
of the requests: a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import recorded_bodies
from bench.recorded_bodies import Request, normalise

REQUESTS = ["status carnet", "search explain", "feed page 1", "feed page 2", "note content", "mcp search_notes"]


def test_normalise_replaces_only_the_volatile_parts():
    mac = "A" * 22
    body = (
        '{"took_ms":1.25,"last_indexed":"2026-12-03T16:49:32Z","notes_per_second":812.5,"eta_seconds":null,'
        f'"path":"/tmp/x/spaces/carnet","next_cursor":"WzMsMSwiYSJd.{mac}","score":1.25}}'
    )
    status = normalise(Request("s", "/spaces/carnet/status"), body, "/tmp/x/spaces")
    assert status == (
        '{"took_ms":"<took_ms>","last_indexed":"<last_indexed>","notes_per_second":"<notes_per_second>",'
        '"eta_seconds":null,"path":"$ROOT/carnet","next_cursor":"WzMsMSwiYSJd.<mac>","score":1.25}'
    )
    search = normalise(Request("s", "/spaces/carnet/search?q=x"), body, "/tmp/x/spaces")
    assert '"last_indexed":"2026-12-03T16:49:32Z"' in search  # only status answers have those replaced
    assert '"notes_per_second":812.5' in search


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bodies") / "a.json"
    argv = ["--sample-only", "--lexical", "--out", str(out)]
    assert recorded_bodies.main([*argv, *(f"--only={name}" for name in REQUESTS)]) == 0
    return out


def test_records_the_requests(recording: Path):
    answers = {a["name"]: a for a in json.loads(recording.read_text(encoding="utf-8"))["answers"]}
    assert list(answers) == REQUESTS
    assert all(a["status"] == 200 for a in answers.values())
    assert "date" not in answers["status carnet"]["headers"]
    assert '"notes":7' in answers["status carnet"]["body"]
    assert '"took_ms":"<took_ms>"' in answers["search explain"]["body"]
    assert answers["feed page 2"]["body"] != answers["feed page 1"]["body"]  # the cursor was followed
    assert ".<mac>" in answers["feed page 1"]["body"]
    assert '"result"' in answers["mcp search_notes"]["body"]


def test_compare_flags_a_changed_body(recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert recorded_bodies.main(["--compare", str(recording), str(recording)]) == 0
    changed = json.loads(recording.read_text(encoding="utf-8"))
    answer = next(a for a in changed["answers"] if a["name"] == "note content")
    answer["body"] = answer["body"].replace("Règlement DORA", "Reglement DORA", 1)
    other = tmp_path / "b.json"
    other.write_text(json.dumps(changed, ensure_ascii=False), encoding="utf-8")
    capsys.readouterr()
    assert recorded_bodies.main(["--compare", str(recording), str(other)]) == 1
    shown = capsys.readouterr().out
    assert "=== note content" in shown
    assert '+  "title": "Reglement DORA"' in shown
    assert "1 differ" in shown
