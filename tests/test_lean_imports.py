"""The service's processes load structlog, httpx and the MCP SDK's server
without rich and pygments (notarium_search/lean_imports.py). Each case runs
in a fresh interpreter: this one has them loaded long ago."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

CONSOLE = ("rich", "pygments")

A_WORKER = """
import json, sys
import notarium_search.api.server as server

def a_worker(settings, load_app):
    # What a worker forked at this point runs: the supervisor's imports are its own.
    load_app()
    from notarium_search.mcp.server import build_server
    from notarium_search.service import Service
    build_server(Service(settings))  # what the worker's MCP route builds at its start
    import notarium_search.semantic.shared_model  # the model's client, loaded later by the embedder's thread
    held = sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "pygments"))
    import rich.progress  # the CLI's progress bars still can
    loaded = {"mcp": "mcp.server.mcpserver" in sys.modules, "httpx": "httpx" in sys.modules}
    print("SEEN", json.dumps({"held": held, **loaded}))
    return 0

server.serve = a_worker
from notarium_search.cli import main
sys.exit(main(["serve"]))
"""


def python(code: str, tmp_path: Path) -> str:
    (tmp_path / "notes" / "notes").mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "NOTARIUM_SPACES_ROOT": str(tmp_path / "notes"),
        "NOTARIUM_INDEX_DIR": str(tmp_path / "index"),
        "NOTARIUM_WORKERS": "2",
        "NOTARIUM_PORT": str(free_port()),
    }
    for name in ("NOTARIUM_CONFIG", "VECTOR_SEARCH", "GRAPH_BOOST"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (seen,) = [line.removeprefix("SEEN ") for line in done.stdout.splitlines() if line.startswith("SEEN ")]
    return seen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_worker_holds_no_console_library(tmp_path: Path):
    """structlog's `dev` module, httpx's command line and the SDK's
    MCPServer (its logging set up with rich's handler: made a no-op) each
    loaded rich and pygments: ~4 MiB in every process of the service."""
    seen = json.loads(python(A_WORKER, tmp_path))
    assert (seen["mcp"], seen["httpx"]) == (True, True)  # the libraries that would have loaded them are in
    assert seen["held"] == []


def test_the_libraries_load_rich_when_not_kept_from_it(tmp_path: Path):
    """The check above can fail: the same worker, structlog and httpx
    imported first as usual, holds rich and pygments."""
    seen = json.loads(python("import structlog, httpx\n" + A_WORKER, tmp_path))
    assert {m.split(".")[0] for m in seen["held"]} == set(CONSOLE)


MODEL_PROCESS = """
import json, os, sys
import notarium_search.semantic.model_server as model_server

def serving(*_):  # where the model process starts serving: its modules are loaded by now
    held = sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "pygments"))
    print("SEEN", json.dumps({"held": held, "structlog": "structlog" in sys.modules}), flush=True)
    os._exit(0)

model_server._Server = serving
sys.exit(model_server.main(sys.argv[1:]))
"""


def test_the_model_process_holds_no_console_library(tmp_path: Path):
    settings = json.dumps({"model_dir": str(tmp_path), "threads": 1, "batch_size": 1})
    args = ["--socket", str(tmp_path / "model.sock"), "--parent", str(os.getpid()), "--settings", settings]
    seen = json.loads(python(MODEL_PROCESS.replace("sys.argv[1:]", repr(args)), tmp_path))
    assert seen == {"held": [], "structlog": True}


def test_unavailable_only_while_inside_and_only_what_is_not_loaded(tmp_path: Path):
    code = """
import json, sys
from notarium_search.lean_imports import unavailable
import json as loaded_before
failed = []
with unavailable("rich", "json"):
    try:
        import rich
    except ImportError:
        failed.append("rich")
    import json as still_there  # already loaded: untouched
import rich  # importable again
print("SEEN", json.dumps({"failed": failed, "same": still_there is loaded_before, "rich": "rich" in sys.modules}))
"""
    assert json.loads(python(code, tmp_path)) == {"failed": ["rich"], "same": True, "rich": True}
