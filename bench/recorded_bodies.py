"""HTTP answers recorded on a fixed set of requests, to compare two source trees (issue 30).

    python -m bench.recorded_bodies --checkout /tmp/base30 --out /tmp/bodies/base.json
    python -m bench.recorded_bodies --out /tmp/bodies/now.json          # this checkout
    python -m bench.recorded_bodies --compare /tmp/bodies/base.json /tmp/bodies/now.json

A refactor that claims "behaviour unchanged" must answer every request the
same, byte for byte. The recorder serves the same spaces from a checkout (a
`python -m notarium_search serve` run with this interpreter, the checkout
first on the path and as the working folder: its code, this repository's
virtual environment), waits until every channel of every space is ready, sends
a fixed list of requests one after the other, and writes each request with
its status, headers and body to a JSON file. `--compare A B` prints the
requests whose answers differ, with a diff, and exits 1 (0 when all agree,
2 when the request lists themselves differ).

The spaces, written into a scratch folder by this repository's code (never
the checkout's, so both sides get the very same files):

- `carnet` (French) and `lab` (English): docs/sample-vault, with `lectures`
  a collection of carnet, as config/sample.toml has it. Every file's mtime is
  set to a fixed date: a note without an `updated` date is dated by its file,
  and a fresh checkout's files are as old as the checkout.
- `vault` (French): `--notes` notes (300) of bench/perf_lexical.py's seeded
  generator (piaf-fr and cranfield passages, tags, dates, folders, wiki-links,
  a long note with sections), with `journal` a collection (folder Journal).

The server: VECTOR_SEARCH on with `--model` (multilingual-e5-small-int8 from
NOTARIUM_MODELS_DIR or ../shared/models; `--lexical` for none), GRAPH_BOOST
on, one worker (NOTARIUM_WORKERS=1: a second one follows the first and could
answer before it has caught up), no watcher and no periodic pass
(NOTARIUM_WATCH=0, NOTARIUM_RECONCILE_INTERVAL=0: nothing moves while the
requests run), no rate limit (its headers count requests), a query-embedding
deadline of 60 s (a loaded machine would answer some hybrid queries
lexically, `degraded`). Ready means: `/status` has no message and every
space's lexical, semantic and graph channel is `ready`, then every space with
vectors has logged `semantic_calibrated` (the relevance floor's probes, run
once on the writer thread after the last vector: a query answered before
them can be weighed by another floor).

With a model, each space's lexical index is first built by the checkout's
`notarium-search index SPACE` (VECTOR_SEARCH=0), then the server starts on
it and embeds every note. Built by the server alone, two runs of one commit
differed (15 of 121 answers, the generated space's hybrid searches: semantic
scores moved by ~0.001, ranks by a few places): while the lexical pass
commits, the writer plans the committed notes' fragments as the model comes
ready, so which fragments share a batch depends on timing, and the int8
model's vector of a text depends on the other texts of its batch (a passage
embedded alone and beside another: cosine 0.998). Planned from the whole
index, the batches are the same every run.
Left as is: usearch inserts on every core (a graph built in another order
could, in principle, return another near neighbour; not seen at ~700
vectors, where ef 512 searches nearly all of them).

The requests (121, each with a stable name): every GET route — status,
spaces, search (known items, half-typed names, aliases, typed filters,
phrases, exclusions, `explain=1`, sort, collections, limits, made-up words,
odd text), feed and notes (filters, pages followed with the cursor the
previous page gave), a note (content, rendered), related (both routes),
activations, the page, one of its files and the OpenAPI schema — then MCP
(`initialize`, `tools/list`, each tool through `tools/call`, tool errors,
malformed requests) and error answers (unknown space, note, route, method;
bad parameters). Nothing is posted that changes the index.

What is normalised, and why; nothing else is (bodies are compared as bytes,
after these substitutions only):

- headers `date` (the clock), `x-request-id` (a fresh id per request) and
  `content-length` (the length of the body before the substitutions below,
  whose digits vary: the body itself is compared);
- `"took_ms":<number>` anywhere in a body (search answers and MCP's
  `search_notes`): a duration;
- in status answers (`/status`, `/spaces/{space}/status`), the values of
  `last_indexed` (when the last pass ended), `notes_per_second`,
  `eta_seconds` and `per_second` (how fast the build went): clock and speed
  of the start-up's build, nothing the code under test decides;
- the scratch folder's path (`path` of each space in status answers):
  replaced by `$ROOT`; it is another temporary folder each run;
- the signature of feed and notes cursors (`payload.mac`, in `next_cursor`
  and MCP's `cursor`): the MAC under the space's key, made at random when its
  index folder is made; the payload (version, feed key, note id) is kept.
  A page's cursor is followed as issued (before normalisation);
- MCP's `list_recent_activations`, that request only: its window starts
  `days` before now (`since` in its structured content, `(since YYYY-MM-DD)`
  in its text).

The file also records the checkout, its commit and the settings (`recorded`),
which `--compare` does not compare. The requests are built from this
repository's code: record both sides with the same recorder.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import difflib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.perf_lexical import (
    HOST,
    PROJECT_ROOT,
    QUICK,
    BenchError,
    build_queries,
    build_space,
    default_eval_dir,
    feed_keywords,
    free_port,
    load_corpora,
    server_env,
    server_status,
    wait_ready,
)

SAMPLE_VAULT = PROJECT_ROOT / "docs" / "sample-vault"
GENERATED_SPACE = "vault"
VAULT_QUESTIONS = 8  # of perf_lexical's questions and as-you-type prefixes
DEFAULT_NOTES = 300  # ~700 fragments: under a minute of e5-small on 2 cores
DEFAULT_MODEL = "multilingual-e5-small-int8"
FIXED_MTIME = 1_704_103_200  # 2024-01-01 10:00 UTC: every file of the scratch spaces
READY_TIMEOUT = 900.0  # a model load and ~700 fragments on a loaded 2-core machine
CALIBRATED_EVENT = "semantic_calibrated"
HTTP_TIMEOUT = 120.0
CONFIG = """\
spaces_root = "{root}"
index_dir = "{index}"

