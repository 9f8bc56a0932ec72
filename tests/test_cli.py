"""The `notarium-search` command line, run as a real subprocess."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from notarium_search.service import Service
from tests.conftest import Vault, models_dir


def run(args: list[str], vault: Vault, tmp_path: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    # The language `vault.settings` gives the space "notes": the commands and
    # an in-process service then read one index, not two fingerprints.
    env["NOTARIUM_LANGUAGE"] = "fr"
    env.pop("NOTARIUM_CONFIG", None)
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "notarium_search", *args], env=env, capture_output=True, text=True, timeout=120
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_index_search_status(vault: Vault, tmp_path: Path):
    for i in range(30):
        vault.write(f"n{i}.md", f"---\nid: n{i}\ntitle: Titre {i}\n---\nLe café numéro {i}.\n")
    not_yet = run(["search", "notes", "café"], vault, tmp_path)
    assert not_yet.returncode == 1
    assert "not indexed yet" in not_yet.stderr

    indexed = run(["index", "notes"], vault, tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    assert "notes: 30 notes, 30 indexed" in indexed.stdout
    # The progress bar: done/total, the rate in notes/s, then the time remaining (0:00:00 once done).
    assert re.search(r"30/30 [\d,]+ notes/s \d+:\d\d:\d\d", indexed.stdout), indexed.stdout

    again = run(["index", "notes"], vault, tmp_path)
    assert "30 notes, 0 indexed" in again.stdout

    found = run(["search", "notes", "cafe", "--json", "--limit", "3"], vault, tmp_path)
    assert found.returncode == 0, found.stderr
    body = json.loads(found.stdout)
    assert len(body["results"]) == 3
    assert body["results"][0]["snippets"][0]["html"].count("<mark>") == 1

    table = run(["search", "notes", "cafe"], vault, tmp_path)
    assert "Titre" in table.stdout

    status = json.loads(run(["status", "--json"], vault, tmp_path).stdout)
    (row,) = status["spaces"]
    assert datetime.fromisoformat(row.pop("last_indexed")).tzinfo is not None
    assert row == {
        "space": "notes",
        "path": str(vault.root / "notes"),
        "notes": 30,
        "skipped": 0,
        "skipped_notes": [],
        "state": "complete",
        "files": 30,
        "to_index": 0,
        "to_delete": 0,
        "detail": None,
        "lexical": {"state": "complete"},
        "semantic": {"state": "off", "embedded": None, "total": None, "reason": None},
        "graph": {"state": "off", "links": None, "dangling": None},
    }

    full = run(["index", "notes", "--full"], vault, tmp_path)
    assert "30 notes, 30 indexed" in full.stdout


def test_search_prints_each_hit_with_path_line_and_section(vault: Vault, tmp_path: Path):
    vault.write("projets/a.md", "---\nid: a\n---\n# Projets\n\n## DORA\n\nLe registre des tiers.\n")
    vault.write("b.md", "---\ntitle: Registre seul\n---\nRien ici.\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    done = run(["search", "notes", "registre", "--tag", "absent"], vault, tmp_path)
    assert done.stdout == "0 results in " + done.stdout.split(" in ", 1)[1]
    done = run(["search", "notes", "registre tiers"], vault, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"2 results in [\d.]+ ms", lines[0])
    first = lines.index("1. Projets")
    assert lines[first + 1] == "   projets/a.md:8 · Projets > DORA"  # opens at the match in an editor
    assert lines[first + 2].endswith("Le registre des tiers.")  # piped: no escape codes
    assert "\x1b" not in done.stdout
    assert lines[lines.index("2. Registre seul") + 1] == "   b.md:4"  # a title match: where the body starts


# The command run as `python -m notarium_search` does, with the modules it
# imported written at exit (after the output, whatever the exit code).
MODULES_AT_EXIT = """
import atexit, json, os, runpy, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
runpy.run_module("notarium_search", run_name="__main__", alter_sys=True)
"""
# What neither `search` nor `status` needs (issue 34): the service, the front
# doors and their HTTP stack, the model and the vector index.
NOT_FOR_THE_SHELL = (
    "notarium_search.service",
    "notarium_search.api",
    "notarium_search.mcp",
    "litestar",
    "granian",
    "httpx",
    "onnxruntime",
    "usearch",
)


def imported_by(args: list[str], vault: Vault, tmp_path: Path, **extra_env: str) -> set[str]:
    return set(written_at_exit(MODULES_AT_EXIT, args, vault, tmp_path, **extra_env))


def written_at_exit(wrapper: str, args: list[str], vault: Vault, tmp_path: Path, **extra_env: str) -> Any:
    """What `wrapper` (MODULES_AT_EXIT, DATACLASSES_AT_EXIT) wrote at the command's exit."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    env.update(NOTARIUM_LANGUAGE="fr", MODULES_OUT=str(out), **extra_env)
    env.pop("NOTARIUM_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", wrapper, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_search_and_status_import_only_what_they_need(vault: Vault, tmp_path: Path):
    """A search from the shell imported the service, and with it everything
    beneath it (issue 34: 0.62 s, almost all imports). `search` and `status`
    read the index without the service, its HTTP stack, the model or usearch,
    VECTOR_SEARCH on or not for `search` (a read-only search loads no model)."""
    vault.write("a.md", "---\nid: a\ntags: [x]\n---\nLe café de la gare.\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    semantic = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(models_dir() / "all-minilm-l6-v2-int8")}
    for args, env in [
        (["search", "notes", "café"], {}),
        (["search", "notes", "café", "--json"], {}),
        (["search", "notes", "tag:x"], {}),
        (["search", "notes", "café"], semantic),
        (["status"], {}),
        (["status", "--json"], {}),
    ]:
        modules = imported_by(args, vault, tmp_path, **env)
        assert "notarium_search.lexical.search" in modules  # the wrapper saw the command's own imports
        assert not unneeded(modules), (args, env, unneeded(modules))


# The command run as `python -m notarium_search` does, with the package's
# dataclasses among the modules it imported written at exit.
DATACLASSES_AT_EXIT = """
import atexit, dataclasses, json, os, runpy, sys
def made():
    return sorted(
        f"{name}.{value.__qualname__}"
        for name, module in list(sys.modules.items()) if name.startswith("notarium_search")
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)
    )
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(made())))
runpy.run_module("notarium_search", run_name="__main__", alter_sys=True)
"""
# Each dataclass compiles its generated methods when its module is imported
# (~0.8 ms a class on Python 3.11): the records a search from the shell loads
# are msgspec Structs (docs/benchmarks.md, "Records as msgspec Structs"), but
# for these two, which a Struct cannot declare.
SHELL_DATACLASSES = {"notarium_search.types.ChannelHit", "notarium_search.settings.declared.Choices"}


def test_search_and_status_from_the_shell_make_no_other_dataclass(vault: Vault, tmp_path: Path):
    """76 dataclasses took 62.6 of the 160 ms a search from the shell spent
    after the interpreter's start; a new one on that path is a Struct, or
    joins SHELL_DATACLASSES with its reason."""
    vault.write("a.md", "---\nid: a\ntags: [x]\n---\nLe café de la gare.\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    for args in (["search", "notes", "café"], ["status"]):
        made = set(written_at_exit(DATACLASSES_AT_EXIT, args, vault, tmp_path))
        assert "notarium_search.types.ChannelHit" in made  # the wrapper saw the command's own modules
        assert made <= SHELL_DATACLASSES, (args, sorted(made - SHELL_DATACLASSES))


def test_status_with_vector_search_imports_no_model(vault: Vault, tmp_path: Path):
    """`status` reads the pack's fingerprint and counts the saved vectors
    without onnxruntime or usearch (semantic/load_order.py, semantic/counting.py),
    and still says how many fragments are embedded."""
    vault.write("a.md", "---\nid: a\n---\nLe café de la gare.\n")
    semantic = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(models_dir() / "all-minilm-l6-v2-int8")}
    assert run(["index", "notes"], vault, tmp_path, **semantic).returncode == 0
    assert not unneeded(imported_by(["status"], vault, tmp_path, **semantic))
    body = json.loads(run(["status", "--json"], vault, tmp_path, **semantic).stdout)
    (row,) = body["spaces"]
    assert (row["semantic"]["state"], row["semantic"]["embedded"]) == ("complete", row["semantic"]["total"])
    assert row["semantic"]["total"] >= 1


def unneeded(modules: set[str]) -> list[str]:
    """Those of NOT_FOR_THE_SHELL (a package with its modules) among `modules`."""
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in NOT_FOR_THE_SHELL))


