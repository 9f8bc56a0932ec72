"""A full disk during indexing: the last committed state keeps serving, status
says what failed, the log says it once, and indexing resumes by itself once
writes succeed again.

A file-size limit (RLIMIT_FSIZE) in a child process makes every write past a
size fail with EFBIG, as a full disk fails them with ENOSPC: Tantivy's commit
and its segment flushes fail the same way, and this needs no privileges. The
child injects the indexer's commit clock: with the 2-second first commit, a
loaded machine committed some of the big notes before the limit tripped."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_child

SCRIPT = textwrap.dedent(
    """
    import json, resource, signal, sys, time
    from pathlib import Path
    from notarium_search.types import FeedFilter
    from notarium_search.service import Service
    from notarium_search.settings import Settings, SpaceConfig
    import notarium_search.index.writer as writer_module

    import notarium_search.index.indexer as indexer

    writer_module.RETRY_FIRST_SECONDS = 0.5  # the test's patience, not the service's
    indexer.FIRST_COMMIT_SECONDS = 3600.0  # one commit, at the end of the pass, however slow the machine
    root, index = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings(spaces=(SpaceConfig("notes", root, "fr"),), index_dir=index, log_level="error",
                        rate_limit_per_minute=0, watch=False, reconcile_interval=0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails (EFBIG) instead of killing
    service = Service(settings)
    service.start()
    space = service.spaces["notes"]
    space.writing.wait_ready(30)
    before = space.status().notes
    for i in range(300):
        (root / f"big{i:03}.md").write_text(f"# Grand {i}\\n\\n" + "volumineux " * 6000 + "\\n")
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
    space.request_reindex()
    deadline = time.monotonic() + 240  # bounds on waiting, for a loaded machine
    def reported(lexical):  # the pass fails, then its retry is scheduled and said: wait for both
        return lexical.state == "failed" and "retrying in" in (lexical.error or "")

    while not reported(space.status().lexical) and time.monotonic() < deadline:
        time.sleep(0.05)
    status = space.status()
    during = {"notes": status.notes, "state": status.lexical.state, "error": status.lexical.error,
              "search": len(service.search("notes", "petit", FeedFilter(), 100).results)}
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    deadline = time.monotonic() + 240  # no file changes: only the retry can bring the notes in
    def resumed(status):  # the commit shows the notes a moment before the pass says it is done: wait for both
        return status.notes >= 320 and status.lexical.state == "ready"

    while not resumed(space.status()) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = {"notes": space.status().notes, "state": space.status().lexical.state,
             "big": len(service.search("notes", "volumineux", FeedFilter(), 100).results)}
    service.stop()
    print(json.dumps({"before": before, "during": during, "after": after}))
    """
)


def small_notes(tmp_path: Path) -> Path:
    """20 small notes, indexed before the disk fills."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(20):
        (notes / f"p{i:02}.md").write_text(f"---\nid: p{i:02}\n---\npetit texte {i}\n", encoding="utf-8")
    return notes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics")
def test_disk_full_keeps_serving_reports_and_resumes(tmp_path: Path):
    notes = small_notes(tmp_path)
    result = run_child(SCRIPT, str(notes), str(tmp_path / "index"))
    assert result["before"] == 20
    during = result["during"]
    assert during["state"] == "failed"
    assert "File too large" in during["error"]
    assert "retrying in" in during["error"]
    assert (during["notes"], during["search"]) == (20, 20)  # the last commit keeps serving
    assert result["after"] == {"notes": 320, "state": "ready", "big": 100}


# The writer dies in the middle of a pass (a segment flush fails), not at its
# commit: every later note used to fail on the dead writer with a traceback of
# its own (12,688 in 26 s in the attack review). Passes run on this thread.
WRITER_DEATH = textwrap.dedent(
    """
    import io, json, resource, signal, sys
    from collections import Counter
    from pathlib import Path
    import notarium_search.index.indexer as indexer
    import notarium_search.lexical.store as store
    from notarium_search.logsetup import configure_logging
    from notarium_search.service import Service
    from notarium_search.settings import Settings, SpaceConfig

    indexer.FIRST_COMMIT_SECONDS = 3600.0  # no timed commit: the flush is what fails
    log = io.StringIO()
    configure_logging("warning", log)
    root, index = Path(sys.argv[1]), Path(sys.argv[2])
    settings = Settings(spaces=(SpaceConfig("notes", root, "fr"),), index_dir=index, watch=False,
                        reconcile_interval=0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    service = Service(settings)
    space = service.spaces["notes"]
    space.writing.run_reconcile()
    for i in range(300):  # distinct words: a 15 MB writer heap fills and flushes segments mid-pass
        (root / f"big{i:03}.md").write_text(f"# Grand {i}\\n\\n" + " ".join(f"m{i}x{j}" for j in range(6000)))
    space.lexical.close()  # the next writer takes the small heap
    store.WRITER_HEAP_BYTES = 15_000_000  # Tantivy's least
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))
    passes = []
    for lift in (False, True):
        if lift:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        try:
            space.writing.run_reconcile()
            passes.append("ok")
        except BaseException as exc:
            passes.append(type(exc).__name__)
    events = Counter(json.loads(line)["event"] for line in log.getvalue().splitlines() if line.startswith("{"))
    print(json.dumps({"passes": passes, "notes": space.status().notes, "events": events,
                      "error": space.status().lexical.error}))
    service.stop()
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics")
def test_a_dead_writer_stops_the_pass_logs_once_and_is_replaced(tmp_path: Path):
    notes = small_notes(tmp_path)
    result = run_child(WRITER_DEATH, str(notes), str(tmp_path / "index"))
    assert result["passes"] == ["WriterFailed", "ok"]  # the first pass once writes succeed brings every note
    assert result["events"].get("note_failed", 0) == 0  # no traceback per note on a dead writer
    assert result["events"].get("note_skipped", 0) == 0
    assert result["events"]["space_index_failed"] == 1
    assert (result["notes"], result["error"]) == (320, None)
