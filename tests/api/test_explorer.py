"""The API explorer at `/schema` works with no internet: over plain HTTP, its
page names no other host and its files come from the service with their types,
cache headers and a strict policy; in headless Chromium with every request to
another host blocked (and recorded), it shows the API's operations and can call
one, with no script error and no policy violation. Before, `/schema` was
Litestar's Redoc page, loaded from a CDN with Google Fonts: blank offline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.api.explorer import CONTENT_SECURITY_POLICY, VENDOR_ASSETS, VENDOR_PATH
from tests.api.browser import opened, pump_until, quiet, started_server  # the page's server and watched page
from tests.api.test_web import TOKEN
from tests.conftest import Vault

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Route

EXPLORER = ("/schema", "/schema/swagger")
ASSETS = [f"/schema{VENDOR_PATH}/{name}" for name in VENDOR_ASSETS]
START = "/schema/explorer.js"
# Violations of the page's policy, as the page sees them (set before any of its scripts runs).
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- plain HTTP ---------------------------------------------------------------------


def test_the_explorer_page_names_no_other_host_and_its_files_are_served_from_the_package(vault: Vault):
    vault.write("a.md", "# Alpha\n", space="carnet")
    with TestClient(create_app(quiet(vault, api_token=TOKEN), start_indexing=False)) as client:
        for path in EXPLORER:
            # The page describes the API: it keeps the API's token rule, as /schema/openapi.json does.
            assert client.get(path).status_code == 401, path
            page = client.get(path, headers=bearer(TOKEN))
            assert page.status_code == 200, path
            assert page.headers["content-type"] == "text/html; charset=utf-8"
            assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert page.headers["x-content-type-options"] == "nosniff"
            assert not re.search(r"https?:", page.text), "the explorer names another host"
            assert not re.search(r"(src|href)=\"//", page.text)
            # No inline script or style: the policy can stay 'self'.
            scripts = re.findall(r"<script\b[^>]*>", page.text)
            assert scripts == [f'<script src="/schema{VENDOR_PATH}/swagger-ui-bundle.js">', f'<script src="{START}">']
            assert "<style" not in page.text
            assert " style=" not in page.text
            assert 'data-spec-url="/schema/openapi.json"' in page.text
        policy = CONTENT_SECURITY_POLICY
        assert "default-src 'none'" in policy
        assert "script-src 'self';" in policy
        assert "style-src 'self';" in policy
        assert "unsafe" not in policy
        assert "connect-src 'self';" in policy
        # The files hold no data: served without a token, as the Spotlight page's files.
        immutable = "public, max-age=31536000, immutable"
        expected = {
            f"/schema{VENDOR_PATH}/swagger-ui-bundle.js": ("text/javascript; charset=utf-8", immutable),
            f"/schema{VENDOR_PATH}/swagger-ui.css": ("text/css; charset=utf-8", immutable),
            START: ("text/javascript; charset=utf-8", "no-cache"),
        }
        assert set(expected) == {*ASSETS, START}
        for path, (media_type, cache) in expected.items():
            served = client.get(path)
            assert served.status_code == 200, path
            assert (served.headers["content-type"], served.headers["cache-control"]) == (media_type, cache), path
            assert served.headers["content-security-policy"] == policy
            assert served.headers["x-content-type-options"] == "nosniff"
        assert b"SwaggerUIBundle" in client.get(ASSETS[0]).content
        assert "SwaggerUIBundle" in client.get(START).text
        assert client.get("/schema/openapi.json").status_code == 401
        assert client.get("/schema/openapi.json", headers=bearer(TOKEN)).json()["openapi"].startswith("3.1")
        assert client.get("/schema/openapi.yaml", headers=bearer(TOKEN)).status_code == 200
        # Litestar's other explorers load their code from CDNs: not served, rather than blank offline.
        for gone in ("/schema/redoc", "/schema/elements", "/schema/rapidoc"):
            assert client.get(gone, headers=bearer(TOKEN)).status_code == 404, gone
        for other in (f"/schema{VENDOR_PATH}/index.html", f"/schema{VENDOR_PATH}/../explorer.py", "/schema/x.js"):
            assert client.get(other, headers=bearer(TOKEN)).status_code == 404, other


# -- in the browser, offline -----------------------------------------------------------


@pytest.mark.slow
def test_the_explorer_shows_and_calls_the_api_with_the_internet_blocked(
    browser: Browser,
    tmp_path: Path,
):
    from playwright.sync_api import expect

    vault = Vault(tmp_path)
    vault.write("zettel/protocoles.md", "---\ntitle: Protocoles ouverts\n---\nHTTP, SMTP, CalDAV.\n", space="carnet")
    with started_server(quiet(vault)) as url:
        own_host = urlsplit(url).netloc
        requested: list[str] = []
        elsewhere: list[str] = []

        def only_the_service(route: Route) -> None:
            if urlsplit(route.request.url).netloc == own_host:
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort("internetdisconnected")

        # A blank page first (no request), then the watch, then the explorer.
        with opened(browser, "about:blank") as watched:
            page = watched.page
            page.context.add_init_script(RECORD_VIOLATIONS)
            page.context.route("**/*", only_the_service)
            page.on("request", lambda request: requested.append(request.url))
            page.goto(url + "schema")  # returns once the page and its files are loaded
            assert elsewhere == []  # its files: none from another host (Redoc's page asked a CDN)

            search = page.locator(".opblock").filter(has=page.locator('[data-path="/spaces/{space}/search"]'))
            expect(search).to_be_visible()
            expect(page.locator('[data-path="/spaces/{space}/related/{note_path}"]')).to_be_visible()
            # Interactive: open the operation, try it out, and read the answer of this service.
            search.locator(".opblock-summary").click()
            search.get_by_role("button", name="Try it out").click()
            search.locator('tr[data-param-name="space"] input').fill("carnet")
            search.locator('tr[data-param-name="q"] input').fill("protocoles")
            search.get_by_role("button", name="Execute").click()
            expect(search.locator(".live-responses-table tr.response .response-col_status").first).to_have_text("200")
            expect(search.locator(".live-responses-table .highlight-code").first).to_contain_text("Protocoles ouverts")
            pump_until(page, lambda: any("/spaces/carnet/search" in r for r in requested), "the search request")

            assert elsewhere == []  # nothing even tried to leave the service
            assert [r for r in requested if not r.startswith(url)] == []
            assert any(r.endswith("/swagger-ui-bundle.js") for r in requested)
            assert page.evaluate("window.__violations") == []
            watched.assert_clean()
