"""The page's tests' browser and server: a real uvicorn on 127.0.0.1 in a
thread, and headless Chromium (Debian's `chromium`) driven by Playwright.
Without the browser or Playwright the browser tests are skipped, except in
CI (`CI` set), where that is a failure. The `browser` fixture is in
tests/api/conftest.py."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from litestar import Litestar

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.settings import Settings
from notarium_search.types import ChannelState, IndexState
from tests.conftest import Vault

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Locator, Page

CHROMIUM = Path(os.environ.get("NOTARIUM_CHROMIUM", "/usr/bin/chromium"))
# Bounds on waiting for the page, never a speed asserted: generous enough for a
# shared 2-core machine running at a tenth of its speed (a fresh page there
# takes seconds to load and lay out).
TIMEOUT_MS = 60_000
READY_SECONDS = 60.0


# -- serving ------------------------------------------------------------------


@contextmanager
def serving(app: Litestar) -> Iterator[str]:
    """The app on a real uvicorn in a thread, on a port the OS picked; yields the page's URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="web-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + READY_SECONDS
    while not server.started:
        assert thread.is_alive(), "the server thread died during start-up"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(READY_SECONDS)
        sock.close()


def wait_until(check: Callable[[], bool], what: str, seconds: float = READY_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def all_ready(service: Service) -> bool:
    return all(
        s.message is None and s.lexical.state == IndexState.READY and s.graph.state != ChannelState.BUILDING
        for s in service.status()
    )


@contextmanager
def started_server(settings: Settings) -> Iterator[str]:
    """A server whose spaces are indexed (background start, as in production) before it is used."""
    service = Service(settings)
    with serving(create_app(settings, service)) as url:
        wait_until(lambda: all_ready(service), "the spaces to be indexed")
        yield url


def quiet(vault: Vault, **overrides: Any) -> Settings:
    # No file watcher: nothing changes under the tests, and it saves threads on a busy machine.
    return vault.settings(watch=False, **overrides)


# -- the browser --------------------------------------------------------------


def browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install playwright)"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set NOTARIUM_CHROMIUM)"
    return None


@dataclass
class Watched:
    """A page, and what went wrong in it: script errors, CSP violations, dialogs."""

    page: Page
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.errors == [], self.errors
        assert self.dialogs == []


@contextmanager
def opened(browser: Browser, url: str, width: int = 1280, height: int = 800) -> Iterator[Watched]:
    context: BrowserContext = browser.new_context(viewport={"width": width, "height": height}, locale="fr-FR")
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    watched = Watched(page)

    def on_console(message: Any) -> None:
        if message.type == "error" and "401" not in message.text:  # a 401 is how the page learns it needs a token
            watched.errors.append(message.text)

    def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("pageerror", lambda error: watched.errors.append(str(error)))
    page.on("console", on_console)
    page.on("dialog", on_dialog)
    page.goto(url)
    try:
        yield watched
    finally:
        context.close()


def search(page: Page, query: str) -> None:
    from playwright.sync_api import expect

    page.locator("#q").fill(query)
    expect(page.locator("#search-info")).to_contain_text("résultat")


def result(page: Page, title: str) -> Locator:
    return page.locator("#results li").filter(has=page.locator(".hit-title", has_text=re.compile(f"^{title}$")))


def titles(page: Page, selector: str = "#results .hit-title") -> list[str]:
    return page.locator(selector).all_inner_texts()


def pump_until(page: Page, check: Callable[[], bool], what: str) -> None:
    """Wait while letting Playwright deliver the page's events (route and request callbacks)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(50)


def no_horizontal_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"))