[spaces.lab]
language = "en"

[spaces.carnet.collections.lectures]
folder = "lectures"
"""
GENERATED_CONFIG = f"""
[spaces.{GENERATED_SPACE}.collections.journal]
folder = "Journal"
"""

# -- the requests --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    name: str  # stable: what --compare matches answers by
    path: str  # may hold {cursor}: the next_cursor of the answer to `after`
    method: str = "GET"
    body: Any = None  # sent as JSON (MCP)
    raw_body: str | None = None  # sent as is (a malformed MCP request)
    after: str | None = None
    clock: bool = False  # MCP list_recent_activations: a window ending now

    def describe(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"method": self.method, "path": self.path}
        if self.body is not None:
            shown["body"] = self.body
        if self.raw_body is not None:
            shown["raw_body"] = self.raw_body
        if self.after is not None:
            shown["after"] = self.after
        return shown


def q(path: str, **params: Any) -> str:
    """`path?params`, lists as repeated parameters."""
    pairs = [(k, v) for k, value in params.items() for v in (value if isinstance(value, list) else [value])]
    return f"{path}?{urllib.parse.urlencode(pairs)}" if pairs else path


def quoted(note_id: str) -> str:
    return urllib.parse.quote(note_id, safe="/")


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def mcp(name: str, number: int, method: str, params: dict[str, Any] | None = None, clock: bool = False) -> Request:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
    if params is not None:
        message["params"] = params
    return Request(name, "/mcp", "POST", body=message, clock=clock)


def tool(name: str, number: int, tool_name: str, **arguments: Any) -> Request:
    return mcp(name, number, "tools/call", {"name": tool_name, "arguments": arguments})


@dataclass(frozen=True, slots=True)
class VaultPicks:
    """Notes of the generated space the requests name: fixed by its seed."""

    titles: list[str]  # of notes outside Journal (whose titles are dates)
    linked: str  # id of a note with wiki-links
    long: str  # id of the longest note
    phrase: str  # four words of a note, in order
    queries: list[str]  # perf_lexical's questions and as-you-type prefixes


def pick_vault(notes_dir: Path, queries: list[str]) -> VaultPicks:
    files = sorted(notes_dir.rglob("*.md"))
    ids = [p.relative_to(notes_dir).as_posix() for p in files]
    texts = [p.read_text(encoding="utf-8") for p in files]
    titles = [
        json.loads(line.removeprefix("title: "))
        for path, text in zip(ids, texts, strict=True)
        if not path.startswith("Journal")
        for line in text.splitlines()[:3]
        if line.startswith("title: ")
    ]
    linked = next(i for i, t in zip(ids, texts, strict=True) if "[[" in t)
    long = max(zip(ids, texts, strict=True), key=lambda pair: len(pair[1]))[0]
    body = texts[len(texts) // 2].split("---\n", 2)[2].split()
    return VaultPicks(titles, linked, long, " ".join(body[10:14]), queries)


def requests(picks: VaultPicks | None) -> list[Request]:
    """The fixed list: the sample vault's, then the generated space's (when there is one), then MCP."""
    s = "/spaces/carnet/search"
    reqs = [
        Request("healthz", "/healthz"),
        Request("status", "/status"),
        Request("spaces", "/spaces"),
        Request("status carnet", "/spaces/carnet/status"),
        Request("status unknown space", "/spaces/nope/status"),
        Request("page", "/"),
        Request("page script", "/web/api.js"),
        Request("openapi", "/schema/openapi.json"),
        Request("unknown route", "/nope"),
        Request("search: POST is not allowed", s, "POST"),
        # search, carnet (French)
        Request("search accents folded", q(s, q="interoperabilite")),
        Request("search explain", q(s, q="interopérabilité", explain=1)),
        Request("search known title", q(s, q="Règlement DORA")),
        Request("search alias", q(s, q="Agent aveugle")),
        Request("search half-typed word", q(s, q="protoc")),
        Request("search half-typed title", q(s, q="Protocoles ouv")),
        Request("search file name", q(s, q="cafe")),
        Request("search phrase", q(s, q='"résilience opérationnelle"')),
        Request("search exclusion", q(s, q="interopérabilité -contexte")),
        Request("search excluded phrase", q(s, q='interopérabilité -"format fermé"')),
        Request("search typed tag", q(s, q="tag:dora")),
        Request("search typed tag and words", q(s, q="tag:interopérabilité agent")),
        Request("search typed -tag", q(s, q="-tag:ia interopérabilité")),
        Request("search typed folder", q(s, q="folder:zettel api")),
        Request("search typed after", q(s, q="after:2024-03 interopérabilité")),
        Request("search typed before", q(s, q="before:2024-03-01")),
        Request("search typed quoted tag", q(s, q='tag:"interopérabilité" protocoles')),
        Request("search stop words", q(s, q="être ou ne pas être")),
        Request("search sort updated", q(s, q="le", sort="updated")),
        Request("search folder and tag parameters", q(s, q="api", folder="zettel", tag="ia")),
        Request("search collection", q(s, q="registre", collection="lectures")),
        Request("search made-up word", q(s, q="pifevonimp")),
        Request("search odd text", q(s, q="\"x C:\\temp l'interopérabilité AND -")),
        Request("search empty", s),
        Request("search unknown collection", q(s, q="x", collection="nope")),
        Request("search limit 0", q(s, q="x", limit=0)),
        Request("search limit 101", q(s, q="x", limit=101)),
        Request("search limit not a number", q(s, q="x", limit="ten")),
        Request("search bad sort", q(s, q="x", sort="title")),
        Request("search bad date", q(s, q="after:2024-13 x")),
        Request("search two folders", q(s, q="folder:zettel x", folder="lectures")),
        Request("search query too long", q(s, q="mot " * 300)),
        Request("search unknown space", q("/spaces/nope/search", q="x")),
        # search, lab (English)
        Request("lab search", q("/spaces/lab/search", q="bm25")),
        Request("lab search alias", q("/spaces/lab/search", q="rrf")),
        Request("lab search half-typed title", q("/spaces/lab/search", q="Reciprocal Rank Fu", explain=1)),
        # feed
        Request("feed", "/spaces/carnet/feed"),
        Request("feed words", q("/spaces/carnet/feed", q="registre")),
        Request("feed stop words only", q("/spaces/carnet/feed", q="le")),
        Request("feed tag", q("/spaces/carnet/feed", tag="interopérabilité")),
        Request("feed dates", q("/spaces/carnet/feed", since="2024-03-01", until="2024-05-02")),
        Request("feed page 1", q("/spaces/carnet/feed", limit=2)),
        Request("feed page 2", "/spaces/carnet/feed?limit=2&cursor={cursor}", after="feed page 1"),
        Request("feed forged cursor", q("/spaces/carnet/feed", cursor="WzMsMSwieCJd.AAAAAAAAAAAAAAAAAAAAAA")),
        Request("feed bad date", q("/spaces/carnet/feed", since="hier")),
        # notes, note, related, activations
        Request("notes", "/spaces/carnet/notes"),
        Request("notes tag never used", q("/spaces/carnet/notes", tags="dora", activated="false")),
        Request("notes used", q("/spaces/carnet/notes", activated="true")),
        Request("notes any tag", q("/spaces/carnet/notes", tags=["ia", "citation"], tags_mode="any")),
        Request("notes field value", q("/spaces/carnet/notes", field="title", value="protocoles ouverts")),
        Request("notes collection", q("/spaces/carnet/notes", collection="lectures")),
        Request("notes page 1", q("/spaces/carnet/notes", limit=3)),
        Request("notes page 2", "/spaces/carnet/notes?limit=3&cursor={cursor}", after="notes page 1"),
        Request("notes value without field", q("/spaces/carnet/notes", value="x")),
        Request("notes bad tags_mode", q("/spaces/carnet/notes", tags_mode="some")),
        Request("note by id", "/spaces/carnet/notes/z-2024-0001"),
        Request("note content", q("/spaces/carnet/notes/lectures/dora.md", content=1)),
        Request("note rendered", q("/spaces/carnet/notes/z-2024-0002", render=1)),
        Request("note broken frontmatter", q("/spaces/carnet/notes/frontmatter-casse.md", content=1, render=1)),
        Request("lab note rendered", q("/spaces/lab/notes/papers/bm25.md", render=1)),
        Request("note unknown", "/spaces/carnet/notes/absente"),
        Request("related", "/spaces/carnet/related/z-2024-0001"),
        Request("related under notes", q("/spaces/carnet/notes/z-2024-0001/related", limit=2)),
        Request("related days apart", q("/spaces/carnet/related/lectures/dora.md", min_days_apart=30)),
        Request("related unknown note", "/spaces/carnet/related/absente"),
        Request("related limit 0", q("/spaces/carnet/related/z-2024-0001", limit=0)),
        Request("activations", "/spaces/carnet/activations"),
        Request("activations since", q("/spaces/carnet/activations", since="2024-01-01")),
        Request("activations unknown space", "/spaces/nope/activations"),
    ]
    if picks is not None:
        reqs += vault_requests(picks)
    return reqs + mcp_requests(picks)


def vault_requests(picks: VaultPicks) -> list[Request]:
    s = f"/spaces/{GENERATED_SPACE}/search"
    title = picks.titles[7]
    reqs = [Request("vault status", f"/spaces/{GENERATED_SPACE}/status")]
    reqs += [Request(f"vault question {n}", q(s, q=text)) for n, text in enumerate(picks.queries)]
    reqs += [
        Request("vault known title", q(s, q=title)),
        Request("vault half-typed title", q(s, q=title[: len(title) // 2].rstrip()[:-2])),  # cut inside a word
        Request("vault explain", q(s, q=picks.queries[0], explain=1, limit=5)),
        Request("vault phrase", q(s, q=f'"{picks.phrase}"')),
        Request("vault typed filters", q(s, q=f"tag:lecture after:2023 {picks.queries[1]}")),
        Request("vault folder sort", q(s, q=picks.queries[2], folder="Projets", sort="created")),
        Request("vault collection", q(s, q=picks.queries[3], collection="journal", limit=20)),
        Request("vault feed words", q(f"/spaces/{GENERATED_SPACE}/feed", q=feed_keywords(picks.queries[4], 1))),
        Request("vault feed page 1", q(f"/spaces/{GENERATED_SPACE}/feed", tag="lecture", limit=5)),
        Request(
            "vault feed page 2",
            f"/spaces/{GENERATED_SPACE}/feed?tag=lecture&limit=5&cursor={{cursor}}",
            after="vault feed page 1",
        ),
        Request("vault notes", q(f"/spaces/{GENERATED_SPACE}/notes", tags=["idée", "todo"], tags_mode="any", limit=5)),
        Request("vault note links", q(f"/spaces/{GENERATED_SPACE}/notes/{quoted(picks.linked)}", content=1)),
        Request("vault long note rendered", q(f"/spaces/{GENERATED_SPACE}/notes/{quoted(picks.long)}", render=1)),
        Request("vault related", q(f"/spaces/{GENERATED_SPACE}/related/{quoted(picks.linked)}", limit=5)),
    ]
    return reqs


def mcp_requests(picks: VaultPicks | None) -> list[Request]:
    reqs = [
        mcp(
            "mcp initialize",
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "recorded-bodies", "version": "1"},
            },
        ),
        mcp("mcp tools/list", 2, "tools/list"),
        tool("mcp search_notes", 3, "search_notes", query="interopérabilité", space="carnet"),
        tool("mcp search_notes filters", 4, "search_notes", query="tag:dora registre", space="carnet", limit=3),
        tool("mcp search_notes nothing", 5, "search_notes", query="pifevonimp", space="carnet"),
        tool("mcp get_related", 6, "get_related", note="z-2024-0001", space="carnet", limit=3),
        tool("mcp query_frontmatter", 7, "query_frontmatter", space="carnet", tags=["dora"], activated=False),
        tool("mcp query_frontmatter page", 8, "query_frontmatter", space="carnet", limit=2),
        Request(
            "mcp list_recent_activations",
            "/mcp",
            "POST",
            body={
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "list_recent_activations", "arguments": {"space": "carnet", "days": 36_500}},
            },
            clock=True,
        ),
        tool("mcp get_note by title", 10, "get_note", note="Protocoles ouverts", space="carnet"),
        tool("mcp unknown space", 11, "search_notes", query="x", space="nope"),
        tool("mcp no space given", 12, "search_notes", query="x"),
        tool("mcp unknown note", 13, "get_note", note="absente", space="carnet"),
        tool("mcp bad argument", 14, "query_frontmatter", space="carnet", tags_mode="some"),
        Request("mcp id not a string", "/mcp", "POST", body={"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}),
        Request("mcp not json", "/mcp", "POST", raw_body='{"jsonrpc": "2.0", "id": 1,'),
        Request("mcp GET", "/mcp"),
    ]
    if picks is not None:
        reqs += [
            tool("mcp vault search", 20, "search_notes", query=picks.queries[0], space=GENERATED_SPACE),
            tool("mcp vault long note", 21, "get_note", note=picks.long, space=GENERATED_SPACE, offset=20),
        ]
    return reqs


# -- normalisation -------------------------------------------------------------

VOLATILE_HEADERS = frozenset({"date", "x-request-id", "content-length"})
TOOK = re.compile(r'"took_ms":-?[0-9.eE+-]+')
STATUS_TIMES = re.compile(r'"(last_indexed|notes_per_second|eta_seconds|per_second)":("[^"]*"|-?[0-9.eE+-]+)')
# A cursor: base64url of a JSON list, a dot, base64url of a 16-byte MAC (22 characters).
CURSOR = re.compile(r"([A-Za-z0-9_-]{4,})\.([A-Za-z0-9_-]{22})(?![A-Za-z0-9_-])")
NEXT_CURSOR = re.compile(r'"(?:next_cursor|cursor)":"([^"]+)"')
SINCE = re.compile(r'"since":"([^"]+)"')


def is_status(path: str) -> bool:
    return urllib.parse.urlsplit(path).path.endswith("/status")


def _cursor_mac(match: re.Match[str]) -> str:
    payload = match.group(1)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError):
        return match.group(0)
    return f"{payload}.<mac>" if isinstance(decoded, list) else match.group(0)


def normalise(request: Request, body: str, root: str) -> str:
    """The body with the volatile parts of the module docstring replaced, nothing else."""
    body = TOOK.sub('"took_ms":"<took_ms>"', body)
    if is_status(request.path):
        body = STATUS_TIMES.sub(lambda m: f'"{m.group(1)}":"<{m.group(1)}>"', body)
    body = body.replace(json.dumps(root)[1:-1], "$ROOT")
    body = CURSOR.sub(_cursor_mac, body)
    if request.clock:
        found = SINCE.search(body)
        if found:
            since = found.group(1)
            body = body.replace(since, "<since>").replace(f"(since {since[:10]})", "(since <since>)")
    return body


# -- the server ------------------------------------------------------------------


@dataclass(slots=True)
class Options:
    checkout: Path
    notes: int
    model: Path | None
    eval_dir: Path
    only: list[str] = field(default_factory=list)
    sample_only: bool = False
    work: Path | None = None


def write_spaces(root: Path, options: Options) -> VaultPicks | None:
    shutil.copytree(SAMPLE_VAULT, root, dirs_exist_ok=True)
    picks = None
    if not options.sample_only:
        corpora = load_corpora(options.eval_dir)
        build_space(root / GENERATED_SPACE, options.notes, corpora)
        queries = [query.text for query in build_queries(QUICK, corpora)][:VAULT_QUESTIONS]
        picks = pick_vault(root / GENERATED_SPACE, queries)
    for path in [root, *root.rglob("*")]:
        os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
    return picks


def checkout_env(options: Options, root: Path, index: Path, port: int) -> dict[str, str]:
    extra = {
        "PYTHONPATH": str(options.checkout),
        "PYTHONDONTWRITEBYTECODE": "1",  # leaves the checkout as it was
        "NOTARIUM_CONFIG": str(root.parent / "notarium.toml"),
        "NOTARIUM_LOG_LEVEL": "info",  # the calibration's line
        "NOTARIUM_WATCH": "0",
        "NOTARIUM_RECONCILE_INTERVAL": "0",
        "NOTARIUM_QUERY_EMBED_TIMEOUT_MS": "60000",
        "GRAPH_BOOST": "1",
        "VECTOR_SEARCH": "1" if options.model else "0",
        **({"NOTARIUM_MODEL_DIR": str(options.model)} if options.model else {}),
    }
    return server_env(root, index, port, extra)


def served_package(checkout: Path, env: dict[str, str]) -> Path:
    """Where the server's `notarium_search` comes from, with its environment and working folder."""
    done = subprocess.run(
        [sys.executable, "-c", "import notarium_search; print(notarium_search.__file__)"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip()).parent


def commit_of(checkout: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no", "--", "notarium_search"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        return None
    return done.stdout.strip() + (" (notarium_search/ modified)" if dirty.stdout.strip() else "")


def ready_check(log_path: Path, semantic: bool) -> Callable[[int], bool]:
    def ready(port: int) -> bool:
        state = server_status(port)
        if state is None or state["message"] is not None:
            return False
        channels = ("lexical", "semantic", "graph") if semantic else ("lexical", "graph")
        failed = [s["space"] for s in state["spaces"] if s["lexical"]["state"] == "failed"]
        if failed:
            raise BenchError(f"spaces failed to open: {failed}")
        if not all(s[c]["state"] == "ready" for s in state["spaces"] for c in channels):
            return False
        if not semantic:
            return True
        log = log_path.read_text(encoding="utf-8", errors="replace")
        return log.count(CALIBRATED_EVENT) >= len(state["spaces"])

    return ready


def index_lexically(options: Options, env: dict[str, str], spaces: list[str], log_path: Path) -> None:
    """Each space's lexical index built by the checkout's `index` command, before the server
    starts: the vectors are then planned from the whole index in one order, and embedded in
    the same batches every run (see the module docstring)."""
    with open(log_path, "ab") as log:
        for space in spaces:
            done = subprocess.run(
                [sys.executable, "-m", "notarium_search", "index", space],
                cwd=options.checkout,
                env={**env, "VECTOR_SEARCH": "0"},
                stdout=log,
                stderr=subprocess.STDOUT,
                check=False,
            )
            if done.returncode != 0:
                tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
                raise BenchError(f"`index {space}` failed with code {done.returncode}:\n{tail}")


@contextmanager
def serving(options: Options, work: Path) -> Iterator[tuple[int, VaultPicks | None, str]]:
    """The checkout's server on the scratch spaces, ready: (port, picks, spaces root)."""
    root, index = work / "spaces", work / "index"
    root.mkdir(parents=True)
    picks = write_spaces(root, options)
    config = CONFIG.format(root=root, index=index) + ("" if options.sample_only else GENERATED_CONFIG)
    (work / "notarium.toml").write_text(config, encoding="utf-8")
    port = free_port()
    env = checkout_env(options, root, index, port)
    package = served_package(options.checkout, env)
    if package != options.checkout / "notarium_search":
        raise BenchError(f"the server would run {package}, not the checkout's {options.checkout / 'notarium_search'}")
    log_path = work / "serve.log"
    if options.model is not None:
        index_lexically(options, env, [p.name for p in sorted(root.iterdir()) if p.is_dir()], log_path)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"],
            cwd=options.checkout,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_ready(process, port, log_path, ready_check(log_path, options.model is not None), READY_TIMEOUT)
        yield port, picks, str(root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def send(port: int, request: Request, path: str) -> tuple[int, dict[str, str], bytes]:
    """One request on a new connection: (status, headers in lower case, body)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=HTTP_TIMEOUT)
    try:
        headers = dict(MCP_HEADERS) if request.method == "POST" and path == "/mcp" else {}
        payload = request.raw_body if request.raw_body is not None else request.body
        data = None
        if payload is not None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        connection.request(request.method, path, body=data, headers=headers)
        response = connection.getresponse()
        body = response.read()
        received = [(k.lower(), v) for k, v in response.getheaders()]
    finally:
        connection.close()
    names = [k for k, _ in received]
    if len(names) != len(set(names)):  # a repeated header: kept in order, joined
        joined: dict[str, str] = {}
        for k, v in received:
            joined[k] = f"{joined[k]}\n{v}" if k in joined else v
        return response.status, joined, body
    return response.status, dict(received), body


def record(options: Options) -> dict[str, Any]:
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="recorded-bodies-") as scratch:
        work = options.work or Path(scratch)
        with serving(options, work) as (port, picks, root):
            ready_s = round(time.time() - began, 1)
            chosen = requests(picks)
            if options.only:
                chosen = [r for r in chosen if r.name in options.only]
            answers: list[dict[str, Any]] = []
            raw: dict[str, str] = {}
            for request in chosen:
                path = request.path
                if request.after is not None:
                    found = NEXT_CURSOR.search(raw.get(request.after, ""))
                    if found is None:
                        raise BenchError(f"{request.name}: the answer to {request.after!r} has no cursor")
                    path = path.replace("{cursor}", urllib.parse.quote(found.group(1), safe=""))
                status, headers, body = send(port, request, path)
                text = body.decode("utf-8")
                raw[request.name] = text
                kept = {k: v for k, v in sorted(headers.items()) if k not in VOLATILE_HEADERS}
                answers.append(
                    {
                        "name": request.name,
                        "request": request.describe(),
                        "status": status,
                        "headers": kept,
                        "body": normalise(request, text, root),
                    }
                )
    names = [a["name"] for a in answers]
    if len(names) != len(set(names)):
        raise BenchError("two requests share a name")
    return {
        "recorded": {
            "checkout": str(options.checkout),
            "commit": commit_of(options.checkout),
            "recorder_commit": commit_of(PROJECT_ROOT),
            "model": options.model.name if options.model else None,
            "notes": 0 if options.sample_only else options.notes,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(began)),
            "ready_seconds": ready_s,
            "seconds": round(time.time() - began, 1),
        },
        "answers": answers,
    }


# -- comparison ------------------------------------------------------------------


def _pretty(body: str) -> list[str]:
    try:
        return json.dumps(json.loads(body), indent=1, ensure_ascii=False, sort_keys=False).splitlines()
    except ValueError:
        return body.splitlines()


def differences(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the names of the answers that differ, the report's lines)."""
    first = {x["name"]: x for x in a["answers"]}
    second = {x["name"]: x for x in b["answers"]}
    lines: list[str] = []
    differing: list[str] = []
    for name in [n for n in first if n not in second]:
        lines.append(f"only in A: {name}")
    for name in [n for n in second if n not in first]:
        lines.append(f"only in B: {name}")
    for name in [n for n in first if n in second]:
        x, y = first[name], second[name]
        if x == y:
            continue
        differing.append(name)
        lines.append(f"=== {name}: {x['request']['method']} {x['request']['path']}")
        if x["request"] != y["request"]:
            lines.append(f"request differs: {x['request']} / {y['request']}")
        if x["status"] != y["status"]:
            lines.append(f"status {x['status']} → {y['status']}")
        for key in sorted(set(x["headers"]) | set(y["headers"])):
            if x["headers"].get(key) != y["headers"].get(key):
                lines.append(f"header {key}: {x['headers'].get(key)!r} → {y['headers'].get(key)!r}")
        if x["body"] != y["body"]:
            left, right = _pretty(x["body"]), _pretty(y["body"])
            diff = list(difflib.unified_diff(left, right, "A", "B", n=2, lineterm=""))
            if diff:
                lines += diff
            else:  # the same JSON value, other bytes: show where
                at = next(i for i, (c, d) in enumerate(zip(x["body"], y["body"], strict=False)) if c != d)
                lines.append(f"same JSON, other bytes from character {at}:")
                lines.append(f"- {x['body'][max(0, at - 60) : at + 60]!r}")
                lines.append(f"+ {y['body'][max(0, at - 60) : at + 60]!r}")
    return differing, lines


def compare(path_a: Path, path_b: Path) -> int:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (path_a, path_b))
    differing, lines = differences(a, b)
    for line in lines:
        print(line)
    same_list = [x["name"] for x in a["answers"]] == [x["name"] for x in b["answers"]]
    print(
        f"{len(a['answers'])} / {len(b['answers'])} answers; {len(differing)} differ"
        f" (A: {a['recorded'].get('commit')}, B: {b['recorded'].get('commit')})"
    )
    if not same_list:
        return 2
    return 1 if differing else 0


# -- command line ------------------------------------------------------------------


def default_model() -> Path:
    models = Path(os.environ.get("NOTARIUM_MODELS_DIR") or PROJECT_ROOT.parent / "shared" / "models")
    return models / DEFAULT_MODEL


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two recordings")
    parser.add_argument("--checkout", type=Path, default=PROJECT_ROOT, help="the source tree to serve (default: this)")
    parser.add_argument("--out", type=Path, help="where to write the recording (JSON)")
    parser.add_argument("--notes", type=int, default=DEFAULT_NOTES, help="notes of the generated space")
    parser.add_argument("--model", type=Path, default=None, help=f"a model pack (default: {DEFAULT_MODEL})")
    parser.add_argument("--lexical", action="store_true", help="VECTOR_SEARCH off: no model")
    parser.add_argument("--sample-only", action="store_true", help="the sample vault's spaces only")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="record only these requests")
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    parser.add_argument("--work", type=Path, help="a new folder for the spaces, index and server log (kept)")
    args = parser.parse_args(argv)
    if args.compare is None and args.out is None:
        parser.error("give --out FILE to record, or --compare A B")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compare is not None:
        return compare(*args.compare)
    model = None if args.lexical else (args.model or default_model())
    options = Options(
        checkout=args.checkout.resolve(),
        notes=args.notes,
        model=model.resolve() if model else None,
        eval_dir=args.eval_dir,
        only=args.only,
        sample_only=args.sample_only,
        work=args.work.resolve() if args.work else None,
    )
    recording = record(options)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(recording['answers'])} answers recorded in {args.out} ({recording['recorded']})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"recorded_bodies: error: {exc}", file=sys.stderr)
        sys.exit(2)
