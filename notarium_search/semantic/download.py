"""Fetch an ONNX embedding model from a model hub into a local pack folder.

Only `notarium-search models download` calls this: the service never
downloads anything by itself (docs/models.md). The pack is assembled in a
staging folder and moved into place whole, with a `model.json` written from
what the repository documents (width, pooling, maximum length, prefixes).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from notarium_search.semantic.embedding import (
    CONFIG_FILE,
    DEFAULT_MAX_TOKENS,
    MODEL_FILE,
    REQUIRED_CONFIG_FIELDS,
    TOKENIZER_FILE,
)


class ModelDownloadError(RuntimeError):
    """A model could not be downloaded; `str(exc)` says why and what to do."""


HUB_URL = "https://huggingface.co"
# Tried in order: Xenova-style exports keep the graph under onnx/, others at the root.
ONNX_PATHS = ("onnx/model.onnx", "model.onnx")
# Graphs over 2 GB (bge-m3) keep their weights in files beside the graph that
# it names in external-data entries: {key: "location", value: NAME}, i.e.
# field 1 = "location" (tag 0x0a, length 8) then field 2 (tag 0x12, length).
_EXTERNAL_DATA_RE = re.compile(rb"\x0a\x08location\x12([\x01-\x7f])")
# What sentence-transformers repositories document about using the model:
# width and position table, pooling, maximum length, role prompts.
HUB_CONFIG_FILES = (
    "config.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
)
_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# E5 models were trained with these role prefixes and lose quality without them.
_E5_PREFIXES = ("query: ", "passage: ")
# RoBERTa-family position tables start after the padding index: two slots
# of max_position_embeddings are not usable positions.
_ROBERTA_TYPES = {"xlm-roberta", "roberta", "camembert"}
_DOWNLOAD_CHUNK_BYTES = 1 << 20


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
    hub_url: str = HUB_URL,
) -> Path:
    """Fetch an ONNX export from the Hugging Face hub into the pack `target`.

    Downloads the graph (`onnx_file`, else `onnx/model.onnx` or `model.onnx`)
    with the external-data files it names, `tokenizer.json` (beside the graph,
    else at the root), and writes `model.json` from the repository's
    config.json and sentence-transformers files; `dim`/`pooling`/prefixes
    given here win, and are required when the repository does not say.
    Everything lands in a temporary directory beside `target`, renamed into
    place only when complete. Only ever called explicitly (the `models
    download` command); raises ModelDownloadError.
    """
    if not _REPO_ID_RE.match(repo_id):
        raise ModelDownloadError(f"{repo_id!r} is not a hub repository id (owner/name)")
    if not hub_url.startswith("https://"):
        raise ModelDownloadError(f"hub URL must use https, got {hub_url!r}")
    target = Path(target)
    if target.exists():
        raise ModelDownloadError(f"{target} already exists; remove it or choose another directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        hub = _Hub(hub_url, repo_id, revision, timeout)
        _fetch_files(hub, staging, (onnx_file,) if onnx_file else ONNX_PATHS)
        given = {"dim": dim, "pooling": pooling, "query_prefix": query_prefix, "passage_prefix": passage_prefix}
        config = _hub_model_json(repo_id, {name: hub.json(name) for name in HUB_CONFIG_FILES}, given)
        config["source"] = f"{hub_url}/{repo_id} (revision {revision})"
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


@dataclass(frozen=True, slots=True)
class _Hub:
    base: str
    repo_id: str
    revision: str
    timeout: float

    def url(self, path: str) -> str:
        return f"{self.base.rstrip('/')}/{self.repo_id}/resolve/{self.revision}/{path}"

    def open(self, path: str) -> Any:
        """The open response, or None when the repository has no such file."""
        # The scheme is always https: download_model refuses any other hub URL.
        request = urllib.request.Request(self.url(path), headers={"User-Agent": "notarium-search"})  # noqa: S310
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)  # noqa: S310
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise ModelDownloadError(f"{self.url(path)}: HTTP {exc.code} {exc.reason}") from exc
        except OSError as exc:  # URLError, refused connections, DNS failures, timeouts
            reason = getattr(exc, "reason", exc)
            raise ModelDownloadError(
                f"cannot reach the model hub {self.base}: {reason} (offline? copy a model pack by hand: docs/models.md)"
            ) from exc

    def save(self, path: str, destination: Path) -> bool:
        response = self.open(path)
        if response is None:
            return False
        try:
            with response, destination.open("wb") as out:
                while chunk := response.read(_DOWNLOAD_CHUNK_BYTES):
                    out.write(chunk)
        except OSError as exc:
            raise ModelDownloadError(f"download of {self.url(path)} failed: {exc}") from exc
        return True

    def json(self, path: str) -> dict[str, Any]:
        response = self.open(path)
        if response is None:
            return {}
        try:
            with response:
                data = json.loads(response.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelDownloadError(f"{self.url(path)} is not valid JSON: {exc}") from exc
        return data if isinstance(data, dict) else {}


def _fetch_files(hub: _Hub, staging: Path, graph_paths: Sequence[str]) -> None:
    graph = next((path for path in graph_paths if hub.save(path, staging / MODEL_FILE)), None)
    if graph is None:
        raise ModelDownloadError(f"{hub.repo_id} has no ONNX export ({' or '.join(graph_paths)})")
    folder = graph.rpartition("/")[0]
    for name in sorted(_external_data_names(staging / MODEL_FILE)):
        if not hub.save(_join(folder, name), staging / name):
            raise ModelDownloadError(f"{hub.repo_id}: {graph} needs {_join(folder, name)}, which is missing")
    tokenizers = dict.fromkeys((_join(folder, TOKENIZER_FILE), TOKENIZER_FILE))
    if not any(hub.save(path, staging / TOKENIZER_FILE) for path in tokenizers):
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


def _hub_model_json(
    repo_id: str, documents: Mapping[str, Mapping[str, Any]], given: Mapping[str, object]
) -> dict[str, object]:
    """model.json content from the repository's HUB_CONFIG_FILES (missing ones
    are empty), `given` winning; ModelDownloadError when dim or pooling stay unknown."""
    config = documents.get("config.json", {})
    pooling = documents.get("1_Pooling/config.json", {})
    found: dict[str, object] = {"name": repo_id, "normalize": True}
    found.update(_hub_dim_and_length(config, pooling, documents.get("sentence_bert_config.json", {})))
    found.update(_hub_pooling(pooling))
    found.update(_hub_prefixes(repo_id, documents.get("config_sentence_transformers.json", {})))
    found.update({key: value for key, value in given.items() if value is not None})
    for key in REQUIRED_CONFIG_FIELDS:
        if key not in found:
            raise ModelDownloadError(f"{repo_id} does not say its {key}: pass it explicitly (--{key})")
    return found


def _hub_dim_and_length(
    config: Mapping[str, Any], pooling: Mapping[str, Any], sbert: Mapping[str, Any]
) -> dict[str, object]:
    found: dict[str, object] = {}
    dim = pooling.get("word_embedding_dimension", config.get("hidden_size"))
    if isinstance(dim, int):
        found["dim"] = dim
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int):
        usable = positions - 2 if config.get("model_type") in _ROBERTA_TYPES else positions
        found["max_tokens"] = min(usable, DEFAULT_MAX_TOKENS)
    if isinstance(sbert.get("max_seq_length"), int):
        found["max_tokens"] = min(sbert["max_seq_length"], DEFAULT_MAX_TOKENS)
    return found


def _hub_pooling(pooling: Mapping[str, Any]) -> dict[str, object]:
    if pooling.get("pooling_mode_cls_token"):
        return {"pooling": "cls"}
    if pooling.get("pooling_mode_mean_tokens"):
        return {"pooling": "mean"}
    return {}


def _hub_prefixes(repo_id: str, sentence_transformers: Mapping[str, Any]) -> dict[str, object]:
    prompts = sentence_transformers.get("prompts")
    if isinstance(prompts, dict) and prompts:
        return {"query_prefix": str(prompts.get("query", "")), "passage_prefix": str(prompts.get("passage", ""))}
    if "e5" in repo_id.lower().split("/")[-1].split("-"):
        return {"query_prefix": _E5_PREFIXES[0], "passage_prefix": _E5_PREFIXES[1]}
    return {}
