"""The browser, shared by the page's tests (tests/api/browser.py has the rest)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.api.browser import CHROMIUM, TIMEOUT_MS, browser_missing

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    missing = browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as playwright:
        # Playwright's own browser download is never used: Debian's Chromium, headless.
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--disable-dev-shm-usage"])
        yield launched
        launched.close()