def index_12_of_30(vault: Vault, tmp_path: Path, word: str) -> None:
    """30 notes holding `word`, indexed up to the 12th: what Ctrl+C during `index` leaves."""
    for i in range(30):
        vault.write(f"n{i:02}.md", f"---\nid: n{i}\n---\ntexte {word} {i}\n")
    service = Service(vault.settings(index_dir=tmp_path / "index", commit_every=5))
    space = service.spaces["notes"]
    space.writing.run_reconcile(lambda p: space.writing.stop_event.set() if p.done == 12 else None)  # what Ctrl+C does
    service.stop()


def test_search_says_partial_only_while_an_indexing_pass_is_unfinished(vault: Vault, tmp_path: Path):
    """`search --json` said `partial: true` on a complete index: a read-only
    space took its readiness from its own indexer, which never runs there. It
    now reads what the writer recorded: the files its last pass had left."""
    for i in range(30):
        vault.write(f"n{i:02}.md", f"---\nid: n{i}\n---\ntexte commun {i}\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    body = json.loads(run(["search", "notes", "commun", "--json", "--limit", "50"], vault, tmp_path).stdout)
    assert (len(body["results"]), body["partial"]) == (30, False)
    assert "partial" not in run(["search", "notes", "commun"], vault, tmp_path).stdout

    index_12_of_30(vault, tmp_path, "nouveau")
    body = json.loads(run(["search", "notes", "nouveau", "--json", "--limit", "50"], vault, tmp_path).stdout)
    assert (len(body["results"]), body["partial"]) == (12, True)
    printed = run(["search", "notes", "nouveau"], vault, tmp_path).stdout.splitlines()
    assert printed[-1] == (
        "partial: 18 files left to read by an indexing pass under way or cut short;"
        " `notarium-search index notes` (or the service) completes it"
    )

    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    body = json.loads(run(["search", "notes", "nouveau", "--json", "--limit", "50"], vault, tmp_path).stdout)
    assert (len(body["results"]), body["partial"]) == (30, False)
    # An edit made while nothing indexes is not "partial" (no pass is
    # unfinished, and finding it means stat'ing every file): `status` says it.
    vault.write("n00.md", "---\nid: n0\n---\ntexte modifié\n")
    assert json.loads(run(["search", "notes", "nouveau", "--json"], vault, tmp_path).stdout)["partial"] is False
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path).stdout)["spaces"]
    assert (row["state"], row["to_index"]) == ("partial", 1)


