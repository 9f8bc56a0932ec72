"""Libraries loaded without the console extras they pull in when installed.

structlog's `dev` module imports rich (for its console renderer's coloured
tracebacks), and with it pygments and attrs; httpx's `__init__` imports its
command-line tool, which imports click, pygments and rich. Each takes an
ImportError there as "not installed" and carries on. (The MCP SDK's server
sets up logging with rich's handler too: mcp/server.py makes that a no-op.)
The service renders JSON and runs no console, yet rich is installed (the
CLI's progress bars), so every process of the service held them. Measured (2026-12-06, this machine): in a fresh
interpreter, `import httpx, structlog` 22.9 → 16.8 MiB of RSS and 361 → 251
modules; in a 2-worker service at 50,000 notes, 4 MiB less private memory
in each process (supervisor 22 → 18 MiB, a follower 117 → 113).

A None in `sys.modules` makes `import rich` raise ImportError; the entries
are removed once the library is loaded, so rich stays importable for whoever
asks for it later. Call it from the process's main thread before other
threads import anything: a thread importing click meanwhile (uvicorn needs
it) would fail.

Leaf module: imports nothing from the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

# What structlog and httpx load only when they are installed, for a console.
CONSOLE_EXTRAS = ("rich", "pygments", "click")


def load_without_console_extras(*modules: str) -> list[ModuleType]:
    """`modules` imported while CONSOLE_EXTRAS cannot be (a module already
    imported stays as it is)."""
    with unavailable(*CONSOLE_EXTRAS):
        return [importlib.import_module(module) for module in modules]


@contextmanager
def unavailable(*names: str) -> Iterator[None]:
    """Within: `import name` fails for each of `names` not loaded yet (those
    already loaded stay as they are); afterwards they can be imported again."""
    blocked = [name for name in names if name not in sys.modules]
    try:
        for name in blocked:
            sys.modules[name] = None  # type: ignore[assignment]
        yield
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
