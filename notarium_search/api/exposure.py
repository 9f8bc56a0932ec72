"""Who may address the service at all: the name a request is sent to (its
`Host`), and for requests that change something, the page it comes from
(its `Origin`). Wraps the whole application, so that it runs before anything
answers: CORS preflights, the page and its files, `/schema`, `/mcp`.
`/healthz` is left open (it holds nothing, and health checks use odd names).

DNS rebinding: with no token (the default) a page on any site can point its
own name at 127.0.0.1 and read every note through the user's browser; its
requests then carry `Host: attacker.example`. Only the loopback names, the
bound address and `allowed_hosts` are accepted, matched whole (case and a
trailing dot aside, any port): `localhost.attacker.example` is not `localhost`.

Cross-site writes: a plain form on another site can POST here (a "simple"
request needs no preflight). A request that carries an `Origin` (or, without
one, a `Referer`) must come from the service's own origin or from one of
`cors_origins`; a request with neither is not a browser's cross-site request
(curl, an MCP client) and passes.

A request with two `Host` headers, none or one that is not a host name is
refused (400 `invalid_host`, RFC 9112 3.2): of two, the check read the
first, a layer behind it could read the other. An
absolute-form target (`GET http://evil.example/x HTTP/1.1`) names the host
the request is for, and RFC 9112 3.2.2 makes it win over `Host`; granian
(2.8) keeps only its path in the ASGI scope, and puts its host into `Host`
only when the request has none: then it is checked like any `Host`. With a
`Host` too, the target's host is out of reach of any ASGI application (the
request is served as addressed to its `Host`).

Each refusal is logged once a minute per kind (api/access_log.py, `refused`).

Litestar's own AllowedHostsMiddleware is not used: it matches the raw header,
port included and case-sensitively, cannot accept any port (a Docker port
mapping changes it), answers with a body of its own, and runs after CORS.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from notarium_search.api.access_log import refused
from notarium_search.api.asgi import App, Receive, Scope, Send
from notarium_search.api.errors import send_error
from notarium_search.settings import Settings, host_pattern

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "[::]", "")  # noqa: S104 - names of the wildcard bind, not a bind
OPEN_PATHS = frozenset({"/healthz"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
SHOWN_CHARS = 100  # of a refused name, in the error's detail


class HostPolicy:
    """The names requests may be addressed to."""

    def __init__(self, settings: Settings) -> None:
        names = {*LOOPBACK_NAMES, *settings.allowed_hosts}
        if settings.host not in WILDCARD_ADDRESSES:
            names.add(host_pattern(settings.host))
        self.any = "*" in names
        self.exact = frozenset(n for n in names if not n.startswith("*"))
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))  # "*.example.org" -> ".example.org"

    def allows(self, name: str | None) -> bool:
        if self.any:
            return True
        if not name:
            return False
        return name in self.exact or name.endswith(self.suffixes)


def host_name(header: str | None) -> str | None:
    """The name of a Host header: lower case, without port or trailing dot;
    None when there is none or it is malformed."""
    if header is None:
        return None
    text = header.strip().lower()
    if text.startswith("["):  # [v6] or [v6]:port
        end = text.find("]")
        if end < 0 or (end + 1 < len(text) and not text[end + 1 :].startswith(":")):
            return None
        return text[: end + 1]
    name, _, port = text.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of an Origin or Referer, normalised (lower
    case, default port dropped); None when it has none ("null", about:blank)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
    if not scheme or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    shown_port = "" if port is None or str(port) == DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown_port}"


class Exposure:
    """The ASGI wrapper that applies both checks."""

    def __init__(self, app: App, settings: Settings) -> None:
        self.app = app
        self.hosts = HostPolicy(settings)
        self.origins = frozenset(o for o in (origin_of(c) for c in settings.cors_origins) if o)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers, hosts = _headers(scope)
        raw_host = headers.get("host")
        name = host_name(raw_host)
        if hosts > 1 or name is None:
            detail = f"{_host_problem(hosts, raw_host)}: a request names its host in one Host header (RFC 9112, 3.2)"
            await _refuse(scope, send, 400, "invalid_host", detail)
        elif not self.hosts.allows(name):
            shown = name[:SHOWN_CHARS]
            detail = (
                f"this service does not answer to the name {shown!r}: add it to NOTARIUM_ALLOWED_HOSTS"
                " if it is yours (docs/operations.md, Security model)"
            )
            await _refuse(scope, send, 421, "host_not_allowed", detail)
        elif scope["type"] == "http" and scope["method"] in UNSAFE_METHODS and not self._same_site(scope, headers):
            detail = (
                "cross-site request refused: the page that sent it is neither this service nor one of"
                " NOTARIUM_CORS_ORIGINS"
            )
            await _refuse(scope, send, 403, "cross_site_refused", detail)
        else:
            await self.app(scope, receive, send)

    def _same_site(self, scope: Scope, headers: dict[str, str]) -> bool:
        sent = headers.get("origin")
        if sent is None:
            sent = headers.get("referer")
            if sent is None:
                return True  # no browser's cross-site request: curl, scripts, MCP clients
        origin = origin_of(sent)
        if origin is None:  # "null": a sandboxed frame, a file:// page, a data: URL
            return False
        own = origin_of(f"{scope.get('scheme', 'http')}://{headers.get('host', '')}")
        return origin == own or origin in self.origins


def _host_problem(hosts: int, raw_host: str | None) -> str:
    if hosts > 1:
        return f"the request has {hosts} Host headers"
    if not raw_host or not raw_host.strip():  # granian gives an empty Host to a request that has none
        return "the request has no Host header, or an empty one"
    return f"the Host header {raw_host[:SHOWN_CHARS]!r} is not a host name"


async def _refuse(scope: Scope, send: Send, status: int, code: str, detail: str) -> None:
    refused(scope, code)
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # policy violation
    else:
        await send_error(send, status, code, detail)


def _headers(scope: Scope) -> tuple[dict[str, str], int]:
    """The first value of each header, by lower-case name (latin-1, as HTTP),
    and how many Host headers there are."""
    found: dict[str, str] = {}
    hosts = 0
    for key, value in scope.get("headers", ()):
        name = key.decode("latin-1").lower()
        hosts += name == "host"
        found.setdefault(name, value.decode("latin-1"))
    return found, hosts