def test_index_repairs_an_index_that_does_not_match_its_manifest(vault: Vault, tmp_path: Path):
    """`status` and `search` say to run `index` when the index lost notes
    behind its manifest's back, but `index` queued the repair on a writer
    thread that never runs in the command, then trusted the manifest: the
    notes stayed lost and the advice never came true."""
    from notarium_search.lexical.store import LexicalIndex

    for i in range(5):
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\ntexte commun {i}\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    lexical = LexicalIndex(tmp_path / "index" / "notes" / "lexical", "fr")  # an older meta.json put back, say
    lexical.delete("n0")
    lexical.commit()
    lexical.close()
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path).stdout)["spaces"]
    assert row["state"] == "partial"
    assert row["detail"].startswith("the index holds 4 notes, its manifest 5: it is rebuilt from the notes")
    printed = run(["search", "notes", "commun"], vault, tmp_path).stdout.splitlines()
    assert printed[0].startswith("4 results")
    assert printed[-1].startswith("partial: the index holds 4 notes, its manifest 5; `notarium-search index notes`")

    done = run(["index", "notes"], vault, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "notes: 5 notes, 5 indexed, 0 deleted, 0 skipped"  # the repair's own pass
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path).stdout)["spaces"]
    assert (row["state"], row["notes"]) == ("complete", 5)
    body = json.loads(run(["search", "notes", "commun", "--json"], vault, tmp_path).stdout)
    assert (len(body["results"]), body["partial"]) == (5, False)


