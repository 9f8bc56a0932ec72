"""The /mcp route's own reading of a request body (mcp/route.py), over a real
HTTP server: it reads the body before the SDK to check the request's id, so it
must keep the SDK's size bound itself (a 40 MB body of `{},` grew a worker by
1.1 GB: the bound was checked only after the whole body was read and parsed)."""

from __future__ import annotations

import select
import socket

from notarium_search.api.app import create_app
from notarium_search.mcp import route
from tests.api.browser import quiet, serving
from tests.conftest import Vault

LIMIT = route.BODY_MAX_BYTES  # the MCP SDK's default bound (DEFAULT_MAX_REQUEST_BODY_SIZE): checked below
CHUNK = 64 * 1024
SENT_AT_MOST = 100 * 1024 * 1024


def test_a_body_over_the_bound_is_refused_without_being_read_whole(vault: Vault):
    vault.write("a.md", "texte\n")
    service = vault.service(watch=False)
    with serving(create_app(quiet(vault), service)) as url:
        host, port = url.removeprefix("http://").rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as raw:  # chunked: no length said
            raw.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            chunk = b"{}," * (CHUNK // 3)
            sent, answer = 0, b""
            while sent < SENT_AT_MOST and not answer:
                try:
                    raw.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                except OSError:  # refused and closed while we were sending
                    break
                sent += len(chunk)
                if select.select([raw], [], [], 0)[0]:
                    answer = raw.recv(4096)
            answer = answer or raw.recv(4096)
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            # Answered near the bound (socket buffers aside), not after the whole body.
            assert sent < SENT_AT_MOST // 4

        with socket.create_connection((host, int(port)), timeout=60) as raw:  # a length over the bound, no body
            raw.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000000\r\n\r\n"
            )
            assert raw.recv(4096).startswith(b"HTTP/1.1 413")  # at once: no wait for the body deadline


def test_the_body_bound_is_the_sdks(vault: Vault):
    from notarium_search.mcp.server import session_manager

    assert session_manager(vault.service(), vault.settings()).max_request_body_size == route.BODY_MAX_BYTES
