"""`kill -9` at random moments of a real server's work, then a restart: the
indexes must end equal to a clean build of the same files.

A real `python -m notarium_search serve` indexes a space of 2,000 notes. Ten
times it is killed during a full rebuild (`POST .../reindex?full=1`), ten
times during a burst of edits, creates, deletes and moves made while it
watches the files (the edits go on after the kill: the files are the truth).
After every kill the space is reconciled, as a restart does, and compared
with a build into an empty index folder: the same notes with the same stored
content, the same hits for every query of a fixed list.
"""

from __future__ import annotations

import fcntl
import http.client
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.perf_lexical import free_port, server_env
from notarium_search.index.lock import LOCK_FILE
from notarium_search.lexical import search as lexical
from notarium_search.lexical import stored as stored_notes
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import FeedFilter
from tests.conftest import eventually

NOTES = 2000
ROUNDS_DURING_BUILD = 10
ROUNDS_DURING_EDITS = 10
WORDS = [
    "risque",
    "registre",
    "prestataire",
    "continuité",
    "plan",
    "audit",
    "contrôle",
    "donnée",
    "modèle",
    "agent",
    "protocole",
    "norme",
]
QUERIES = [*WORDS, "plan de continuité", "audit contrôle", "agent protocole", "note0042", "dossier3"]
ROOT = Path(__file__).resolve().parents[2]
# Bounds on waiting, generous for a shared 2-core machine at a tenth of its
# speed: a server starting (imports, then the start-up reconcile of 2,000
# notes beside it), one request to a server busy indexing.
START_SECONDS = 120.0
REQUEST_SECONDS = 30.0


def note_text(rng: random.Random, i: int, version: int) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
    frontmatter = f"id: note{i:04}\n" if i % 3 else ""  # a third known by path only
    return f"---\n{frontmatter}title: Note {i} v{version}\ntags: [t{i % 7}]\n---\nnote{i:04} {words}\n"


