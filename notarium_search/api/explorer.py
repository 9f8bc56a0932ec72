"""The API explorer at `/schema`: Swagger UI, served from the installed
packages, so that it works with no internet.

Litestar's stock explorers load their scripts, styles, fonts and favicon from
CDNs (Redoc at `/schema` by default): offline, a blank page. Here one explorer,
Swagger UI (it reads OpenAPI 3.1, which Litestar writes, and can send requests:
"Try it out"), is rendered by our own render plugin, whose page has no inline
script or style and names no other host; its files come from the
`openapi-ui-bundles` package, our start-up script from this module.

The explorer's page follows the token rule of the API (`/schema` and
`/schema/openapi.json` describe the API), while its files hold no data and are
public, like the Spotlight page's files under `/web/`. Every answer under
`/schema` carries a strict Content-Security-Policy: only the service's own
scripts, styles and API, plus the `data:` images that Swagger UI's style sheet
embeds (its icons).
"""

from __future__ import annotations

from functools import cache
from html import escape
from importlib.metadata import version
from typing import Any

import openapi_ui_bundles
from litestar import Request, Response, Router, get
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin, YamlRenderPlugin

from notarium_search.api.access import PUBLIC
from notarium_search.api.web import content_security_policy, page_headers

SCHEMA_PATH = "/schema"
# The page's paths under /schema: its root, and Litestar's usual path for Swagger UI.
EXPLORER_PATHS = ("/", "/swagger")

# The page's policy, plus the data: images Swagger UI's style sheet draws its
# icons with (images cannot run anything); connect-src 'self' keeps "Try it
# out" on this service.
CONTENT_SECURITY_POLICY = content_security_policy(img_src="'self' data:")
HEADERS = page_headers(CONTENT_SECURITY_POLICY)

# Swagger UI's files, at a path naming the version of the package that ships
# them: a new version is a new address, so a browser may keep them for good.
VENDOR_VERSION = version("openapi-ui-bundles")
VENDOR_PATH = f"/swagger-ui/{VENDOR_VERSION}"
VENDOR_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
}
VENDOR_CACHE = "public, max-age=31536000, immutable"
# Our start-up script: it changes with this service, so it is revalidated (as /web/'s files).
START_SCRIPT = "explorer.js"
START_JS = b"""\
// Starts Swagger UI on this service's OpenAPI document (its address is in the page).
const root = document.getElementById('swagger-ui');
window.ui = SwaggerUIBundle({
  url: root.dataset.specUrl,
  domNode: root,
  deepLinking: true,
  // No badge from the public validator: nothing is sent elsewhere.
  validatorUrl: null,
});
"""
FAVICON = "/web/favicon.svg"  # the Spotlight page's icon (public, as its other files)


@cache
def _vendor(name: str) -> bytes:
    return (openapi_ui_bundles.swagger_ui.static_path / name).read_bytes()


@get(
    [f"{VENDOR_PATH}/{name}" for name in VENDOR_ASSETS],
    sync_to_thread=False,
    include_in_schema=False,
    opt={PUBLIC: True},
)
def vendor_asset(request: Request[Any, Any, Any]) -> Response[bytes]:
    """A file of Swagger UI, as its package ships it."""
    name = request.url.path.rpartition("/")[2]
    return Response(_vendor(name), media_type=VENDOR_ASSETS[name], headers={**HEADERS, "Cache-Control": VENDOR_CACHE})


@get(f"/{START_SCRIPT}", sync_to_thread=False, include_in_schema=False, opt={PUBLIC: True})
def start_script() -> Response[bytes]:
    """The script that starts Swagger UI on the page."""
    return Response(START_JS, media_type="text/javascript", headers=HEADERS)


class OfflineSwagger(OpenAPIRenderPlugin):
    """Swagger UI from this service's own files: no inline script or style, no other host."""

    def __init__(self) -> None:
        super().__init__(path=list(EXPLORER_PATHS), favicon="", style="")

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = escape(str(openapi_schema["info"]["title"]))
        spec_url = escape(self.get_openapi_json_route(request))
        vendor = f"{SCHEMA_PATH}{VENDOR_PATH}"
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}: API explorer</title>
<link rel="icon" type="image/svg+xml" href="{FAVICON}">
<link rel="stylesheet" href="{vendor}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-spec-url="{spec_url}"></div>
<script src="{vendor}/swagger-ui-bundle.js"></script>
<script src="{SCHEMA_PATH}/{START_SCRIPT}"></script>
</body>
</html>
""".encode()

    def receive_router(self, router: Router) -> None:
        router.register(vendor_asset)
        router.register(start_script)


def openapi_config(title: str, version: str) -> OpenAPIConfig:
    """`/schema`: the explorer; `/schema/openapi.json` (and `.yaml`): the document.
    Litestar's other explorers (`/schema/redoc`, `/elements`, `/rapidoc`) are not
    served (404): each would load its code from a CDN."""
    router = Router(SCHEMA_PATH, route_handlers=[], include_in_schema=False, response_headers=HEADERS)
    return OpenAPIConfig(
        title=title,
        version=version,
        use_handler_docstrings=True,
        openapi_router=router,
        render_plugins=[OfflineSwagger(), JsonRenderPlugin(), YamlRenderPlugin()],
    )
