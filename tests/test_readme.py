"""The README's quick start, run as written: the sample vault served by its
command, each of its curl examples asked of it. The third once asked for
notes tagged `dora` not yet used, and the sample's one `dora` note is used
(`used_in`): an empty answer, the first thing a newcomer tried."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from tests.api.test_server import STARTUP_SECONDS, free_port, wait_until_ready
from tests.conftest import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
PORT = 8377  # the one the README's examples name


def quick_start() -> tuple[list[str], list[str]]:
    """The quick start's serve command (its first block's first line, after
    the venv is made) and the curl examples' URLs."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Quick start") : text.index("## Semantic search")]
    serve = re.search(r"&& (\.venv/bin/notarium-search .* serve)\n", section)
    assert serve, "the quick start serves the sample vault"
    urls = re.findall(rf"curl '(http://127\.0\.0\.1:{PORT}/[^']*)'", section)
    return serve[1].split(), urls


def test_the_quick_start_examples_answer_on_the_sample_vault(tmp_path: Path):
    command, urls = quick_start()
    assert len(urls) == 4
    port = free_port()
    # The README's command, run from the repository, on another port (NOTARIUM_PORT, as the README
    # says to change it) and with the index out of the working tree.
    env = {**os.environ, "NOTARIUM_PORT": str(port), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    for name in ("NOTARIUM_CONFIG", "NOTARIUM_SPACES_ROOT", "NOTARIUM_VAULT"):
        env.pop(name, None)
    executable = [sys.executable, "-m", "notarium_search"] if command[0] == ".venv/bin/notarium-search" else command[:1]
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen(
            [*executable, *command[1:]], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=STARTUP_SECONDS) as client:
            wait_until_ready(client, server)
            for url in urls:
                answer = client.get(url.replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}"))
                assert answer.status_code == 200, (url, answer.text)
                body = answer.json()
                listed = next(body[key] for key in ("results", "items", "spaces") if key in body)
                assert listed, f"{url} answers nothing on the sample vault: {body}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=STARTUP_SECONDS)