def test_status_tells_a_partial_index_from_a_complete_one(vault: Vault, tmp_path: Path):
    """An interrupted `index` once left `status` saying "indexed 12 notes" as
    if that were all of them."""
    index_12_of_30(vault, tmp_path, "commun")

    text = run(["status"], vault, tmp_path, GRAPH_BOOST="1")
    assert text.returncode == 0, text.stderr
    assert "vector search (VECTOR_SEARCH): off, graph boost (GRAPH_BOOST): on" in text.stdout
    line = next(line for line in text.stdout.splitlines() if line.startswith("notes "))
    assert re.search(r"notes\s+partial\s+12 notes  last indexed \d{4}-\d\d-\d\dT", line), line
    assert "18 of 30 files new or changed since indexed: run `notarium-search index notes`" in text.stdout
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path).stdout)["spaces"]
    assert (row["state"], row["notes"], row["files"], row["to_index"], row["to_delete"]) == ("partial", 12, 30, 18, 0)

    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    report = json.loads(run(["status", "--json"], vault, tmp_path).stdout)
    assert (report["vector_search"], report["graph_boost"], report["spaces_root"]) == (False, False, str(vault.root))
    assert (report["spaces"][0]["state"], report["spaces"][0]["notes"]) == ("complete", 30)
    # Changes made while nothing runs count too: a deletion, an edit.
    vault.remove("n00.md")
    vault.write("n01.md", "---\nid: n1\n---\ntexte modifié\n")
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path).stdout)["spaces"]
    assert (row["state"], row["to_index"], row["to_delete"]) == ("partial", 1, 1)
    assert row["detail"].startswith("1 of 29 files new or changed since indexed; 1 deleted files still in the index")


def test_status_shows_each_channel_and_vectors_not_all_embedded(vault: Vault, tmp_path: Path):
    """`status` called an index "complete" while its vectors were 128 of 351
    fragments embedded: each channel is shown, as /status shows it."""
    for i in range(6):
        vault.write(
            f"n{i}.md", f"---\nid: n{i}\n---\n# Note {i}\n\nTexte {i} vers [[n{(i + 1) % 6}]] et [[absente]].\n"
        )
    models = models_dir()
    semantic = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(models / "all-minilm-l6-v2-int8"), "GRAPH_BOOST": "1"}
    assert run(["index", "notes"], vault, tmp_path, **semantic).returncode == 0
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path, **semantic).stdout)["spaces"]
    assert (row["state"], row["lexical"]["state"]) == ("complete", "complete")
    assert row["semantic"] == {"state": "complete", "embedded": 6, "total": 6, "reason": None}
    assert row["graph"] == {"state": "ready", "links": 12, "dangling": 6}  # as /status counts them
    for i in range(6, 9):  # indexed by words only: their fragments have no vector yet
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\n# Note {i}\n\nTexte {i} sur un tout autre sujet.\n")
    assert run(["index", "notes"], vault, tmp_path).returncode == 0
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path, **semantic).stdout)["spaces"]
    assert (row["state"], row["lexical"]["state"], row["to_index"]) == ("partial", "complete", 0), row
    assert row["semantic"] == {"state": "partial", "embedded": 6, "total": 9, "reason": None}
    assert (
        row["detail"] == "3 of 9 fragments not embedded yet: run `notarium-search index notes` (or start the service)"
    )
    text = run(["status"], vault, tmp_path, **semantic).stdout
    assert "lexical complete · semantic partial, 6/9 fragments embedded · graph ready, 12 links, 6 dangling" in text
    other = {**semantic, "NOTARIUM_MODEL_DIR": str(models / "multilingual-e5-small-int8")}
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path, **other).stdout)["spaces"]
    assert (row["semantic"]["embedded"], row["semantic"]["reason"]) == (
        0,
        "vectors made with another model or chunking: every fragment is embedded again",
    )
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path, VECTOR_SEARCH="1").stdout)["spaces"]
    assert row["semantic"]["state"] == "unavailable"
    server = {"VECTOR_SEARCH": "1", "NOTARIUM_EMBED_URL": "http://127.0.0.1:9", "NOTARIUM_EMBED_MODEL": "m"}
    (row,) = json.loads(run(["status", "--json"], vault, tmp_path, **server).stdout)["spaces"]
    assert (row["semantic"]["state"], row["semantic"]["embedded"], row["semantic"]["total"]) == ("partial", 6, 9)
    assert row["semantic"]["reason"].startswith("vectors from the embedding server (NOTARIUM_EMBED_URL)")