class Server:
    def __init__(self, spaces_root: Path, index_dir: Path, extra: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.index_dir = index_dir
        quiet = {"NOTARIUM_LOG_LEVEL": "error", "NOTARIUM_WATCH_DEBOUNCE_MS": "50"}
        env = server_env(spaces_root, index_dir, self.port, {**quiet, **(extra or {})})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: the supervisor and its worker
        )

    def request(self, method: str, path: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_SECONDS)
        try:
            connection.request(method, path)
            return connection.getresponse().status
        finally:
            connection.close()

    def wait_up(self, timeout: float = START_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/healthz") == 200:
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the server did not start")

    def kill(self) -> None:
        """kill -9 of the whole service: the worker that owns the index (a kill
        of the supervisor alone would stop the worker gracefully) and its supervisor."""
        workers = children(self.process.pid)
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pid in workers:
            wait_gone(pid)
        # A zombie's locks are not always released yet: the descriptor table goes
        # with the process's last thread, and a Tantivy thread in the middle of a
        # write can outlive the main one (seen on a loaded machine: IndexLocked at
        # the restart). The restart needs the writer lock: wait for that itself.
        locks = list(self.index_dir.glob(f"*/{LOCK_FILE}"))
        eventually(lambda: all(lock_free(lock) for lock in locks), timeout=START_SECONDS)


def lock_free(lock: Path) -> bool:
    """Whether nobody holds the space's writer lock (taken and released at once)."""
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def wait_gone(pid: int, timeout: float = START_SECONDS) -> None:
    """Until `pid` has exited (gone, or a zombie left to init)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} did not exit")


def edit_burst(rng: random.Random, notes: Path, count: int, version: int) -> None:
    for _ in range(count):
        i = rng.randrange(NOTES)
        action = rng.random()
        folder = notes / f"dossier{i % 5}"
        path = folder / f"n{i:04}.md"
        moved = notes / "archives" / f"n{i:04}.md"
        current = path if path.exists() else moved if moved.exists() else None
        if action < 0.55 or current is None:
            target = current or path
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.tmp")  # an editor's atomic save
            temporary.write_text(note_text(rng, i, version), encoding="utf-8")
            os.replace(temporary, target)
        elif action < 0.8:
            current.unlink()
        else:
            destination = path if current == moved else moved
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(current, destination)


def snapshot(index_dir: Path, spaces_root: Path) -> dict[str, object]:
    settings = Settings(
        spaces=(SpaceConfig("notes", spaces_root / "notes", "fr"),),
        index_dir=index_dir,
        log_level="warning",
        rate_limit_per_minute=0,
    )
    service = Service(settings)
    try:
        space = service.spaces["notes"]
        space.writing.run_reconcile()  # what a restart does first
        ranking = service.settings.ranking
        stored = {p.id: (p.path, p.title, p.tags, p.text) for p in stored_notes.all_payloads(space.lexical)}
        # Every match, as a set: BM25 counts deleted documents until segments
        # merge, so an index that lived through deletions may order near-ties
        # differently from a fresh one; which notes match must not differ.
        every = 10 * NOTES
        hits = {
            query: sorted(
                h.note_id
                for h in lexical.search(space.lexical, query, FeedFilter(), every, ranking, with_snippets=False).hits
            )
            for query in QUERIES
        }
        feeds = {word: [n.id for n in service.feed("notes", word, FeedFilter(), 100, None).items] for word in WORDS}
        return {"notes": stored, "hits": hits, "feeds": feeds, "count": len(stored)}
    finally:
        service.stop()


def differences(recovered: dict[str, object], clean: dict[str, object]) -> list[str]:
    """What differs, briefly: CI keeps only the tail of a failure's output,
    and pytest's diff of two 2,000-note snapshots does not fit in it."""
    found: list[str] = []
    for key in sorted(recovered.keys() | clean.keys()):
        mine, theirs = recovered.get(key), clean.get(key)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            found += [
                f"{key}[{inner!r}]: {_difference(mine.get(inner), theirs.get(inner))}"
                for inner in sorted(mine.keys() | theirs.keys())
                if mine.get(inner) != theirs.get(inner)
            ]
        elif mine != theirs:
            found.append(f"{key}: {_difference(mine, theirs)}")
    return found[:10]


def _difference(mine: object, theirs: object) -> str:
    if isinstance(mine, list) and isinstance(theirs, list):
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
        only_mine = sorted(set(mine) - set(theirs))[:5]
        only_theirs = sorted(set(theirs) - set(mine))[:5]
        lengths = f"{len(mine)}/{len(theirs)}"
        return f"first differs at {first}, lengths {lengths}, only recovered {only_mine}, only clean {only_theirs}"
    return f"recovered {mine!r:.300} clean {theirs!r:.300}"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_at_random_moments_ends_equal_to_a_clean_build(tmp_path: Path):
    rng = random.Random(20261129)
    spaces_root = tmp_path / "spaces"
    notes = spaces_root / "notes"
    for i in range(NOTES):
        path = notes / f"dossier{i % 5}" / f"n{i:04}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(rng, i, 0), encoding="utf-8")
    index_dir = tmp_path / "index"
    for round_ in range(ROUNDS_DURING_BUILD + ROUNDS_DURING_EDITS):
        server = Server(spaces_root, index_dir)
        try:
            server.wait_up()
            if round_ < ROUNDS_DURING_BUILD:
                assert server.request("POST", "/spaces/notes/reindex?full=1") == 202
                time.sleep(rng.uniform(0.0, 1.5))
            else:
                edit_burst(rng, notes, rng.randint(20, 120), round_)
                time.sleep(rng.uniform(0.0, 0.3))
        finally:
            server.kill()
        if round_ >= ROUNDS_DURING_BUILD:
            edit_burst(rng, notes, rng.randint(5, 30), round_)  # the files move on while it is down
        # Every time: the restart's reconcile must give what a clean build of these files gives.
        recovered = snapshot(index_dir, spaces_root)
        clean = snapshot(tmp_path / f"clean-{round_}", spaces_root)
        assert len(clean["notes"]) > NOTES // 2  # type: ignore[arg-type]
        assert recovered == clean, f"after kill {round_ + 1}: {differences(recovered, clean)}"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kill_9_during_a_vector_build_ends_with_the_clean_fragment_set(tmp_path: Path):
    """The semantic tier: a real server with the MiniLM pack embeds a space
    and is killed at random moments of the build and of an edit burst; after
    the last restart, the stored fragments are exactly a clean build's."""
    from notarium_search.semantic.chunking import chunk_note
    from notarium_search.semantic.embedding import load_embedder
    from tests.conftest import build_semantic, models_dir

    model = models_dir() / "all-minilm-l6-v2-int8"
    rng = random.Random(7)
    spaces_root = tmp_path / "spaces"
    notes = spaces_root / "notes"
    count = 150
    for i in range(count):
        path = notes / f"dossier{i % 5}" / f"n{i:04}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(rng, i, 0) + "\n\n" + note_text(rng, i, 1), encoding="utf-8")
    index_dir = tmp_path / "index"
    extra = {"VECTOR_SEARCH": "1", "NOTARIUM_MODEL_DIR": str(model)}
    for round_ in range(8):
        server = Server(spaces_root, index_dir, extra)
        try:
            server.wait_up()
            if round_ >= 5:
                edit_burst(rng, notes, rng.randint(5, 20), round_ + 100)
            time.sleep(rng.uniform(1.0, 8.0))  # model load ~1 s; the ~290 fragments embed in ~7 s
        finally:
            server.kill()
    settings = Settings(
        spaces=(SpaceConfig("notes", notes, "fr"),),
        index_dir=index_dir,
        log_level="warning",
        vector_search=True,
        rate_limit_per_minute=0,
    )
    service = Service(settings)
    try:
        embedder = load_embedder(model)
        build_semantic(service, embedder)  # the restart: reconcile, open the vectors, embed what is missing
        space = service.spaces["notes"]
        assert space.semantic is not None
        assert space.semantic.index is not None
        stored = {r.id for records in space.semantic.index.notes.values() for r in records}
        wanted = {f.id for p in stored_notes.all_payloads(space.lexical) for f in chunk_note(p.to_note())}
        assert stored == wanted
        assert space.semantic.index.size() == len(wanted)  # no stray vectors either
    finally:
        service.stop()
