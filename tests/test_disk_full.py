"""A full disk during indexing: the last committed state keeps serving, status
says what failed, and indexing resumes by itself once writes succeed again.

A file-size limit (RLIMIT_FSIZE) in a child process makes every write past
200 KB fail with EFBIG, as a full disk fails them with ENOSPC: Tantivy's
commit fails the same way, and this needs no privileges."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import json, resource, signal, sys, time
    from pathlib import Path
    from notarium_search.models import FeedFilter
    from notarium_search.service import Service
    from notarium_search.settings import Settings, SpaceConfig
    import notarium_search.space as space_module

    space_module.RETRY_FIRST_SECONDS = 0.5  # the test's patience, not the service's
    root, index = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings(spaces=(SpaceConfig("notes", root, "fr"),), index_dir=index, log_level="error",
                        rate_limit_per_minute=0, watch=False, reconcile_interval=0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG) instead of killing
    service = Service(settings)
    service.start()
    space = service.spaces["notes"]
    space.wait_ready(30)
    before = space.status().notes
    for i in range(300):
        (root / f"big{i:03}.md").write_text(f"# Grand {i}\\n\\n" + "volumineux " * 6000 + "\\n")
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
    space.request_reindex()
    deadline = time.monotonic() + 30
    while space.status().lexical.state != "failed" and time.monotonic() < deadline:
        time.sleep(0.05)
    status = space.status()
    during = {"notes": status.notes, "state": status.lexical.state, "error": status.lexical.error,
              "search": len(service.search("notes", "petit", FeedFilter(), 100).results)}
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    deadline = time.monotonic() + 60  # no file changes: only the retry can bring the notes in
    while space.status().notes < 320 and time.monotonic() < deadline:
        time.sleep(0.1)
    after = {"notes": space.status().notes, "state": space.status().lexical.state,
             "big": len(service.search("notes", "volumineux", FeedFilter(), 100).results)}
    service.stop()
    print(json.dumps({"before": before, "during": during, "after": after}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics")
def test_disk_full_keeps_serving_reports_and_resumes(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(20):
        (notes / f"p{i:02}.md").write_text(f"---\nid: p{i:02}\n---\npetit texte {i}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(notes), str(tmp_path / "index")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == 20
    during = result["during"]
    assert during["state"] == "failed"
    assert "File too large" in during["error"]
    assert "retrying in" in during["error"]
    assert (during["notes"], during["search"]) == (20, 20)  # the last commit keeps serving
    assert result["after"] == {"notes": 320, "state": "ready", "big": 100}
