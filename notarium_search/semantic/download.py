"""Fetch an ONNX embedding model from a model hub into a local pack folder.

Only `notarium-search models download` calls this: the service never
downloads anything by itself (docs/models.md). The files come through
`huggingface_hub` (progress bars, retries that resume a dropped transfer
with a Range request, `HF_TOKEN` for gated or private repositories,
`HF_ENDPOINT` for a mirror), each checked against the checksum the hub
states for it. The pack is assembled in a staging folder beside the target
and moved into place whole, with a `model.json` written from a preset
(semantic/presets.py) or from what the repository documents.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import mmap
import os
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from notarium_search.semantic.embedding import MODEL_FILE, TOKENIZER_FILE
from notarium_search.semantic.hubconfig import HUB_CONFIG_FILES, UnknownField, hub_model_json
from notarium_search.semantic.model_config import CONFIG_FILE
from notarium_search.semantic.presets import Preset


class ModelDownloadError(RuntimeError):
    """A model could not be downloaded; `str(exc)` says why and what to do."""


HUB_URL = "https://huggingface.co"
# Tried in order: Xenova-style exports keep the graph under onnx/, others at the root.
ONNX_PATHS = ("onnx/model.onnx", "model.onnx")
# Graphs over 2 GB (bge-m3) keep their weights in files beside the graph that
# it names in external-data entries: {key: "location", value: NAME}, i.e.
# field 1 = "location" (tag 0x0a, length 8) then field 2 (tag 0x12, length).
_EXTERNAL_DATA_RE = re.compile(rb"\x0a\x08location\x12([\x01-\x7f])")
_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_GIT_SHA1_RE = re.compile(r"^[0-9a-f]{40}$")
_HASH_CHUNK_BYTES = 1 << 20
# Where huggingface_hub writes inside the staging folder (its local-dir layout).
_HUB_DIR = ".hub"
_T = TypeVar("_T")


def download_preset(
    preset: Preset,
    target: Path,
    timeout: float = 30,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    hub_url: str | None = None,
) -> Path:
    """Fetch a named preset's pack: its file, pooling, prefixes, length and
    margin from semantic/presets.py; `revision`/`sha256` given here replace
    the preset's pins (a newer commit, or a mirror serving another build)."""
    given: dict[str, object] = {
        "name": preset.name,
        "dim": preset.dim,
        "pooling": preset.pooling,
        "max_tokens": preset.max_tokens,
        "query_prefix": preset.query_prefix,
        "passage_prefix": preset.passage_prefix,
        "relevance_margin": preset.relevance_margin,
    }
    return _download(
        preset.repo_id,
        Path(target),
        timeout,
        given,
        graph_paths=(preset.onnx_file,),
        revision=revision or preset.revision,
        sha256=sha256 if sha256 is not None else preset.sha256,
        hub_url=hub_url,
        read_configs=False,
    )


def download_model(
    repo_id: str,
    target: Path,
    timeout: float = 30,
    *,
    dim: int | None = None,
    pooling: str | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    onnx_file: str | None = None,
    revision: str = "main",
    sha256: str | None = None,
    hub_url: str | None = None,
) -> Path:
    """Fetch an ONNX export from the Hugging Face hub into the pack `target`.

    Downloads the graph (`onnx_file`, else `onnx/model.onnx` or `model.onnx`)
    with the external-data files it names, `tokenizer.json` (beside the graph,
    else at the root), and writes `model.json` from the repository's
    config.json and sentence-transformers files; `dim`/`pooling`/prefixes
    given here win, and are required when the repository does not say.
    Every file is checked against the hub's checksum, the graph also against
    `sha256` when given. Everything lands in a temporary directory beside
    `target`, renamed into place only when complete. The hub is `hub_url`,
    else $HF_ENDPOINT, else huggingface.co. Only ever called explicitly (the
    `models download` command); raises ModelDownloadError.
    """
    given = {"dim": dim, "pooling": pooling, "query_prefix": query_prefix, "passage_prefix": passage_prefix}
    graph_paths = (onnx_file,) if onnx_file else ONNX_PATHS
    return _download(repo_id, Path(target), timeout, given, graph_paths, revision, sha256, hub_url, read_configs=True)