def test_folders_that_are_not_spaces_are_reported(vault: Vault, tmp_path: Path):
    vault.write("a.md", "---\nid: a\n---\ntexte\n")
    vault.write("b.md", "---\nid: b\n---\ntexte\n", space="Zettelkasten")
    indexed = run(["index", "notes"], vault, tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    (warning,) = [json.loads(line) for line in indexed.stderr.splitlines() if "space_folder_ignored" in line]
    assert (warning["level"], warning["path"]) == ("warning", str(vault.root / "Zettelkasten"))
    assert warning["suggested_name"] == "zettelkasten"
    assert "[spaces.zettelkasten]" in warning["reason"]
    status = run(["status"], vault, tmp_path)
    assert f"ignored folder {vault.root / 'Zettelkasten'}: 'Zettelkasten' is not a valid space name" in status.stdout


def test_errors_are_clear(vault: Vault, tmp_path: Path):
    vault.write("a.md", "x")
    unknown = run(["index", "nope"], vault, tmp_path)
    assert unknown.returncode == 2
    assert "no space named 'nope'" in unknown.stderr
    bad = run(["--config", str(tmp_path / "missing.toml"), "status"], vault, tmp_path)
    assert bad.returncode == 2
    assert "configuration error" in bad.stderr
    usage = run([], vault, tmp_path)
    assert usage.returncode == 2


def test_index_refuses_while_a_service_writes_the_space(vault: Vault, tmp_path: Path):
    vault.write("a.md", "---\nid: a\n---\ntexte\n")
    service = vault.service(index_dir=tmp_path / "index")  # holds the space's writer lock
    try:
        busy = run(["index", "notes", "--full"], vault, tmp_path)
        assert busy.returncode == 1
        assert "in use by another process" in busy.stderr
        # --full did not wipe the live index.
        assert service.status()[0].notes == 1
        found = run(["search", "notes", "texte", "--json"], vault, tmp_path)  # readers are welcome
        assert [r["id"] for r in json.loads(found.stdout)["results"]] == ["a"]
    finally:
        service.stop()


def index_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_read_only_commands_never_touch_an_index_they_cannot_open(vault: Vault, tmp_path: Path):
    """`status` beside a running server once deleted 20 of 23 files of its
    index: a read-only open removed the folder on any open error (a segment
    merged away while it opened, here a meta.json it cannot read)."""
    vault.write("a.md", "---\nid: a\n---\ntexte\n")
    service = vault.service(index_dir=tmp_path / "index")  # the live writer
    try:
        lexical_dir = tmp_path / "index" / "notes" / "lexical"
        (lexical_dir / "meta.json").write_text("{")
        before = index_files(lexical_dir)
        status = run(["status", "--json"], vault, tmp_path)
        assert status.returncode == 0, status.stderr
        (row,) = json.loads(status.stdout)["spaces"]
        assert row["state"] == "unreadable"
        assert "cannot open the index" in row["detail"]
        found = run(["search", "notes", "texte"], vault, tmp_path)
        assert found.returncode == 1
        assert "cannot open the index" in found.stderr
        assert index_files(lexical_dir) == before  # nothing deleted, moved or written
    finally:
        service.stop()


def test_second_service_on_the_same_index_refuses_to_start(vault: Vault, tmp_path: Path):
    vault.write("a.md", "---\nid: a\n---\ntexte\n")
    service = vault.service(index_dir=tmp_path / "index")
    try:
        second = run(["serve"], vault, tmp_path, NOTARIUM_PORT=str(free_port()))
        assert second.returncode == 1
        # One sentence naming the holder, before any worker starts (each worker failed in turn: 12-30 s).
        assert second.stderr.startswith("notarium-search: space index ")
        assert f"in use by another process (pid {os.getpid()})" in second.stderr
        assert "granian" not in second.stdout + second.stderr
    finally:
        service.stop()


def test_version_is_the_installed_packages():
    done = subprocess.run([sys.executable, "-m", "notarium_search", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout == f"notarium-search {importlib.metadata.version('notarium-search')}\n"


def test_a_port_in_use_is_one_plain_sentence_before_anything_starts(vault: Vault, tmp_path: Path):
    vault.write("a.md", "texte\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(["serve"], vault, tmp_path, NOTARIUM_PORT=str(port))
    assert done.returncode == 2
    assert done.stderr == (
        f"notarium-search: port {port} on 127.0.0.1 is already in use (another notarium-search, or another"
        " program): stop it, or choose another port with NOTARIUM_PORT or `port` in the configuration\n"
    )
    assert done.stdout == ""  # no log line, no indexing started
    assert not (tmp_path / "index").exists()


def test_serve_with_no_space_says_how_to_configure_one(tmp_path: Path):
    env = {**os.environ, "NOTARIUM_INDEX_DIR": str(tmp_path / "index"), "NOTARIUM_PORT": str(free_port())}
    for name in ("NOTARIUM_CONFIG", "NOTARIUM_SPACES_ROOT"):
        env.pop(name, None)
    server = subprocess.Popen(
        [sys.executable, "-m", "notarium_search", "serve"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:  # bounded: the test's own timeout; the line comes before the server starts
            record = json.loads(line)
            if record["event"] == "no_space_configured":
                break
        else:
            pytest.fail("the server ended without saying that no space is configured")
        assert record["level"] == "warning"
        assert "NOTARIUM_SPACES_ROOT" in record["detail"]
        assert "[spaces.NAME]" in record["detail"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


def test_models_download_fails_clearly_without_a_hub(vault: Vault, tmp_path: Path):
    vault.write("a.md", "x")
    env_run = run(
        ["models", "download", "Xenova/multilingual-e5-small", str(tmp_path / "m"), "--timeout", "3"], vault, tmp_path
    )
    assert env_run.returncode == 2
    assert "notarium-search:" in env_run.stderr
    assert not (tmp_path / "m").exists()  # nothing half-written
    bad = run(["models", "download", "not a/repo id", str(tmp_path / "m2")], vault, tmp_path)
    assert bad.returncode == 2
    assert "not a hub repository id" in bad.stderr


def test_index_embeds_with_a_progress_bar_when_vector_search_is_on(vault: Vault, tmp_path: Path):
    from tests.conftest import models_dir

    for i in range(5):
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\nParagraphe numéro {i} sur la résilience des systèmes.\n")
    model = models_dir() / "all-minilm-l6-v2-int8"
    env = {**os.environ, "VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(model)}
    env.update({"NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")})
    command = [sys.executable, "-m", "notarium_search", "index", "notes"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "fragments/s" in first.stdout
    assert "semantic ready, 5/5 fragments" in first.stdout
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert "0 indexed" in again.stdout
    assert "semantic ready, 5/5 fragments" in again.stdout  # nothing re-embedded, all still there


def test_search_says_when_it_answers_without_the_semantic_channel(vault: Vault, tmp_path: Path):
    """With VECTOR_SEARCH on and the vectors built, `search` from the shell still
    answers by keywords only (it does not load the model): it used to say
    nothing, so a query only the meaning could answer looked unanswerable."""
    vault.write("a.md", "---\nid: a\n---\nLa résilience des systèmes d'information.\n")
    model = models_dir() / "all-minilm-l6-v2-int8"
    semantic = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(model)}
    assert run(["index", "notes"], vault, tmp_path, **semantic).returncode == 0
    body = json.loads(run(["search", "notes", "résilience", "--json"], vault, tmp_path, **semantic).stdout)
    assert [hit["id"] for hit in body["results"]] == ["a"]
    assert body["channels_used"] == ["lexical"]
    assert "notarium-search search" in body["degraded"]["semantic"]
    printed = run(["search", "notes", "résilience"], vault, tmp_path, **semantic).stdout.splitlines()
    assert printed[1].startswith("without semantic: not loaded by `notarium-search search`"), printed
    keywords_only = json.loads(run(["search", "notes", "résilience", "--json"], vault, tmp_path).stdout)
    assert keywords_only["degraded"] == {}  # VECTOR_SEARCH off: nothing was expected of it


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("4", "4")])
def test_the_command_runs_numpy_on_one_blas_thread_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, preset: str | None, expected: str
):
    from notarium_search import cli

    if preset is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", preset)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == expected


# ---------------------------------------------------------------- models check


def check_pack(pack: Path | None, *options: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"NOTARIUM_CONFIG", "NOTARIUM_MODEL_DIR"}}
    env.update(extra_env)
    command = [sys.executable, "-m", "notarium_search", *options, "models", "check"]
    return subprocess.run(command + ([str(pack)] if pack else []), env=env, capture_output=True, text=True, timeout=120)


def broken_copy(tmp_path: Path, name: str = "all-minilm-l6-v2-int8") -> Path:
    """A writable copy of a shared pack, to break (the shared packs are never touched)."""
    from tests.conftest import models_dir

    pack = Path(shutil.copytree(models_dir() / name, tmp_path / name))
    for path in [pack, *pack.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return pack


def edit_model_json(pack: Path, **changes: object) -> None:
    config = json.loads((pack / "model.json").read_text())
    for key, value in changes.items():
        if value is None:
            del config[key]
        else:
            config[key] = value
    (pack / "model.json").write_text(json.dumps(config))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "all-minilm-l6-v2-int8",
            "all-minilm-l6-v2-int8, dim 384, pooling mean, normalized, no prefixes, max_tokens 256,",
        ),
        (
            "multilingual-e5-small-int8",
            "multilingual-e5-small-int8, dim 384, pooling mean, normalized, prefixes 'query: ' / 'passage: ',"
            " max_tokens 512,",
        ),
    ],
    ids=["minilm", "e5"],
)
def test_models_check_says_in_one_line_that_a_pack_works(name: str, expected: str):
    from tests.conftest import models_dir

    pack = models_dir() / name
    done = check_pack(pack)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"model pack {pack} works: {expected} model.onnx ")
    found = re.fullmatch(r".* MB, cosine of a French query and its passage (-?[\d.]+)", line)
    assert found is not None, line
    cosine = float(found.group(1))
    assert 0.3 < cosine <= 1.0  # related texts; the e5 pack's cosines sit high for any French pair


