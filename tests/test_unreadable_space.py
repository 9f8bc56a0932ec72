"""One sub-folder of the spaces root that the service's user may not read
(mode 700, another owner): every command goes on with the other spaces and
says why that one cannot be read. It made `serve` crash-loop and exit, `mcp`
exit before `initialize`, and `index` print a PermissionError traceback
(`.obsidian` looked for in the folder as the space opened).

Root reads every folder whatever its mode: as root, the commands run without
that privilege (setpriv drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), as
the service's user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.api.test_server import STARTUP_SECONDS, free_port
from tests.conftest import Vault, eventually

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534


@pytest.fixture
def vault_with_a_locked_folder(vault: Vault) -> Iterator[Vault]:
    vault.write("cafe.md", "---\nid: cafe\n---\nLe café du matin.\n", space="good")
    vault.write("secret.md", "---\nid: secret\n---\nLe café secret.\n", space="locked")
    vault.write(".obsidian/app.json", "{}", space="locked")  # an Obsidian vault: its link template is looked for
    locked = vault.root / "locked"
    if os.geteuid() == 0:
        for path in [locked, *locked.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        locked.chmod(0o700)
    else:
        locked.chmod(0)
    yield vault
    locked.chmod(0o755)


def unprivileged() -> list[str]:
    """The prefix that runs a command without root's override of file permissions."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]


def command_env(vault: Vault, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "NOTARIUM_SPACES_ROOT": str(vault.root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    env.pop("NOTARIUM_CONFIG", None)
    return {**env, **extra}


def run(args: list[str], vault: Vault, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*unprivileged(), sys.executable, "-m", "notarium_search", *args],
        env=command_env(vault, tmp_path),
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )


def test_index_and_status_say_why_one_space_cannot_be_read(vault_with_a_locked_folder: Vault, tmp_path: Path):
    vault = vault_with_a_locked_folder
    locked = run(["index", "locked"], vault, tmp_path)
    assert locked.returncode == 1
    assert "Traceback" not in locked.stderr
    assert f"the notes folder {vault.root / 'locked'} cannot be listed: Permission denied" in locked.stderr
    good = run(["index", "good"], vault, tmp_path)
    assert good.returncode == 0, good.stderr
    status = run(["status", "--json"], vault, tmp_path)
    assert status.returncode == 0, status.stderr
    rows = {row["space"]: row for row in json.loads(status.stdout)["spaces"]}
    assert rows["good"]["state"] == "complete"
    assert rows["locked"]["state"] == "folder unavailable"
    assert "Permission denied" in rows["locked"]["detail"]


class UnprivilegedServer:
    """`notarium-search serve` without root's override of file permissions (its log in `log_path`)."""

    def __init__(self, vault: Vault, tmp_path: Path) -> None:
        port = free_port()
        self.log_path = tmp_path / "serve.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [*unprivileged(), sys.executable, "-m", "notarium_search", "serve"],
                env=command_env(vault, tmp_path, NOTARIUM_PORT=str(port), NOTARIUM_WORKERS="2"),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)

    def status(self) -> dict[str, Any]:
        assert self.process.poll() is None, self.log_path.read_text()  # never a crash loop, never an exit
        try:
            answer = self.client.get("/status")
        except httpx.TransportError:
            return {}
        return {s["space"]: s for s in answer.json()["spaces"]} if answer.status_code == 200 else {}

    def wait_reported(self, broken: str) -> str:
        """Until `good` is ready and `broken` reported: its reason."""

        def reported() -> bool:
            spaces = self.status()
            return (
                bool(spaces)
                and spaces["good"]["lexical"]["state"] == "ready"
                and bool(spaces[broken]["lexical"]["error"])
            )

        eventually(reported, timeout=STARTUP_SECONDS)
        return str(self.status()[broken]["lexical"]["error"])

    def ids(self, space: str, query: str) -> list[str]:
        return [hit["id"] for hit in self.client.get(f"/spaces/{space}/search", params={"q": query}).json()["results"]]

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=STARTUP_SECONDS)
        assert "crash loop" not in self.log_path.read_text()


def test_serve_keeps_serving_the_other_spaces_and_picks_the_folder_up_once_readable(
    vault_with_a_locked_folder: Vault, tmp_path: Path
):
    vault = vault_with_a_locked_folder
    server = UnprivilegedServer(vault, tmp_path)
    try:
        assert "Permission denied" in server.wait_reported("locked")
        assert server.ids("good", "café") == ["cafe"]
        assert server.client.get("/spaces/locked/search", params={"q": "café"}).json()["partial"] is True

        # Made readable: the retries pick it up, without a restart.
        (vault.root / "locked").chmod(0o755)
        for path in (vault.root / "locked").rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        eventually(lambda: server.ids("locked", "secret") == ["secret"], timeout=STARTUP_SECONDS)
    finally:
        server.stop()


def test_an_index_lock_file_the_service_may_not_open_is_one_space_down_not_a_traceback(vault: Vault, tmp_path: Path):
    """A writer.lock left by another user (a run as root, then a service as
    its own user): the check before the workers start read it and raised
    PermissionError, and nothing was served."""
    vault.write("cafe.md", "---\nid: cafe\n---\nLe café du matin.\n", space="good")
    vault.write("the.md", "---\nid: the\n---\nLe thé.\n", space="other")
    lock = tmp_path / "index" / "other" / "writer.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    if os.geteuid() == 0:
        os.chown(lock, NOBODY, NOBODY)
        lock.chmod(0o600)
    else:
        lock.chmod(0)
    server = UnprivilegedServer(vault, tmp_path)
    try:
        assert "permission denied" in server.wait_reported("other").lower()
        assert server.ids("good", "café") == ["cafe"]
    finally:
        server.stop()


def test_mcp_answers_and_searches_the_other_spaces(vault_with_a_locked_folder: Vault, tmp_path: Path):
    vault = vault_with_a_locked_folder
    prefix = unprivileged()
    command = [*prefix, sys.executable, "-m", "notarium_search", "mcp"]
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=command_env(vault, tmp_path, NOTARIUM_WORKERS="1"), cwd=ROOT
    )

    async def session_checks() -> None:
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                with anyio.fail_after(STARTUP_SECONDS):
                    while True:
                        result = await session.call_tool("search_notes", {"query": "café", "space": "good"})
                        data = result.structured_content or {}
                        if not data.get("partial", True):
                            break
                        await anyio.sleep(0.1)
                assert [hit["id"] for hit in data["results"]] == ["cafe"]
                locked = await session.call_tool("search_notes", {"query": "café", "space": "locked"})
                text = "\n".join(getattr(block, "text", "") for block in locked.content)
                assert "Permission denied" in text, text

    anyio.run(session_checks)
