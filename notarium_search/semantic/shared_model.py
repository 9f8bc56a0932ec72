"""A worker's side of the service's model process (semantic/model_server.py):
an `Embedder` whose vectors come from the one copy of the model, over its
Unix socket, with the OpenAI-compatible client of semantic/remote.py.

Its fingerprint is the pack's (the model process says which), not a served
model's: the vectors are the ones a worker's own copy of the pack made, to the
bit (float32 → JSON → float32 is exact), so indexes built before the model
process, or by `notarium-search index`, are kept.

A query the process cannot answer (killed, restarting, its model failed)
raises `EmbedderUnreachable`, which the service turns into a keyword answer
whose `degraded` says why; passages are tried again as any server's are
(semantic/remote.py), then the channel pauses its build and tries later.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.semantic.model_config import ModelConfig
from notarium_search.semantic.model_probe import EMBEDDINGS_PATH, HOST, INFO_PATH
from notarium_search.semantic.model_server import TEXTS_PER_REQUEST
from notarium_search.semantic.remote import RemoteEmbedder

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Vectors

URL = f"http://{HOST}{EMBEDDINGS_PATH}"
INFO_URL = f"http://{HOST}{INFO_PATH}"
# Fragments a request: the semantic channel's slice (semantic/channel.py
# SLICE_FRAGMENTS), so that the writer looks at its queue as often as with a
# model of its own; the model process groups them by length, and sizes the
# requests it accepts by it.
PASSAGES_PER_REQUEST = TEXTS_PER_REQUEST
# The longest a request may take: a slice of 512-token fragments is ~8 s on
# 2 cores; a loaded machine is allowed several times that. A process that
# hangs is killed sooner by its supervisor's probe (model_process.py). A
# query's own deadline (query_embed_timeout_ms) is the service's, much shorter.
REQUEST_TIMEOUT_SECONDS = 60.0
# A query's request is given up past this: a model process that hangs would
# otherwise hold the query pool's two threads (query_embedding.py) for
# REQUEST_TIMEOUT_SECONDS, and every next query would wait behind them.
QUERY_TIMEOUT_SECONDS = 5.0
# How long the service's model loader waits for the process to load the
# model (~1 s for e5-small int8; a slow disk or a loaded machine longer);
# past it the loader tries again later (service.py).
LOAD_WAIT_SECONDS = 120.0
LOAD_POLL_SECONDS = 0.1


class SharedModelEmbedder(RemoteEmbedder):
    """Passages and queries embedded by the model process."""

    def __init__(self, socket_path: Path, config: ModelConfig, fingerprint: str, model: str) -> None:
        super().__init__(
            URL,
            config,
            model,
            batch_size=PASSAGES_PER_REQUEST,
            concurrency=1,
            timeout=REQUEST_TIMEOUT_SECONDS,
            transport=httpx.HTTPTransport(uds=str(socket_path)),
        )
        self.socket_path = socket_path
        self.query_timeout = QUERY_TIMEOUT_SECONDS
        self.normalises = False  # the process's vectors are the pack's, normalised there: kept to the bit
        self._pack_fingerprint = fingerprint

    @property
    def fingerprint(self) -> str:
        return self._pack_fingerprint

    def _post_once(self, texts: list[str], timeout: float | None = None) -> dict[str, Any]:
        body = super()._post_once(texts, timeout)
        if body.get("fingerprint") != self._pack_fingerprint:
            # Restarted with another pack (replaced on disk meanwhile): its vectors
            # would be stored and compared as this one's.
            raise EmbedderUnavailable(
                "the model process now runs another model than the one this worker started with: restart the service"
            )
        return body

    def embed_query(self, text: str) -> Vectors:
        try:
            return super().embed_query(text)
        except EmbedderUnreachable as exc:
            raise EmbedderUnreachable(f"the model process is not answering ({exc})") from exc
        except EmbedderUnavailable as exc:
            raise EmbedderUnavailable(f"the model process failed the query ({exc})") from exc
        except Exception as exc:  # a transport failure (refused: the process is restarting)
            raise EmbedderUnreachable(f"the model process is not answering ({type(exc).__name__}: {exc})") from exc


def connect(socket_path: Path, config: ModelConfig, wait_seconds: float = LOAD_WAIT_SECONDS) -> SharedModelEmbedder:
    """A client of the model process once its model is loaded. Raises
    EmbedderUnavailable with the process's reason when its model failed to
    load, EmbedderUnreachable when it is not ready within `wait_seconds`."""
    info = wait_for_model(socket_path, wait_seconds)
    return SharedModelEmbedder(socket_path, config, str(info["fingerprint"]), str(info.get("model") or config.name))


def wait_for_model(socket_path: Path, wait_seconds: float = LOAD_WAIT_SECONDS) -> dict[str, Any]:
    """The process's `/info` once it says "ready" (see `connect`)."""
    deadline = time.monotonic() + wait_seconds
    last = "not started"
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(socket_path)), timeout=5.0) as client:
        while True:
            try:
                info = client.get(INFO_URL).json()
            except (httpx.HTTPError, ValueError) as exc:
                info, last = {}, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if info.get("state") == "ready" and isinstance(info.get("fingerprint"), str):
                return dict(info)
            if info.get("state") == "failed":
                raise EmbedderUnavailable(str(info.get("error") or "the model process could not load the model"))
            if info:
                last = str(info.get("state"))
            if time.monotonic() >= deadline:
                raise EmbedderUnreachable(f"the model process was not ready within {wait_seconds:g} s ({last})")
            time.sleep(LOAD_POLL_SECONDS)