def truncate_graph(pack: Path) -> None:
    (pack / "model.onnx").write_bytes((pack / "model.onnx").read_bytes()[:100_000])


@pytest.mark.parametrize(
    ("breakage", "reason"),
    [
        (truncate_graph, "cannot load {pack}/model.onnx: [ONNXRuntimeError] : 7 : INVALID_PROTOBUF"),
        (lambda pack: (pack / "tokenizer.json").unlink(), "model file {pack}/tokenizer.json is missing"),
        (lambda pack: (pack / "model.onnx").unlink(), "model file {pack}/model.onnx is missing"),
        (lambda pack: edit_model_json(pack, pooling=None), "model {pack}: 'pooling' is unknown (model.json is"),
        (lambda pack: edit_model_json(pack, dim=None), "model {pack}: 'dim' is unknown (model.json is"),
        (
            lambda pack: edit_model_json(pack, dim=768),
            "model all-minilm-l6-v2-int8 produces 384-dimensional vectors but its dim is set to 768",
        ),
        (lambda pack: shutil.rmtree(pack), "model directory {pack} does not exist"),
    ],
    ids=["truncated-graph", "no-tokenizer", "no-graph", "no-pooling", "no-dim", "wrong-dim", "no-folder"],
)
def test_models_check_names_what_is_wrong_with_a_pack_in_one_line(
    tmp_path: Path, breakage: Callable[[Path], None], reason: str
):
    pack = broken_copy(tmp_path)
    breakage(pack)
    done = check_pack(pack)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"notarium-search: model pack {pack} is not usable: {reason.format(pack=pack)}"), line


