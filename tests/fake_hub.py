"""A model hub on 127.0.0.1, answering as huggingface.co does the requests
huggingface_hub makes for `hf_hub_download` (read from its file_download.py):

- HEAD /{owner}/{name}/resolve/{revision}/{path}: X-Repo-Commit, an ETag
  (git blob SHA-1, or the SHA-256 for LFS files), and for LFS files
  X-Linked-Etag / X-Linked-Size with a 302 to the file's storage URL (on
  the hub, a CDN); 404 with X-Error-Code EntryNotFound or RevisionNotFound;
  401 with X-Error-Code GatedRepo when the repository needs a token.
- GET of the same URL, or of the storage URL, honouring `Range: bytes=N-`
  (206), which is how the library resumes a dropped transfer.

It records every request (method, path, Range, Authorization, bytes sent),
can cut a file's first transfer half way, and serves real files (the
shared packs'), so what it hands out is loaded by the real loader.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)$")
_STORAGE = re.compile(r"^/storage/(?P<sha>[0-9a-f]{64})$")


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    authorization: str | None
    sent: int = 0


@dataclass
class FakeHub:
    url: str = ""
    # (repo, path) -> bytes; a path ending in .onnx or .onnx_data, or over 10 MB, is in LFS.
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    commit: str = COMMIT  # what X-Repo-Commit says; "main" or this commit resolve
    token: str | None = None  # when set, every repository is gated behind it
    corrupt: set[str] = field(default_factory=set)  # paths whose bytes change in flight (headers stay true)
    cut: dict[str, int] = field(default_factory=dict)  # path -> bytes sent before the first GET is cut
    seen: list[Seen] = field(default_factory=list)

    def add(self, repo: str, files: dict[str, bytes]) -> None:
        self.files.update({(repo, path): data for path, data in files.items()})

    def gets(self, path: str) -> list[Seen]:
        """The GETs that carried `path`'s bytes (its resolve URL or its storage URL)."""
        storage = {f"/storage/{_sha256(d)}" for (_, p), d in self.files.items() if p == path}
        return [s for s in self.seen if s.method == "GET" and (s.path.endswith(f"/{path}") or s.path in storage)]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


def _in_lfs(path: str, data: bytes) -> bool:
    return path.endswith((".onnx", ".onnx_data")) or len(data) > 10_000_000


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            seen = Seen(self.command, self.path, self.headers.get("Range"), self.headers.get("Authorization"))
            hub.seen.append(seen)
            if hub.token is not None and seen.authorization != f"Bearer {hub.token}":
                return self._error(401, "GatedRepo")
            storage = _STORAGE.match(self.path)
            if storage:
                found = [(p, d) for (_, p), d in hub.files.items() if _sha256(d) == storage["sha"]]
                if not found:
                    return self._error(404, "EntryNotFound")
                return self._send(*found[0], seen, body=body, storage=True)
            resolve = _RESOLVE.match(self.path)
            if resolve is None or not any(repo == resolve["repo"] for repo, _ in hub.files):
                return self._error(404 if hub.token is None else 401, "RepoNotFound")
            if resolve["revision"] not in ("main", hub.commit):
                return self._error(404, "RevisionNotFound")
            data = hub.files.get((resolve["repo"], resolve["path"]))
            if data is None:
                return self._error(404, "EntryNotFound")
            if _in_lfs(resolve["path"], data):
                # The hub answers an LFS file with a redirect to its storage, stating
                # the file's SHA-256 and size in X-Linked-* headers.
                self.send_response(302)
                self.send_header("Location", f"{hub.url}/storage/{_sha256(data)}")
                self.send_header("X-Repo-Commit", hub.commit)
                self.send_header("X-Linked-Etag", f'"{_sha256(data)}"')
                self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("ETag", f'"{_git_sha1(data)}"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._send(resolve["path"], data, seen, body=body)

        def _send(self, path: str, data: bytes, seen: Seen, *, body: bool, storage: bool = False) -> None:
            start = 0
            if seen.range and (match := re.fullmatch(r"bytes=(\d+)-", seen.range)):
                start = int(match.group(1))
            part = data[start:]
            self.send_response(206 if start else 200)
            self.send_header("X-Repo-Commit", hub.commit)
            self.send_header("ETag", f'"{_sha256(data) if _in_lfs(path, data) else _git_sha1(data)}"')
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(part)))
            if storage:  # as the hub's storage names the file (the progress bar shows it)
                self.send_header("Content-Disposition", f'inline; filename="{path.rsplit("/", 1)[-1]}";')
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if not body:
                return
            if path in hub.corrupt:
                part = bytes([part[0] ^ 0xFF]) + part[1:]
            cut = hub.cut.pop(path, None)
            if cut is not None:
                part = part[:cut]  # then the connection closes: fewer bytes than Content-Length
                self.close_connection = True
            self.wfile.write(part)
            seen.sent = len(part)

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


@contextmanager
def serving(hub: FakeHub | None = None) -> Iterator[FakeHub]:
    """The hub listening on 127.0.0.1 (a free port) until the block ends."""
    hub = hub or FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