def hub_endpoint(hub_url: str | None = None) -> str:
    """The hub to ask: `hub_url`, else $HF_ENDPOINT (read now: huggingface_hub
    reads it once, at import), else huggingface.co. Plain http only on this
    machine: a token must not cross a network in clear."""
    endpoint = (hub_url or os.environ.get("HF_ENDPOINT") or HUB_URL).rstrip("/")
    parsed = urllib.parse.urlsplit(endpoint)
    if parsed.scheme == "https" or (parsed.scheme == "http" and _is_loopback(parsed.hostname or "")):
        return endpoint
    raise ModelDownloadError(f"hub URL must use https (http only on this machine), got {endpoint!r}")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _download(
    repo_id: str,
    target: Path,
    timeout: float,
    given: Mapping[str, object],
    graph_paths: Sequence[str],
    revision: str,
    sha256: str | None,
    hub_url: str | None,
    *,
    read_configs: bool,
) -> Path:
    if not _REPO_ID_RE.match(repo_id):
        raise ModelDownloadError(f"{repo_id!r} is not a hub repository id (owner/name)")
    if sha256 is not None and not _SHA256_RE.match(sha256.lower()):
        raise ModelDownloadError(f"{sha256!r} is not a SHA-256 (64 hexadecimal digits)")
    endpoint = hub_endpoint(hub_url)
    if target.exists():
        raise ModelDownloadError(f"{target} already exists; remove it or choose another directory")
    hub = _Hub(endpoint, repo_id, revision, timeout)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _fetch_files(hub, staging, graph_paths, sha256.lower() if sha256 else None)
        documents = {name: hub.json(name, staging / _HUB_DIR) for name in HUB_CONFIG_FILES} if read_configs else {}
        try:
            config = hub_model_json(repo_id, documents, given)
        except UnknownField as exc:
            raise ModelDownloadError(f"{repo_id} does not say its {exc}: pass it explicitly (--{exc})") from exc
        config["source"] = f"{endpoint}/{repo_id} (revision {hub.commit or revision})"
        shutil.rmtree(staging / _HUB_DIR, ignore_errors=True)
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        # mkdtemp makes its folder 0700: a pack moved into place with it could be
        # read only by the user who downloaded it (root, in an image build), not by
        # the service's user. A folder made by mkdir gets what the umask allows.
        staging.chmod(0o777 & ~_umask())
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


