"""The Spotlight web page: `GET /` and its static assets under `/web/`.

Plain files shipped in `notarium_search/web` (no build step, nothing fetched
from elsewhere). They hold no data, so they are served without a token; the
page asks the API for everything, with the token the user pasted when one is
needed. A strict Content-Security-Policy allows only our own script, styles
and API: a title or snippet that slipped through as markup still could not
run anything.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Any

from litestar import Request, Response, get

from notarium_search.api.access import PUBLIC


def content_security_policy(img_src: str = "'self'") -> str:
    """Only the service's own scripts, styles, images and API; no frames, no
    forms, no <base>. The API explorer (api/explorer.py) also allows the
    data: images its style sheet embeds."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src {img_src}",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


def page_headers(policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        # Revalidate every time: a new version of the service must never run an old script.
        "Cache-Control": "no-cache",
    }


CONTENT_SECURITY_POLICY = content_security_policy()
HEADERS = page_headers(CONTENT_SECURITY_POLICY)
# The page's files and their types (Litestar adds "; charset=utf-8" to text types).
ASSETS = {
    "app.js": "text/javascript",
    "api.js": "text/javascript",
    "context.js": "text/javascript",
    "search.js": "text/javascript",
    "feed.js": "text/javascript",
    "note.js": "text/javascript",
    "status.js": "text/javascript",
    "strings.js": "text/javascript",
    "keys.js": "text/javascript",
    "filters.js": "text/javascript",
    "recent.js": "text/javascript",
    "preview.js": "text/javascript",
    "actions.js": "text/javascript",
    "app.css": "text/css",
    "note.css": "text/css",
    "favicon.svg": "image/svg+xml",
}
PAGE = "index.html"


@cache
def _read(name: str) -> bytes:
    return (files("notarium_search") / "web" / name).read_bytes()


@get("/", sync_to_thread=False, include_in_schema=False, opt={PUBLIC: True})
def page() -> Response[bytes]:
    """The Spotlight page (search, feed, note view)."""
    return Response(_read(PAGE), media_type="text/html", headers=HEADERS)


# One fixed route per file rather than a path parameter: no request can name
# anything else, and each route is a plain path (docs/api.md lists them).
@get([f"/web/{name}" for name in ASSETS], sync_to_thread=False, include_in_schema=False, opt={PUBLIC: True})
def asset(request: Request[Any, Any, Any]) -> Response[bytes]:
    """A script, style sheet or icon of the page."""
    name = request.url.path.rpartition("/")[2]
    return Response(_read(name), media_type=ASSETS[name], headers=HEADERS)


WEB_HANDLERS = (page, asset)
