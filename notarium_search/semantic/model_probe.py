"""The model process's routes, and the supervisor's probe of them
(model_process.py): the standard library only.

The probe runs in `serve`'s supervisor, whose modules every worker inherits
when granian forks it. Made with httpx's client (semantic/shared_model.py),
it brought httpx, numpy and the embedder into the supervisor: 16 MiB of its
37 MiB of private memory (`RssAnon`, e5-small, 2 workers), a copy of which
the workers' own imports then made again (docs/benchmarks.md).
"""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any

INFO_PATH = "/info"
EMBEDDINGS_PATH = "/v1/embeddings"
# The host name is a label: the socket decides where requests go.
HOST = "model-process"
PROBE_TEXT = "probe"


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over the model process's Unix socket."""

    def __init__(self, socket_path: Path, timeout: float) -> None:
        super().__init__(HOST, timeout=timeout)
        self._socket_path = str(socket_path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def responsive(socket_path: Path, timeout: float) -> bool | None:
    """Whether the process answers within `timeout` seconds: its `/info`, and
    once its model is loaded one word embedded (its supervisor's probe: a
    process that hangs does not exit). None: nothing listens (starting, or
    gone); a process that timed out or answered an error on its model, or
    whose socket's queue is full (it listens but takes no connection: hung,
    the workers' requests waiting; httpx's probe said None there, and the
    process was never killed): False."""
    connection = _UnixConnection(socket_path, timeout)
    try:
        try:
            connection.connect()
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        _, info = _answer(connection, "GET", INFO_PATH)
        if info.get("state") != "ready":
            return True  # loading (its /info answered) or failed (said, not hung)
        status, answer = _answer(connection, "POST", EMBEDDINGS_PATH, {"input": [PROBE_TEXT]})
        return status == 200 and len(answer["data"]) == 1
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError, AttributeError):
        return False
    finally:
        connection.close()


def _answer(connection: http.client.HTTPConnection, method: str, path: str, body: object = None) -> tuple[int, Any]:
    """The status and the decoded JSON body of one request on `connection`."""
    data = None if body is None else json.dumps(body).encode()
    headers = {} if data is None else {"Content-Type": "application/json"}
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    return response.status, json.loads(response.read())
