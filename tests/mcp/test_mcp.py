"""The MCP server over its real transports: `python -m notarium_search mcp`
driven by the SDK's stdio client and by hand (stdout must carry nothing but
protocol), and /mcp on a real `serve` driven by the SDK's Streamable
HTTP client, behind the API token. Real indexes, the real MiniLM model."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import pytest
from litestar.testing import TestClient
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult

from bench.perf_lexical import free_port, server_env
from notarium_search.api.app import create_app
from notarium_search.mcp.stdio import SHOWN_LINE_CHARS
from notarium_search.mcp.tools import NOTE_TEXT_CHARS
from tests.api.test_server import wait_until_ready
from tests.conftest import Vault, models_dir

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "mcp-test-token-0123456789"  # noqa: S105 - a test fixture, not a secret
TOOLS = {"search_notes", "get_related", "query_frontmatter", "list_recent_activations", "get_note"}
# A hand-written first request, for the HTTP checks below the SDK client.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
STREAMABLE_ACCEPT = {"Accept": "application/json, text/event-stream"}
READY_SECONDS = 120  # index, load MiniLM and embed a few notes, on a 2-core machine at a tenth of its speed
POLL_SECONDS = 0.3
EXIT_SECONDS = 30
TODAY = datetime.now(UTC).date()
RECENT = (TODAY - timedelta(days=3)).isoformat()  # inside list_recent_activations' default 30 days
OLD = (TODAY - timedelta(days=200)).isoformat()
LONG_NOTE_CHARS = NOTE_TEXT_CHARS * 3 // 2  # get_note returns it in two calls


def write_french(vault: Vault) -> None:
    vault.write(
        "zettel/agent-sans-api.md",
        f"---\nid: z-agent\ntitle: L'agent sans API est aveugle\ntags: [ia, interopérabilité]\n"
        f'used_in:\n  - "{RECENT} Newsletter 12"\n  - {{where: Blog, date: {OLD}}}\n---\n'
        "Un agent sans API ne voit rien de son contexte. L'interopérabilité des systèmes ouverts lui rend la vue.\n"
        "Voir [[Protocoles ouverts]] et [[Note absente]].\n",
    )
    vault.write(
        "zettel/protocoles-ouverts.md",
        "---\nid: z-protocoles\ntitle: Protocoles ouverts\ntags: [standards, dora]\n---\n"
        "Les protocoles ouverts garantissent l'interopérabilité. Retour à [[L'agent sans API est aveugle]].\n",
    )
    vault.write(
        "lectures/dora.md",
        "---\nid: dora-registre\ntitle: Registre DORA\ntags: [dora, risque]\nstatus: Draft\n---\n"
        "Le registre d'information DORA recense les prestataires de services TIC.\n",
    )
    vault.write(
        "lectures/dora-tiers.md",
        f'---\nid: dora-tiers\ntitle: DORA et les tiers\ntags: [dora]\nutilisé_dans: ["{RECENT} Conférence risque"]\n'
        "---\nLes contrats avec les tiers critiques.\n",
    )
    paragraph = "Chapitre d'un long livre sur la résilience opérationnelle des systèmes d'information. "
    vault.write("livre.md", "# Livre\n\n" + paragraph * (LONG_NOTE_CHARS // len(paragraph)))


def write_english(vault: Vault) -> None:
    vault.write(
        "papers/bm25.md",
        f"---\ntitle: BM25 ranking\ntags: [ir]\nupdated: 2024-06-01\nused_in: [{{where: Lab blog, date: {RECENT}}}]\n"
        "---\nBM25 is a ranking function search engines use to score documents by term frequency and inverse "
        "document frequency.\n",
        space="lab",
    )
    vault.write(
        "papers/rrf.md",
        "---\ntitle: Reciprocal rank fusion\ntags: [ir]\nupdated: 2014-01-10\n---\nReciprocal rank fusion merges "
        "the rankings of several search engines, such as BM25 and a vector index, into one ranking. "
        "See [[BM25 ranking]].\n",
        space="lab",
    )
    vault.write(
        "hamlet.md",
        "---\ntitle: Hamlet\ntags: [theatre]\nupdated: 2024-05-20\n---\nTo be, or not to be, that is the question: "
        "whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune.\n",
        space="lab",
    )


def stdio_env(vault: Vault, tmp_path: Path) -> dict[str, str]:
    """What a desktop assistant's config gives the subprocess: the vault, the
    model, a config file (the English space's language), as `serve` reads them."""
    config = tmp_path / "notarium.toml"
    config.write_text('[spaces.lab]\nlanguage = "en"\n')
    extra = {
        "NOTARIUM_CONFIG": str(config),
        "VECTOR_SEARCH": "1",
        "NOTARIUM_MODEL_DIR": str(models_dir() / "all-minilm-l6-v2-int8"),
        "NOTARIUM_EMBED_THREADS": "1",  # the machine is shared: one core for the model
        "NOTARIUM_QUERY_EMBED_TIMEOUT_MS": "5000",  # a busy CI machine must not make search lexical-only
        "NOTARIUM_LOG_LEVEL": "info",  # indexing logs, to show they reach stderr and not stdout
    }
    env = server_env(vault.root, vault.index_dir, 0, extra)
    for http_only in ("NOTARIUM_HOST", "NOTARIUM_PORT"):
        del env[http_only]
    return env


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return text_of(result), result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    message = text_of(result)
    assert result.is_error, message
    assert "Traceback" not in message
    assert 'File "' not in message
    return message


async def until(
    session: ClientSession, tool: str, ready: Callable[[dict[str, Any]], bool], **arguments: Any
) -> tuple[str, dict[str, Any]]:
    """Call until the structured answer is `ready` (the service indexes in the background)."""
    deadline = time.monotonic() + READY_SECONDS
    while True:
        text, data = await call(session, tool, **arguments)
        if ready(data):
            return text, data
        assert time.monotonic() < deadline, f"{tool} never ready: {text}"
        await anyio.sleep(POLL_SECONDS)


def ids(items: list[dict[str, Any]]) -> set[str]:
    return {item["id"] for item in items}


# -- stdio, with the SDK's client ---------------------------------------------


@pytest.mark.slow
def test_stdio_tools_with_the_sdk_client(vault: Vault, tmp_path: Path):
    write_french(vault)
    write_english(vault)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "notarium_search", "mcp"], env=stdio_env(vault, tmp_path), cwd=ROOT
    )

    async def session_checks() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await check_listing(session)
                for space in ("lab", "notes"):  # the service answers at once, and indexes meanwhile
                    await until(session, "query_frontmatter", lambda data: not data["partial"], space=space)
                await check_related(session)  # first: it waits for the semantic index
                await check_search(session)
                await check_frontmatter(session)
                await check_activations(session)
                await check_get_note(session)
                await check_refusals(session)

    anyio.run(session_checks)