def test_models_check_without_onnxruntime_says_to_install_the_semantic_extra(tmp_path: Path):
    from tests.conftest import models_dir

    (tmp_path / "onnxruntime.py").write_text('raise ImportError("not installed")\n')  # shadows the real one
    pack = models_dir() / "all-minilm-l6-v2-int8"
    done = check_pack(pack, PYTHONPATH=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == (
        f"notarium-search: model pack {pack} is not usable: onnxruntime is not installed"
        " (pip install 'notarium-search[semantic]')\n"
    )


def test_models_check_applies_the_configured_model_table_as_the_service_does(tmp_path: Path):
    pack = broken_copy(tmp_path)
    (pack / "model.json").unlink()  # dim and pooling come from the configuration alone
    config = tmp_path / "notarium.toml"
    config.write_text('[model]\ndim = 384\npooling = "mean"\n')
    done = check_pack(pack, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert f"model pack {pack} works: all-minilm-l6-v2-int8, dim 384, pooling mean," in done.stdout
    assert done.stdout.rstrip().endswith("([model] of the configuration sets dim, pooling)")
    config.write_text('[model]\ndim = 384\npooling = "mean"\nmax_tokens = 600\n')  # past the model's 512 positions
    too_long = check_pack(pack, "--config", str(config))
    assert too_long.returncode == 2
    assert "fails on a 600-token input (is max_tokens above what the model accepts?)" in too_long.stderr


def test_models_check_defaults_to_the_configured_pack():
    from tests.conftest import models_dir

    pack = models_dir() / "all-minilm-l6-v2-int8"
    done = check_pack(None, NOTARIUM_MODEL_DIR=str(pack))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"model pack {pack} works: ")
    unset = check_pack(None)
    assert unset.returncode == 2
    assert unset.stderr == "notarium-search: no model pack to check: name its folder, or set NOTARIUM_MODEL_DIR\n"


class OddEmbedder:
    """A pack whose vectors break what `models check` checks beyond the loader's own
    warm-up (no real pack produces them): NaN, not unit length, the wrong shape."""

    def __init__(self, vector: list[float], dim: int = 2) -> None:
        from notarium_search.semantic.model_config import ModelConfig

        self.config = ModelConfig("odd", dim, 16, "mean", True, "", "")
        self.vector = vector

    def embed_query(self, text: str) -> Any:
        import numpy as np

        return np.array(self.vector, dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> Any:
        import numpy as np

        return np.array([self.vector] * len(texts), dtype=np.float32)


@pytest.mark.parametrize(
    ("vector", "reason"),
    [
        ([float("nan"), 1.0], "the test query vector holds NaN or infinite values"),
        ([3.0, 4.0], "normalize is on but the test vectors have lengths 5.0000, 5.0000"),
        ([1.0, 0.0, 0.0], "the test query vector has shape (3,), expected (2,)"),
    ],
    ids=["nan", "not-unit", "shape"],
)
def test_models_check_refuses_vectors_the_service_could_not_use(vector: list[float], reason: str):
    from notarium_search.cli import models
    from notarium_search.semantic.embedder_errors import EmbedderUnavailable

    with pytest.raises(EmbedderUnavailable) as refused:
        models._embed_test_pair(OddEmbedder(vector))
    assert str(refused.value) == reason
    assert models._embed_test_pair(OddEmbedder([0.6, 0.8])) == "cosine of a French query and its passage 1.000"