@dataclass(slots=True)
class _Hub:
    """One repository at one revision, through huggingface_hub. The first
    answer names the commit; every later file is asked for at that commit,
    so a branch moving mid-download cannot mix two versions in one pack."""

    endpoint: str
    repo_id: str
    revision: str
    timeout: float
    commit: str | None = field(default=None)

    def url(self, path: str) -> str:
        return f"{self.endpoint}/{self.repo_id}/resolve/{self.commit or self.revision}/{path}"

    def metadata(self, path: str) -> Any:
        """The hub's HfFileMetadata for `path` (a HEAD request), or None when
        the repository has no such file. No retry: offline fails at once."""
        from huggingface_hub import get_hf_file_metadata
        from huggingface_hub.errors import EntryNotFoundError

        try:
            found = self._call(lambda: get_hf_file_metadata(self.url(path), timeout=self.timeout))
        except _Missing:
            return None
        except EntryNotFoundError:
            return None
        if self.commit is None:
            self.commit = found.commit_hash
        return found

    def save(self, path: str, folder: Path, sha256: str | None = None) -> Path | None:
        """Download `path` into `folder` (huggingface_hub's local-dir layout),
        checked against the hub's checksum and `sha256`; None when missing."""
        from huggingface_hub import hf_hub_download

        metadata = self.metadata(path)
        if metadata is None:
            return None
        local = self._call(
            lambda: hf_hub_download(
                self.repo_id,
                path,
                revision=self.commit or self.revision,
                endpoint=self.endpoint,
                local_dir=folder,
                etag_timeout=self.timeout,
            )
        )
        _verify(Path(local), path, metadata.etag, sha256)
        return Path(local)

    def json(self, path: str, folder: Path) -> dict[str, Any]:
        local = self.save(path, folder)
        if local is None:
            return {}
        try:
            data = json.loads(local.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelDownloadError(f"{self.url(path)} is not valid JSON: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def _call(self, action: Callable[[], _T]) -> _T:
        """Run a huggingface_hub call, its failures said as one sentence each."""
        import httpx2
        from huggingface_hub import errors

        where = f"{self.repo_id} on {self.endpoint}"
        try:
            return action()
        except (httpx2.TransportError, errors.OfflineModeIsEnabled) as exc:
            raise ModelDownloadError(
                f"cannot reach the model hub {self.endpoint}: {_reason(exc)}"
                " (offline? copy a model pack by hand: docs/models.md)"
            ) from exc
        except errors.GatedRepoError as exc:
            raise ModelDownloadError(
                f"{where} is gated: accept its terms on the hub, then set HF_TOKEN to a token of that account"
            ) from exc
        except errors.RepositoryNotFoundError as exc:
            raise ModelDownloadError(f"{where} does not exist, or is private (then set HF_TOKEN)") from exc
        except errors.RevisionNotFoundError as exc:
            raise ModelDownloadError(f"{where} has no revision {self.revision!r}") from exc
        except errors.RemoteEntryNotFoundError as exc:
            raise _Missing from exc
        except errors.HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else "?"
            raise ModelDownloadError(f"{where}: the hub answered HTTP {status}") from exc
        except OSError as exc:  # FileMetadataError (not a hub), a size mismatch, a full disk
            raise ModelDownloadError(f"download from {where} failed: {_reason(exc)}") from exc


class _Missing(Exception):
    """The repository has no such file (HTTP 404, X-Error-Code: EntryNotFound)."""


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _verify(local: Path, path: str, etag: str | None, sha256: str | None) -> None:
    """The hub's ETag of a file is its SHA-256 when stored in LFS (the ONNX
    graphs), its git blob SHA-1 otherwise; a file matching neither what the
    hub states nor the pinned `sha256` is refused, and the pack with it."""
    digest = hashlib.sha256()
    blob = hashlib.sha1(f"blob {local.stat().st_size}\0".encode(), usedforsecurity=False)
    with local.open("rb") as stream:
        while chunk := stream.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
            blob.update(chunk)
    found = digest.hexdigest()
    if sha256 is not None and found != sha256:
        raise ModelDownloadError(f"{path} has SHA-256 {found}, not the expected {sha256}: refused, nothing kept")
    stated = (etag or "").lower()
    if _SHA256_RE.match(stated) and found != stated:
        raise ModelDownloadError(f"{path} has SHA-256 {found}, not the hub's {stated}: refused, nothing kept")
    if _GIT_SHA1_RE.match(stated) and blob.hexdigest() != stated:
        raise ModelDownloadError(f"{path} has git SHA-1 {blob.hexdigest()}, not the hub's {stated}: refused")


def _fetch_files(hub: _Hub, staging: Path, graph_paths: Sequence[str], sha256: str | None) -> None:
    downloads = staging / _HUB_DIR
    graph = None
    for path in graph_paths:
        saved = hub.save(path, downloads, sha256)
        if saved is not None:
            graph = path
            saved.rename(staging / MODEL_FILE)
            break
    if graph is None:
        raise ModelDownloadError(f"{hub.repo_id} has no ONNX export ({' or '.join(graph_paths)})")
    folder = graph.rpartition("/")[0]
    for name in sorted(_external_data_names(staging / MODEL_FILE)):
        saved = hub.save(_join(folder, name), downloads)
        if saved is None:
            raise ModelDownloadError(f"{hub.repo_id}: {graph} needs {_join(folder, name)}, which is missing")
        saved.rename(staging / name)
    for path in dict.fromkeys((_join(folder, TOKENIZER_FILE), TOKENIZER_FILE)):
        saved = hub.save(path, downloads)
        if saved is not None:
            saved.rename(staging / TOKENIZER_FILE)
            return
    raise ModelDownloadError(f"{hub.repo_id} has no {TOKENIZER_FILE}")


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _external_data_names(graph: Path) -> set[str]:
    """File names the ONNX graph loads its weights from (empty for most models)."""
    if graph.stat().st_size == 0:
        return set()
    names: set[str] = set()
    with graph.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for match in _EXTERNAL_DATA_RE.finditer(data):
            names.add(data[match.end() : match.end() + match.group(1)[0]].decode("utf-8", "replace"))
    # Plain names beside the graph only: never a path that could leave the pack.
    return {name for name in names if name == Path(name).name and not name.startswith(".")}