async def check_listing(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 200, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint
        assert "one of lab, notes" in tool.input_schema["properties"]["space"]["description"]
    assert tools["search_notes"].input_schema["required"] == ["query"]
    assert tools["get_note"].input_schema["required"] == ["note"]
    frontmatter = tools["query_frontmatter"].input_schema["properties"]
    assert frontmatter["tags_mode"]["enum"] == ["any", "all"]
    assert tools["search_notes"].input_schema["properties"]["limit"]["minimum"] == 1
    check_tool_descriptions(list(tools.values()), ["lab", "notes"])


async def check_related(session: ClientSession) -> None:
    arguments = {"note": "papers/bm25.md", "space": "lab"}
    text, data = await until(session, "get_related", lambda data: data["semantic_unavailable"] is None, **arguments)
    assert data["related"][0]["id"] == "papers/rrf.md"  # the other ranking note, before Hamlet
    assert data["related"][0]["fragment"]["text"]
    assert data["related"][0]["source"]["text"]
    assert ids(data["backlinks"]) == {"papers/rrf.md"}
    assert "their fragment: > " in text
    assert "Backlinks (notes linking here): Reciprocal rank fusion" in text
    _, data = await call(session, "get_related", min_days_apart=3650, **arguments)
    assert ids(data["related"]) == {"papers/rrf.md"}  # written ten years before, unlike Hamlet
    far, data = await call(session, "get_related", min_days_apart=5000, **arguments)
    assert data["related"] == []
    assert "Semantic neighbours: none found." in far
    _, data = await call(session, "get_related", note="papers/rrf.md", space="lab", limit=1)
    assert len(data["related"]) == 1
    assert ids(data["links"]) == {"papers/bm25.md"}


async def check_search(session: ClientSession) -> None:
    arguments = {"query": "interoperabilite", "space": "notes"}
    # The long note's fragments may still be embedding: until then the answer is lexical-only.
    text, data = await until(session, "search_notes", lambda data: data["lexical_only"] is None, **arguments)
    assert {"z-agent", "z-protocoles"} <= ids(data["results"][:2])
    assert "semantic" in data["channels_used"]
    assert data["lexical_only"] is None
    assert "Lexical-only" not in text
    assert "**interopérabilité**" in text
    first = data["results"][0]
    assert first["channels"]["lexical"] >= 1
    assert first["snippets"]
    assert first["path"].startswith("zettel/")
    assert f"id: {first['id']} | path: {first['path']}" in text
    _, data = await call(session, "search_notes", query="interopérabilité", space="notes", tags=["dora"])
    assert data["results"][0]["id"] == "z-protocoles"  # the words; the others, by meaning, are tagged dora too
    assert all("dora" in result["tags"] for result in data["results"])
    _, data = await call(session, "search_notes", query="prestataires et tiers", space="notes", folder="lectures")
    assert data["results"]
    assert all(result["path"].startswith("lectures/") for result in data["results"])


async def check_frontmatter(session: ClientSession) -> None:
    text, data = await call(session, "query_frontmatter", space="notes", tags=["dora"], activated=False)
    assert ids(data["items"]) == {"z-protocoles", "dora-registre"}
    assert "2 notes in space notes (tagged dora; never used: no activation recorded)" in text
    _, data = await call(session, "query_frontmatter", space="notes", tags=["risque", "standards"], tags_mode="any")
    assert ids(data["items"]) == {"z-protocoles", "dora-registre"}
    _, data = await call(session, "query_frontmatter", space="notes", tags=["risque", "standards"])
    assert data["items"] == []
    _, data = await call(session, "query_frontmatter", space="notes", field="status", value="draft")
    assert ids(data["items"]) == {"dora-registre"}
    assert data["items"][0]["fields"]["status"] == "Draft"
    text, data = await call(session, "query_frontmatter", space="notes", tags=["dora"], limit=1)
    assert data["next_cursor"]
    assert f'cursor="{data["next_cursor"]}"' in text
    _, rest = await call(session, "query_frontmatter", space="notes", tags=["dora"], cursor=data["next_cursor"])
    assert len(rest["items"]) == 2
    assert not ids(rest["items"]) & ids(data["items"])


async def check_activations(session: ClientSession) -> None:
    text, data = await call(session, "list_recent_activations", space="notes")
    assert ids(data["notes"]) == {"z-agent", "dora-tiers"}
    agent = next(note for note in data["notes"] if note["id"] == "z-agent")
    assert [a["where"] for a in agent["activations"]] == ["Newsletter 12"]  # the Blog use is 200 days old
    assert f"Newsletter 12 ({RECENT})" in text
    assert "Conférence risque" in text
    _, data = await call(session, "list_recent_activations", space="notes", days=365)
    agent = next(note for note in data["notes"] if note["id"] == "z-agent")
    assert {a["where"] for a in agent["activations"]} == {"Newsletter 12", "Blog"}


async def check_get_note(session: ClientSession) -> None:
    text, data = await call(session, "get_note", note="z-agent", space="notes")
    assert text.startswith("# L'agent sans API est aveugle")
    assert "Dangling links (no such note): [[Note absente]]" in text
    assert "Backlinks (notes linking here): Protocoles ouverts (id: z-protocoles)" in text
    assert "lui rend la vue" in text
    assert data["content"].startswith("---\nid: z-agent")
    assert data["truncated"] is False
    assert ids(data["links"]) == {"z-protocoles"}
    # A note with a frontmatter id opens by its path and its title too, as a [[link]] to it would.
    for name in ("zettel/agent-sans-api.md", "L'agent sans API est aveugle"):
        _, data = await call(session, "get_note", note=name, space="notes")
        assert data["note"]["id"] == "z-agent"
    text, data = await call(session, "get_note", note="livre.md", space="notes")
    assert data["truncated"] is True
    assert len(data["content"]) == NOTE_TEXT_CHARS
    assert f"call get_note with offset={NOTE_TEXT_CHARS} for the rest" in text
    text, rest = await call(session, "get_note", note="livre.md", space="notes", offset=NOTE_TEXT_CHARS)
    assert rest["truncated"] is False
    assert NOTE_TEXT_CHARS + len(rest["content"]) == rest["content_chars"]
    assert f"characters {NOTE_TEXT_CHARS}-{rest['content_chars']} of {rest['content_chars']}" in text


async def check_refusals(session: ClientSession) -> None:
    assert "give `space`, one of: lab, notes" in await refused(session, "search_notes", query="x")
    assert "unknown space 'nope'; the spaces are: lab, notes" in await refused(
        session, "get_note", note="z-agent", space="nope"
    )
    assert "no note with id 'absente' in space notes" in await refused(
        session, "get_note", note="absente", space="notes"
    )
    assert "no note with id 'absente'" in await refused(session, "get_related", note="absente", space="notes")
    message = await refused(session, "query_frontmatter", space="notes", tags_mode="some")
    assert "tags_mode: Input should be 'any' or 'all' (got 'some')" in message
    message = await refused(session, "search_notes", query="x", space="notes", limit=-1)
    assert "limit: Input should be greater than or equal to 1 (got -1)" in message
    assert "days" in await refused(session, "list_recent_activations", space="notes", days=0)
    assert "updated_since: not a date 'hier'" in await refused(
        session, "query_frontmatter", space="notes", updated_since="hier"
    )
    assert "past the end" in await refused(session, "get_note", note="z-agent", space="notes", offset=10**6)
    assert "query is empty" in await refused(session, "search_notes", query="   ", space="notes")


# -- stdio, by hand: stdout is protocol only ---------------------------------


class RawServer:
    """`python -m notarium_search mcp` with pipes: JSON-RPC lines in, every stdout line kept."""

    def __init__(self, env: dict[str, str], stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "mcp"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        self.lines: list[bytes] = []
        self._incoming: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            self._incoming.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def send_line(self, data: bytes) -> None:
        """Whatever bytes a broken or hostile client may write, as one line."""
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next message on stdout (the bound is a limit on waiting, not a timing check)."""
        try:
            message: dict[str, Any] = json.loads(self._incoming.get(timeout=READY_SECONDS))
        except queue.Empty:
            raise AssertionError(f"no message on stdout within {READY_SECONDS} s") from None
        return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, "params": params})
        while True:
            reply: dict[str, Any] = json.loads(self._incoming.get(timeout=READY_SECONDS))
            if reply.get("id") == self._next_id:
                return reply

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()  # how MCP clients end a stdio session
        return self.process.wait(timeout=EXIT_SECONDS)


@pytest.mark.slow
def test_stdio_stdout_carries_only_protocol(vault: Vault, tmp_path: Path):
    """Indexing, the model loading and embedding, tool errors: all while the
    client reads stdout, which must hold JSON-RPC messages and nothing else."""
    write_english(vault)
    with open(tmp_path / "stderr.log", "wb") as stderr:
        server = RawServer(stdio_env(vault, tmp_path), stderr)
        try:
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            assert server.request("initialize", init)["result"]["serverInfo"]["name"] == "notarium-search"
            server.send({"method": "notifications/initialized"})
            wait_for_semantic_search(server)
            failed = server.request("tools/call", {"name": "get_note", "arguments": {"note": "absente"}})
            assert failed["result"]["isError"] is True
            check_second_writer_refused(stdio_env(vault, tmp_path))
        finally:
            exit_code = server.close()
    assert exit_code == 0
    messages = [json.loads(line) for line in server.lines]  # every line parses...
    assert all(m["jsonrpc"] == "2.0" and ("result" in m or "error" in m or "method" in m) for m in messages)
    log = (tmp_path / "stderr.log").read_text()
    assert '"event": "space_indexed"' in log  # ...and the logs went to stderr


def check_second_writer_refused(env: dict[str, str]) -> None:
    """A second server on the same index (another client's) says why it cannot
    start, on stderr, and leaves stdout empty for its client."""
    second = subprocess.run(
        [sys.executable, "-m", "notarium_search", "mcp"],
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=EXIT_SECONDS,
        check=False,
    )
    assert second.returncode == 1
    assert second.stdout == b""
    assert b"is in use by another process" in second.stderr
    assert b"/mcp endpoint" in second.stderr


def wait_for_semantic_search(server: RawServer) -> None:
    deadline = time.monotonic() + READY_SECONDS
    arguments = {"query": "merging rankings", "space": "lab"}
    while time.monotonic() < deadline:
        reply = server.request("tools/call", {"name": "search_notes", "arguments": arguments})
        if "semantic" in reply["result"]["structuredContent"]["channels_used"]:
            return
        time.sleep(POLL_SECONDS)
    raise AssertionError("the semantic channel never answered")


# -- stdio, by hand: malformed input is answered, logged, and survived ---------


@contextmanager
def raw_session(vault: Vault, tmp_path: Path) -> Iterator[RawServer]:
    """An initialized lexical-only `notarium-search mcp`; on leaving, it must still
    list its tools, exit cleanly, and have written nothing but JSON-RPC on stdout."""
    write_english(vault)
    env = stdio_env(vault, tmp_path)
    del env["VECTOR_SEARCH"]  # nothing to wait for: these tests are about the transport
    with open(tmp_path / "stderr.log", "wb") as stderr:
        server = RawServer(env, stderr)
        try:
            init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
            assert server.request("initialize", init)["result"]["serverInfo"]["name"] == "notarium-search"
            server.send({"method": "notifications/initialized"})
            yield server
            listed = server.request("tools/list", {})  # the server kept serving
            assert {tool["name"] for tool in listed["result"]["tools"]} == TOOLS
        finally:
            exit_code = server.close()
    assert exit_code == 0
    messages = [json.loads(line) for line in server.lines]
    assert all(m["jsonrpc"] == "2.0" and ("result" in m or "error" in m or "method" in m) for m in messages)


def assert_error(reply: dict[str, Any], code: int, message: str, request_id: int | str | None) -> None:
    assert reply["jsonrpc"] == "2.0"
    assert "id" in reply  # JSON-RPC 2.0 §5: required, null when the request's id could not be read
    assert reply["id"] == request_id
    assert reply["error"]["code"] == code
    assert reply["error"]["message"] == message
    assert "result" not in reply


def log_records(tmp_path: Path, event: str) -> list[dict[str, Any]]:
    records = []
    for line in (tmp_path / "stderr.log").read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event") == event:
            records.append(record)
    return records


@pytest.mark.slow
def test_stdio_answers_a_line_that_is_not_json_with_a_parse_error(vault: Vault, tmp_path: Path):
    """JSON-RPC 2.0 §5.1: -32700, id null; a client waiting for an answer must get one."""
    bad = [b"not json", b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"', b'{"jsonrpc": "2.0", "id": 6} trailing']
    with raw_session(vault, tmp_path) as server:
        for line in bad:
            server.send_line(line)
            assert_error(server.reply(), -32700, "Parse error", None)
        for blank in (b"", b" \t "):  # no message, no answer (and no error either)
            server.send_line(blank)
    errors = [json.loads(line) for line in server.lines if b'"error"' in line]
    assert len(errors) == len(bad)  # the blank lines were not answered
    records = log_records(tmp_path, "mcp_stdio_parse_error")
    assert [record["chars"] for record in records] == [len(line) for line in bad]
    assert [record["start"] for record in records] == [line.decode()[:SHOWN_LINE_CHARS] for line in bad]
    assert all(record["level"] == "warning" and record["reason"] for record in records)


@pytest.mark.slow
def test_stdio_answers_json_that_is_not_a_request_with_invalid_request(vault: Vault, tmp_path: Path):
    """-32600 Invalid Request, with the request's id when it can be read, else null."""
    bad: list[tuple[bytes, int | str | None]] = [
        (b'{"foo": 1}', None),
        (b"[]", None),
        (b"5", None),
        (b'[{"jsonrpc": "2.0", "id": 40, "method": "tools/list"}]', None),  # a batch: MCP has none
        (b'{"jsonrpc": "2.0", "id": 41, "params": {}}', 41),  # no method
        (b'{"jsonrpc": "2.0", "id": "q-42", "method": 7}', "q-42"),
        (b'{"jsonrpc": "1.0", "id": 43, "method": "tools/list"}', 43),
    ]
    with raw_session(vault, tmp_path) as server:
        for line, request_id in bad:
            server.send_line(line)
            reply = server.reply()
            assert_error(reply, -32600, "Invalid Request", request_id)
            assert reply["error"]["data"], line  # says what is wrong
    records = log_records(tmp_path, "mcp_stdio_invalid_request")
    assert [record["id"] for record in records] == [request_id for _, request_id in bad]
    assert all(record["level"] == "warning" and record["reason"] for record in records)
    assert "method: Field required" in records[4]["reason"]


# An id no request may have (JSON-RPC 2.0 §4: a string, a number or null; MCP: a string or an
# integer), and how the answer names it. The SDK read each such request as a notification.
BAD_IDS: list[tuple[Any, str]] = [
    ({"a": 1}, "not an object"),
    ([1], "not an array"),
    (None, "not null"),
    (1.5, "not a number with a fraction"),
    (True, "not a boolean"),
]


@pytest.mark.slow
def test_stdio_answers_a_request_whose_id_is_not_an_id(vault: Vault, tmp_path: Path):
    """-32600 Invalid Request with a null id (its own cannot be echoed); the
    SDK took each for a notification and answered nothing, so the client
    waited for good. A ping after each shows the answer came, and in order."""
    with raw_session(vault, tmp_path) as server:
        # stdin is read from a private descriptor (mcp/stdio.py): fd 0 itself reads nothing of the protocol.
        assert Path(f"/proc/{server.process.pid}/fd/0").resolve() == Path("/dev/null")
        for request_id, kind in BAD_IDS:
            server.send({"id": request_id, "method": "tools/call", "params": {"name": "get_note", "arguments": {}}})
            server.send({"id": "after", "method": "ping"})
            reply = server.reply()
            assert_error(reply, -32600, "Invalid Request", None)
            assert kind in reply["error"]["data"]
            assert server.reply() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    records = log_records(tmp_path, "mcp_stdio_invalid_request")
    assert [record["id"] for record in records] == [None] * len(BAD_IDS)
    assert all(record["level"] == "warning" and "its id must be" in record["reason"] for record in records)


@pytest.mark.slow
def test_stdio_survives_oversized_and_binary_lines(vault: Vault, tmp_path: Path):
    """Megabytes of a note's text, bytes that are not UTF-8, JSON nested past the
    parser's depth: each is a parse error, and the log holds none of the text."""
    secret = b"my private note text "
    oversized = b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"note": "' + secret * 200_000
    binary = bytes(byte for byte in range(256) if byte not in b"\r\n") * 64  # \r would end a line too
    nested = b"[" * 100_000
    with raw_session(vault, tmp_path) as server:
        for line in (oversized, binary, nested):
            server.send_line(line)
            assert_error(server.reply(), -32700, "Parse error", None)
    records = log_records(tmp_path, "mcp_stdio_parse_error")
    received = binary.decode("utf-8", errors="replace")  # as the SDK reads stdin
    assert [record["chars"] for record in records] == [len(oversized), len(received), len(nested)]
    assert all(len(record["start"]) <= SHOWN_LINE_CHARS for record in records)
    log = (tmp_path / "stderr.log").read_bytes()
    assert secret not in log
    assert len(log) < 100_000  # a few log lines, not the megabytes sent


# -- Streamable HTTP on the running service -----------------------------------


@pytest.mark.slow
def test_http_transport_behind_the_token(vault: Vault, tmp_path: Path):
    write_french(vault)  # one space: `space` may be left out
    port = free_port()
    settings = {"NOTARIUM_API_TOKEN": TOKEN, "NOTARIUM_LOG_LEVEL": "info", "NOTARIUM_WORKERS": "2"}
    env = server_env(vault.root, vault.index_dir, port, settings)
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "notarium_search", "serve"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=5, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            wait_until_ready(client, process)
        wait_for_log(log_path, "mcp_http_started")  # in the background, in one worker (mcp/owner.py): no call asked
        anyio.run(http_session_checks, f"{url}/mcp")
        check_http_refusals(f"{url}/mcp")
    finally:
        process.send_signal(signal.SIGTERM)
        exit_code = process.wait(timeout=EXIT_SECONDS)
    assert exit_code == 0
    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    assert "service_stopped" in {r["event"] for r in records}  # the graceful stop ran
    assert not [r for r in records if r["level"] in ("error", "critical")]
    # The SDK loaded once, at start, before any call: the first call (7 s on a
    # busy machine when it loaded the SDK) no longer waits for it; the other
    # worker forwards its calls (tests/mcp/test_owner.py).
    started = [i for i, r in enumerate(records) if r["event"] == "mcp_http_started"]
    assert [records[i]["by"] for i in started] == ["start"]
    calls = [i for i, r in enumerate(records) if r["event"] == "request" and r["path"] == "/mcp"]
    assert calls
    assert max(started) < min(calls)


def wait_for_log(path: Path, event: str, count: int = 1) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while path.read_text().count(f'"event": "{event}"') < count:
        assert time.monotonic() < deadline, f"no {event} in the log"
        time.sleep(POLL_SECONDS)


async def http_session_checks(url: str) -> None:
    # The SDK client's own timeouts (create_mcp_http_client's defaults), as an assistant would have.
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert {tool.name for tool in tools} == TOOLS
        check_tool_descriptions(tools, ["notes"])
        text, data = await call(session, "search_notes", query="registre dora")
        assert data["space"] == "notes"
        assert data["results"][0]["id"] == "dora-registre"
        assert data["lexical_only"] == "semantic search is off on this server (VECTOR_SEARCH is not set)"
        assert "Lexical-only answer (matched words, not meaning): semantic search is off" in text
        assert "VECTOR_SEARCH is off" in (await call(session, "get_related", note="z-agent"))[0]


def check_tool_descriptions(tools: list[Any], spaces: list[str]) -> None:
    """Each tool has a title, an outputSchema describing its structured content
    (the SDK client checks every answer against it), and `space` as an enum of
    the configured spaces."""
    for tool in tools:
        assert tool.title, tool.name
        assert tool.output_schema is not None, tool.name
        assert "space" in tool.output_schema["required"]
        space = tool.input_schema["properties"]["space"]
        assert space["enum"] == [*spaces, None], tool.name
    search = next(tool for tool in tools if tool.name == "search_notes")
    assert {"results", "lexical_only", "caveats", "filters"} <= set(search.output_schema["required"])


def check_http_refusals(url: str) -> None:
    for token in (None, "wrong"):
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        response = httpx.post(url, json=INITIALIZE, headers={**STREAMABLE_ACCEPT, **auth}, timeout=5)
        assert response.status_code == 401
        assert response.json()["error"] == "unauthorized"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for request_id, kind in BAD_IDS[:2]:  # an object, an array: the SDK answered 202 and nothing
        response = httpx.post(
            url, json={**INITIALIZE, "id": request_id}, headers={**STREAMABLE_ACCEPT, **auth}, timeout=5
        )
        assert response.status_code == 400
        assert_error(response.json(), -32600, "Invalid Request", None)
        assert kind in response.json()["error"]["data"]


def test_http_open_without_a_token_on_the_loopback_only(vault: Vault):
    """No token: /mcp answers like the rest of the API, but only requests
    addressed to the loopback (a rebound name from a web page gets a 421)."""
    write_french(vault)
    app = create_app(vault.settings(), vault.service(), start_indexing=False)
    with TestClient(app, base_url="http://127.0.0.1:8377") as client:
        reply = client.post("/mcp", json=INITIALIZE, headers=STREAMABLE_ACCEPT)
        assert reply.status_code == 200, reply.text
        assert reply.json()["result"]["serverInfo"]["name"] == "notarium-search"
        rebound = client.post("/mcp", json=INITIALIZE, headers={**STREAMABLE_ACCEPT, "Host": "notes.attacker.example"})
        assert rebound.status_code == 421
        stream = client.get("/mcp", headers={"Accept": "text/event-stream"})  # no server-initiated messages
        assert stream.status_code == 405
        assert stream.headers["Allow"] == "POST"


def test_http_answers_a_request_whose_id_is_not_an_id(vault: Vault):
    """-32600 with a null id and a 400 (as the SDK answers a message it cannot
    read), where the SDK answered 202 with no body: it took each request for
    a notification, and ran nothing."""
    write_french(vault)
    app = create_app(vault.settings(), vault.service(), start_indexing=False)
    with TestClient(app, base_url="http://127.0.0.1:8377") as client:
        for request_id, kind in BAD_IDS:
            for method, params in (("tools/list", {}), ("tools/call", {"name": "get_note", "arguments": {}})):
                request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                reply = client.post("/mcp", json=request, headers=STREAMABLE_ACCEPT)
                assert reply.status_code == 400, reply.text
                assert reply.headers["content-type"] == "application/json"
                assert_error(reply.json(), -32600, "Invalid Request", None)
                assert kind in reply.json()["error"]["data"]
        # Well-formed requests, the body handed on to the SDK as it came: an integer id and a string id.
        for request_id in (8, "q-8"):
            reply = client.post("/mcp", json={**INITIALIZE, "id": request_id}, headers=STREAMABLE_ACCEPT)
            assert reply.status_code == 200, reply.text
            assert reply.json()["id"] == request_id
        notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}  # no id at all: still a 202
        assert client.post("/mcp", json=notification, headers=STREAMABLE_ACCEPT).status_code == 202
