"""The Docker appliance, built from the repository's Dockerfile and run as
the README says (`bash .ci/docker-smoke`; `.ci/run` runs it after the suite).

Each tier is started once with a copy of the sample vault mounted read-only
and a named volume on /data; the checks read that container. The lifecycle
checks (stop on SIGTERM, restart on the same /data, the notes untouched)
and the unwritable /data run containers of their own.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.container.conftest import record
from tests.container.engine import Engine
from tests.container.running import (
    READY_SECONDS,
    Built,
    Container,
    chown_in_container,
    copy_sample_vault,
    fingerprint,
    new_volume,
    unique,
)
from tests.notes.test_pdf import written

pytestmark = [pytest.mark.container, pytest.mark.timeout(3 * READY_SECONDS + 1800)]

TIERS = ["lexical", "semantic"]
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module", params=TIERS)
def tier(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def image(request: pytest.FixtureRequest, tier: str) -> Built:
    built: Built = request.getfixturevalue(f"{tier}_image")
    return built


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory, tier: str) -> Path:
    """The sample vault, and a PDF beside its notes: the image reads PDFs (PDFium in its child process)."""
    copied = copy_sample_vault(tmp_path_factory.mktemp(f"vault-{tier}") / "vault")
    pages = ["Sommaire du rapport.", "La télémétrie des capteurs est chiffrée de bout en bout."]
    (copied / "lab" / "rapport-capteurs.pdf").write_bytes(written(pages, "Rapport capteurs"))
    return copied


@pytest.fixture(scope="module")
def vault_before(vault: Path) -> dict[str, tuple[int, int, str]]:
    """The mounted notes as they were before the container started."""
    return fingerprint(vault)


@pytest.fixture(scope="module")
def running(
    engine: Engine, image: Built, vault: Path, vault_before: dict[str, tuple[int, int, str]], tier: str
) -> Iterator[Container]:
    volume = new_volume(engine, f"notarium-smoke-{tier}")
    # A proxy that refuses everything: the service and its health check must
    # not go through it (they talk to nothing but 127.0.0.1).
    refusing_proxy = [
        f"{name}=http://127.0.0.1:9" for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")
    ]
    proxy_env = [arg for setting in refusing_proxy for arg in ("-e", setting)]
    container = Container(engine, image.tag, unique(f"notarium-smoke-{tier}"), vault, volume, *proxy_env)
    started = time.monotonic()
    try:
        container.start_new()
        container.wait_ready(semantic=tier == "semantic")
        record(f"{tier} tier: started and indexed the sample vault in {time.monotonic() - started:.1f} s")
        yield container
    finally:
        container.remove()
        engine.run("volume", "rm", "--force", volume, check=False)


# ------------------------------------------------------------------ the image


def test_image_declares_its_health_check_user_volume_and_port(engine: Engine, image: Built) -> None:
    found: Any = engine.inspect(image.tag, kind="image")
    config = found["Config"]
    health = config.get("Healthcheck") or found["Healthcheck"]  # Docker's place, else podman's
    assert health["Test"][0] == "CMD"
    assert "/healthz" in " ".join(health["Test"])
    assert config["User"] == "10001:10001"
    assert "/data" in config["Volumes"]
    assert "8377/tcp" in config["ExposedPorts"]


def test_runtime_image_carries_no_installer(running: Container) -> None:
    """pip and setuptools are never run by the service, in the venv or the
    base; the test-data generators and the hub client are left out too (the
    Dockerfile's NOT_RUN)."""
    names = ("pip", "setuptools", "wheel", "faker", "polyfactory", "huggingface_hub")
    probe = f"import importlib.util as u; print([m for m in {names!r} if u.find_spec(m)])"
    interpreters = "/opt/venv/bin/python /usr/local/bin/python3 /usr/bin/python3"
    code, output = running.exec("sh", "-c", f'for p in {interpreters}; do [ -x $p ] && $p -c "{probe}"; done; true')
    assert code == 0, output
    found = output.split()
    assert found, output  # the venv's interpreter at least answered
    assert set(found) == {"[]"}, output


# ---------------------------------------------------------------- the service


def test_health_and_status(running: Container, tier: str) -> None:
    assert running.get("/healthz")[0] == 200
    status = running.get_json("/status")
    assert {space["space"] for space in status["spaces"]} == {"carnet", "lab"}
    assert status["vector_search"] is (tier == "semantic")
    assert {space["space"]: space["notes"] for space in status["spaces"]} == {"carnet": 7, "lab": 4}


def test_a_pdf_is_searched_and_a_hit_says_its_page(running: Container) -> None:
    found = running.get_json("/spaces/lab/search?q=telemetrie%20capteurs")
    best = found["results"][0]
    assert (best["path"], best["title"], best["anchor"], best["line"]) == (
        "rapport-capteurs.pdf",
        "Rapport capteurs",
        "page 2",
        2,
    ), found


def test_french_search_without_accents_finds_the_accented_note(running: Container) -> None:
    found = running.get_json("/spaces/carnet/search?q=interoperabilite")
    first_two = found["results"][:2]
    # The two notes that write it with its accents (one as the query has it, the
    # other in the plural), found by their words, not only their meaning.
    assert sorted(hit["path"] for hit in first_two) == ["zettel/agent-sans-api.md", "zettel/protocoles-ouverts.md"], (
        found
    )
    assert all("lexical" in hit["channels"] for hit in first_two), found


def test_feed_filters_by_tag(running: Container) -> None:
    feed = running.get_json("/spaces/carnet/feed?tag=dora")
    assert [item["path"] for item in feed["items"]] == ["lectures/dora.md"]


def test_web_page_and_its_files(running: Container) -> None:
    status, page, content_type = running.get("/")
    assert status == 200
    assert content_type.startswith("text/html")
    assets = re.findall(r'(?:src|href)="(web/[^"]+)"', page.decode())
    assert {"web/app.js", "web/app.css"} <= set(assets)
    for asset in assets:
        asset_status, body, _ = running.get(f"/{asset}")
        assert asset_status == 200, asset
        assert body


def test_mcp_lists_and_runs_its_tools(running: Container) -> None:
    """The MCP SDK (and what it imports) is in the image and loads."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "smoke", "version": "1"}}
    status, answer = running.post_json(
        "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, MCP_HEADERS
    )
    assert status == 200, answer
    status, answer = running.post_json("/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, MCP_HEADERS)
    assert "search_notes" in {tool["name"] for tool in answer["result"]["tools"]}
    call = {"name": "search_notes", "arguments": {"space": "lab", "query": "hamlet"}}
    status, answer = running.post_json(
        "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}, MCP_HEADERS
    )
    assert answer["result"]["isError"] is False, answer
    assert "hamlet.md" in json.dumps(answer["result"])


def test_openapi_schema(running: Container) -> None:
    schema = running.get_json("/schema/openapi.json")
    assert "/spaces/{space}/search" in schema["paths"]


def test_the_api_explorer_and_its_files_are_in_the_image(running: Container) -> None:
    """Served from the image's packages (openapi-ui-bundles), nothing from a CDN."""
    status, page, content_type = running.get("/schema")
    assert (status, content_type.split(";")[0]) == (200, "text/html")
    assets = re.findall(r'(?:src|href)="(/schema/[^"]+)"', page.decode())
    assert any(path.endswith("swagger-ui-bundle.js") for path in assets), assets
    for path in assets:
        assert running.get(path)[0] == 200, path


def test_health_check_passes(engine: Engine, running: Container) -> None:
    if engine.name == "podman":
        # podman runs health checks on a systemd timer; without systemd, run it once by hand.
        assert engine.run("healthcheck", "run", running.name, check=False).returncode == 0
        return
    deadline = time.monotonic() + READY_SECONDS  # Docker's first check comes after --interval (30 s)
    while (health := engine.inspect(running.name)["State"]["Health"]["Status"]) != "healthy":  # type: ignore[index]
        assert health == "starting", health
        assert time.monotonic() < deadline, "the health check never passed"
        time.sleep(1)


def test_runs_as_a_non_root_user(running: Container) -> None:
    code, output = running.exec("id")
    assert code == 0
    assert output.strip().startswith("uid=10001(notarium) gid=10001(notarium)")
    code, output = running.exec("sh", "-c", "grep -E '^(Uid|Gid):' /proc/1/status")
    assert re.findall(r"\d+", output) == ["10001"] * 8, output


def test_notes_cannot_be_written(running: Container) -> None:
    code, mounts = running.exec("cat", "/proc/self/mountinfo")
    (notes,) = [line.split() for line in mounts.splitlines() if line.split()[4] == "/notes"]
    assert "ro" in notes[5].split(","), notes  # the mount's own options: read-only
    for command in ("touch /notes/new.md", "echo x >> /notes/carnet/cafe.md", "rm /notes/lab/hamlet.md"):
        code, output = running.exec("sh", "-c", command)
        assert code != 0, command
        assert "Read-only file system" in output or "Permission denied" in output, output


# ------------------------------------------------------------- semantic tier

semantic_only = pytest.mark.parametrize("tier", ["semantic"], indirect=True)


@semantic_only
def test_every_note_is_embedded(running: Container) -> None:
    for space in running.get_json("/status")["spaces"]:
        semantic = space["semantic"]
        assert semantic["state"] == "ready", space
        assert semantic["embedded"] == semantic["total"] > 0, space


@semantic_only
def test_hybrid_answers_use_the_semantic_channel(running: Container) -> None:
    # The meaning adds to Hamlet ("Shakespeare" is nowhere in it, "question"
    # is). Read as English, as the note is (`language = "auto"`), no other
    # word matches: "a famous line from Shakespeare" found it only while the
    # space read it as French, through "a", and the semantic hit alone sits
    # at the relevance floor (0.809 against 0.808 with e5-small, measured).
    query = urllib.parse.urlencode({"q": "a famous question from Shakespeare"})
    found = running.get_json("/spaces/lab/search?" + query)
    assert "semantic" in found["channels_used"], found
    assert not found.get("degraded"), found
    assert found["results"][0]["path"] == "hamlet.md", found
    assert "semantic" in found["results"][0]["channels"], found
    # A made-up word: nothing, and why (docs/relevance.md).
    nothing = running.get_json("/spaces/carnet/search?" + urllib.parse.urlencode({"q": "xyzzy"}))
    assert nothing["results"] == [], nothing
    assert "relevance floor" in nothing["caveats"]["semantic"], nothing


@semantic_only
def test_related_notes(running: Container) -> None:
    related = running.get_json("/spaces/carnet/notes/z-2024-0001/related")
    paths = [note["path"] for note in related["related"]]
    assert paths, related
    assert "zettel/agent-sans-api.md" not in paths


# ------------------------------------------------------------------ lifecycle


def test_stop_restart_and_untouched_notes(
    engine: Engine, image: Built, tier: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """SIGTERM stops it gracefully within STOP_SECONDS (exit code 0, not the
    SIGKILL's 137); a restart on the same /data re-reads no note and embeds
    nothing; the notes are byte for byte, mode and mtime, what they were."""
    vault = copy_sample_vault(tmp_path_factory.mktemp(f"lifecycle-{tier}") / "vault")
    before = fingerprint(vault)
    volume = new_volume(engine, f"notarium-life-{tier}")
    container = Container(engine, image.tag, unique(f"notarium-life-{tier}"), vault, volume)
    semantic = tier == "semantic"
    spaces = {"carnet", "lab"}
    try:
        container.start_new()
        container.wait_ready(semantic=semantic)
        first_passes = container.new_events("space_indexed", 0, spaces)
        assert all(event["changed"] > 0 for event in first_passes), first_passes  # read once
        first_plans = len(container.new_events("semantic_planned", 0, spaces)) if semantic else 0
        seconds, code = container.stop()
        record(f"{tier} tier: stopped on SIGTERM in {seconds:.2f} s (exit code {code})")
        assert code == 0, container.logs()[-3000:]
        assert container.log_events("service_stopped"), container.logs()[-3000:]

        started = time.monotonic()
        container.restart()
        container.wait_ready(semantic=semantic)
        record(f"{tier} tier: restarted on the same /data, ready in {time.monotonic() - started:.1f} s")
        passes = container.new_events("space_indexed", len(first_passes), spaces)
        assert len(passes) == 2, passes
        assert all(event["changed"] == 0 and event["deleted"] == 0 for event in passes), passes
        if semantic:
            planned = container.new_events("semantic_planned", first_plans, spaces)
            assert [event["pending"] for event in planned] == [0, 0], planned
            assert all(event["vectors"] > 0 for event in planned), planned
        found = container.get_json("/spaces/lab/search?q=hamlet")
        assert found["results"][0]["path"] == "hamlet.md"
        container.stop()
    finally:
        container.remove()
        engine.run("volume", "rm", "--force", volume, check=False)
    assert fingerprint(vault) == before


def test_notes_untouched_by_the_shared_run(
    running: Container, vault: Path, vault_before: dict[str, tuple[int, int, str]]
) -> None:
    """The module's container, after the checks above, has changed nothing."""
    assert fingerprint(vault) == vault_before


# ---------------------------------------------------------- an unwritable /data


@pytest.mark.parametrize("tier", ["lexical"], indirect=True)
def test_unwritable_data_folder_is_one_clear_line(engine: Engine, image: Built, tmp_path: Path) -> None:
    """A host folder on /data that uid 10001 cannot write: one line saying
    what to do, exit code 2, no traceback; then each documented fix works."""
    vault = copy_sample_vault(tmp_path / "vault")
    data = tmp_path / "data"
    data.mkdir(mode=0o755)  # the test runner's, as `mkdir` leaves it on the host
    owner = data.stat()
    container = Container(engine, image.tag, unique("notarium-data"), vault, str(data))
    try:
        container.start_new()
        assert container.wait_exit() == 2
        output = container.logs()
        (line,) = output.strip().splitlines()  # nothing else: no traceback, no log
        assert line.startswith("notarium-search: cannot create the index folder /data/index"), line
        assert "chown -R 10001:10001" in line, line
        if owner.st_uid == 0:
            assert "--user" not in line, line  # running as root is never offered
        else:
            assert f"--user {owner.st_uid}:{owner.st_gid}" in line, line

        chown_in_container(engine, image.tag, data, "4242:4242")  # the documented fix: run as its owner
        as_owner = Container(engine, image.tag, unique("notarium-owner"), vault, str(data), "--user", "4242:4242")
        try:
            as_owner.start_new()
            as_owner.wait_ready(semantic=False)
        finally:
            as_owner.remove()
        assert (data / "index").stat().st_uid == 4242

        chown_in_container(engine, image.tag, data, "10001:10001")  # the other: chown -R 10001:10001
        container.remove()
        container.start_new()
        container.wait_ready(semantic=False)
    finally:
        container.remove()
