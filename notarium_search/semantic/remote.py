"""Embeddings from an inference server: an OpenAI-compatible `/v1/embeddings`
endpoint (Hugging Face TEI, Infinity, vLLM, Ollama, LM Studio), behind the
same `Embedder` interface as a local pack (semantic/embedding.py).

What the server cannot be trusted with is checked here: the number of
vectors, their width against the configured `dim`, finite values; vectors
are L2-normalised here when `normalize` is on, as the local path does
(servers differ: TEI and Infinity normalise by default, vLLM per model).

Failures are of two kinds. `EmbedderUnreachable` (connection refused or cut,
timeouts, 5xx, 429 after the retries below): the server may come back, and
the caller pauses and tries again later. `EmbedderUnavailable` (401, 403, 404,
413, 422, a malformed answer, an answer larger than the request can need,
vectors of the wrong width): a configuration to fix, never tried again.

An answer is read as it arrives and given up past what the request can
legitimately take (`answer_bound`): a server answering 100 MB to a batch held
+411 MiB of peak RSS while it was read whole and parsed.

Leaf-ish module: the standard library, numpy, httpx (a dependency of litestar,
so installed with the service), semantic/embedding.py, semantic/model_config.py
and semantic/embedder_errors.py.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
from msgspec.structs import replace

from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.semantic.embedding import (
    FINGERPRINT_BYTES,
    FINGERPRINT_VERSION,
    MAX_CHARS_PER_TOKEN,
    WARMUP_TEXTS,
    l2_normalise,
)
from notarium_search.semantic.model_config import ModelConfig, config_from, vector_settings

if TYPE_CHECKING:
    from notarium_search.semantic.embedding import Vectors

# The pooling is the server's: a placeholder that keeps ModelConfig whole and
# tells, in the fingerprint and in `models check`, where vectors come from.
REMOTE_POOLING = "server"
DEFAULT_PATH = "/v1/embeddings"
# A request is tried this often before the caller is told the server is
# unreachable; waits double from BACKOFF_FIRST_SECONDS (0.5 + 1 + 2 s). The
# space's writer thread waits meanwhile, so lexical edits can wait that long:
# longer outages are the semantic channel's to wait out (it pauses its build
# and tries again at growing intervals, with the writer free).
ATTEMPTS = 4
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0
# A server asking for more than this (Retry-After) is treated as down: the
# channel's own, longer pause takes over rather than the writer thread sleeping.
RETRY_AFTER_MAX_SECONDS = 30.0
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
CONNECT_TIMEOUT_SECONDS = 5.0
# What an answer of `count` vectors of `dim` numbers can take, generously: a
# number is 8-23 characters as servers write them ("-0.012345678901234568",
# "1.2345678e-05"), 48 leaves room for a comma and a pretty-printer's newline
# and indent; each item's {"object": "embedding", "index": …, "embedding": […]}
# and the envelope (model, usage) have their allowance. An answer past it is
# read no further (a batch of 32 × 384: 650 KiB; 32 × 1024: 1.6 MiB).
JSON_BYTES_PER_NUMBER = 48
ANSWER_BYTES_PER_VECTOR = 256
ANSWER_BYTES_ENVELOPE = 64 * 1024
# An error answer is read this far: its first 200 characters are shown.
ERROR_BYTES_READ = 4096
# Bumped when what is sent (prefixes, truncation) or how answers are read changes.
REMOTE_FINGERPRINT_VERSION = b"notarium-remote-1"
_HINTS = {
    401: "the server wants a token: set NOTARIUM_EMBED_TOKEN",
    403: "the server refused the token (NOTARIUM_EMBED_TOKEN)",
    404: "is embed_url an OpenAI-compatible /v1/embeddings endpoint, and does the server serve embed_model?",
    413: "inputs too long for the server: start TEI with --auto-truncate, or lower max_tokens",
    422: "the server refused the inputs (too long? start TEI with --auto-truncate, or lower max_tokens)",
}


def endpoint(url: str) -> str:
    """The embeddings endpoint of `url`: itself when its path names one
    (`…/embeddings`), else the OpenAI path appended (`http://gpu:8080`,
    `http://gpu:8080/v1` → `http://gpu:8080/v1/embeddings`)."""
    base = url.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise EmbedderUnavailable(f"embed_url must start with http:// or https://, got {url!r}")
    if base.endswith("/embeddings"):
        return base
    return base + "/embeddings" if base.endswith("/v1") else base + DEFAULT_PATH


def remote_config(values: dict[str, object], model: str) -> ModelConfig:
    """The [model] table for a served model: `dim` required, the name sent
    to the server as the label unless `name` is set; `pooling` is the server's."""
    if "dim" not in values or values["dim"] is None:
        raise EmbedderUnavailable(
            "embed_url is set but the model's dim is unknown: set dim in [model] (or NOTARIUM_MODEL_DIR"
            " to the same model's local pack)"
        )
    config = config_from({**values, "pooling": "mean"}, model)
    return replace(config, pooling=REMOTE_POOLING)


class RemoteEmbedder:
    """An `Embedder` whose vectors come from an embeddings server.

    `embed_passages` cuts its texts into batches of `batch_size` and sends up
    to `concurrency` of them at once; `embed_query` sends one request and does
    not retry (the query's deadline is short; a failure degrades to lexical).
    `sleep` is what waits between retries (tests pass their own)."""

    def __init__(
        self,
        url: str,
        config: ModelConfig,
        model: str,
        *,
        token: str | None = None,
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if batch_size < 1 or concurrency < 1 or timeout <= 0:
            raise ValueError("batch_size and concurrency must be >= 1, timeout > 0")
        self.url = endpoint(url)
        self.config = config
        self.model = model
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.bulk_fragments = batch_size * concurrency
        """Fragments worth handing over in one call: every request in flight."""
        self.normalises = True
        """Whether answers are normalised here (`normalize`): servers differ;
        the model process has normalised them already (semantic/shared_model.py)."""
        self.query_timeout = timeout
        """Seconds a query's request may take (the service answers without it
        long before, at query_embed_timeout_ms, but the thread waiting for it
        is one of the two of its query pool: query_embedding.py)."""
        self.served_model = model
        """The model the server says it used (its answer's `model`), set by `probe`."""
        self.passages_embedded = 0
        self._sleep = sleep
        # Not compressed: the bytes counted against `answer_bound` are then the
        # bytes held (a compressed chunk of 64 KiB can inflate to 64 MiB at once).
        headers = {"Accept-Encoding": "identity"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout)),
            limits=httpx.Limits(max_connections=concurrency + 2),
            transport=transport,  # the model process's Unix socket (semantic/shared_model.py)
        )
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._max_chars = config.max_tokens * MAX_CHARS_PER_TOKEN

    @property
    def fingerprint(self) -> str:
        """The served model's identity (the name asked for and the name the
        server answers with), dim, prefixes, normalize and max_tokens; not the
        URL: moving the server to another host keeps the vectors."""
        identity = {"requested": self.model, "served": self.served_model, **vector_settings(self.config)}
        digest = hashlib.blake2b(FINGERPRINT_VERSION + REMOTE_FINGERPRINT_VERSION, digest_size=FINGERPRINT_BYTES)
        digest.update(json.dumps(identity, sort_keys=True).encode())
        return digest.hexdigest()

    def probe(self) -> None:
        """Check at load what would otherwise fail mid-build: the server
        answers, with vectors of the configured width; note the model it serves."""
        body = self._post_with_retries(list(WARMUP_TEXTS))
        self._read_vectors(body, len(WARMUP_TEXTS))
        served = body.get("model")
        if isinstance(served, str) and served:
            self.served_model = served

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed_passages takes a sequence of texts, not one string")
        prefixed = [self.config.passage_prefix + text for text in texts]
        batches = [prefixed[i : i + self.batch_size] for i in range(0, len(prefixed), self.batch_size)]
        if len(batches) <= 1:
            parts = [self._embed_batch(batch) for batch in batches]
        else:
            parts = list(self._executor().map(self._embed_batch, batches))
        with self._lock:
            self.passages_embedded += len(texts)
        if not parts:
            return np.zeros((0, self.config.dim), dtype=np.float32)
        return np.concatenate(parts)

    def embed_query(self, text: str) -> Vectors:
        body = self._post_once([self.config.query_prefix + text], self.query_timeout)
        vector: Vectors = self._read_vectors(body, 1)[0]
        return vector

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="embed-http")
            return self._pool

    def _embed_batch(self, texts: list[str]) -> Vectors:
        return self._read_vectors(self._post_with_retries(texts), len(texts))

    # -- HTTP --------------------------------------------------------------

    def _post_with_retries(self, texts: list[str]) -> dict[str, Any]:
        """POST the texts; connection errors, timeouts, 408, 429 and 5xx are
        tried again (ATTEMPTS in all, waiting as the server's Retry-After asks,
        else at doubling intervals), then raise EmbedderUnreachable."""
        last, asked = "", None
        for attempt in range(ATTEMPTS):
            if attempt:
                self._sleep(self._wait(attempt, last, asked))
            try:
                return self._post_once(texts)
            except _Retryable as exc:
                last, asked = str(exc), exc.retry_after
        raise EmbedderUnreachable(f"embedding server {self.url} unreachable after {ATTEMPTS} attempts: {last}")

    def _wait(self, attempt: int, last: str, asked: float | None) -> float:
        if asked is not None and asked > RETRY_AFTER_MAX_SECONDS:
            raise EmbedderUnreachable(f"embedding server {self.url} asks to wait {asked:g} s: {last}")
        if asked is not None:
            return asked
        return float(min(BACKOFF_FIRST_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS))

    def answer_bound(self, count: int) -> int:
        """The most bytes an answer of `count` vectors is read to (see JSON_BYTES_PER_NUMBER)."""
        per_vector = ANSWER_BYTES_PER_VECTOR + self.config.dim * JSON_BYTES_PER_NUMBER
        return ANSWER_BYTES_ENVELOPE + count * per_vector

    def _post_once(self, texts: list[str], timeout: float | None = None) -> dict[str, Any]:
        payload = {"model": self.model, "input": [text[: self._max_chars] for text in texts]}
        bound = self.answer_bound(len(texts))
        waits = httpx.USE_CLIENT_DEFAULT if timeout is None else httpx.Timeout(timeout)
        try:
            # Streamed: the answer is read a chunk at a time, and no further than `bound`.
            with self._client.stream("POST", self.url, json=payload, timeout=waits) as response:
                status = response.status_code
                if status >= 400:
                    excerpt = _excerpt(response)
                    if status in RETRIED_STATUSES:
                        raise _Retryable(f"HTTP {status} {excerpt}", _retry_after(response))
                    hint = _HINTS.get(status, "")
                    raise EmbedderUnavailable(
                        f"embedding server {self.url} answered HTTP {status} {excerpt}" + (f" ({hint})" if hint else "")
                    )
                raw = _read_at_most(response, bound)
        except httpx.TransportError as exc:  # refused, reset, timed out, cut mid-answer
            raise _Retryable(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, None) from exc
        except httpx.DecodingError as exc:  # a Content-Encoding its body does not follow
            raise EmbedderUnavailable(f"embedding server {self.url} answered an undecodable body: {exc}") from exc
        if raw is None:
            raise EmbedderUnavailable(
                f"embedding server {self.url} answered more than {bound:,} bytes for {len(texts)} vectors of"
                f" {self.config.dim} numbers, more than such an answer can hold: read no further. Is dim"
                f" ({self.config.dim}) the served model's, and embed_url an embeddings endpoint?"
            )
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise EmbedderUnavailable(f"embedding server {self.url} answered something other than JSON") from exc
        if not isinstance(body, dict):
            raise EmbedderUnavailable(f"embedding server {self.url} answered a JSON {type(body).__name__}")
        return body

    def _read_vectors(self, body: dict[str, Any], count: int) -> Vectors:
        """The answer's vectors in input order (by `index` when given), checked."""
        data = body.get("data")
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise EmbedderUnavailable(f"embedding server {self.url} returned {got} vectors for {count} inputs")
        items = sorted(data, key=lambda item: item.get("index", 0)) if all("index" in i for i in data) else data
        try:
            vectors = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(f"embedding server {self.url} returned malformed vectors: {exc}") from exc
        if vectors.ndim != 2 or vectors.shape[1] != self.config.dim:
            width = vectors.shape[1] if vectors.ndim == 2 else "irregular"
            raise EmbedderUnavailable(
                f"embedding server {self.url} returns {width}-dimensional vectors for model {self.model}"
                f" but dim is set to {self.config.dim}"
            )
        if not np.isfinite(vectors).all():
            raise EmbedderUnavailable(f"embedding server {self.url} returned vectors holding NaN or infinity")
        return l2_normalise(vectors) if self.config.normalize and self.normalises else vectors


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (the HTTP-date form is not used by embedding
    servers; it counts as absent, and the doubling waits apply)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _read_at_most(response: httpx.Response, limit: int) -> bytes | None:
    """The streamed answer's body, or None once it is past `limit` bytes
    (declared so, or read so): the rest is never read (closing the stream
    drops the connection)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _excerpt(response: httpx.Response) -> str:
    """The first 200 characters of an error answer, read no further than ERROR_BYTES_READ."""
    head = b""
    try:
        for chunk in response.iter_bytes():
            head += chunk[: ERROR_BYTES_READ - len(head)]
            if len(head) >= ERROR_BYTES_READ:
                break
    except httpx.HTTPError:
        pass  # cut mid-answer: the status says enough
    text = head.decode(response.encoding or "utf-8", errors="replace")
    return " ".join(text[:200].split())


def load_remote_embedder(
    url: str,
    config: ModelConfig,
    model: str,
    *,
    token: str | None = None,
    batch_size: int = 32,
    concurrency: int = 4,
    timeout: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> RemoteEmbedder:
    """A RemoteEmbedder that has answered a probe (see `RemoteEmbedder.probe`)."""
    embedder = RemoteEmbedder(
        url, config, model, token=token, batch_size=batch_size, concurrency=concurrency, timeout=timeout, sleep=sleep
    )
    try:
        embedder.probe()
    except BaseException:
        embedder.close()
        raise
    return embedder


# ---------------------------------------------------------------- local queries

# Queries and passages must come from the same model: a query embedded by the
# local pack is compared with passages embedded by the server. The same model
# on two runtimes (int8 ONNX here, fp16 on a GPU there) gives close, not equal,
# vectors; another model gives unrelated ones (cosine near 0 or below 0.9).
AGREEMENT_MIN_COSINE = 0.99
PROBE_QUERIES = ("résilience des chaînes d'approvisionnement", "how do plants make energy from light")
PROBE_PASSAGES = (
    "La photosynthèse convertit l'énergie lumineuse en énergie chimique dans les chloroplastes.",
    "A supply chain is resilient when it recovers quickly from a disruption.",
)


class SplitEmbedder:
    """Passages from the server (bulk), queries from the local pack of the
    same model: searches keep their semantic channel while the server is down.
    Built only once `check_agreement` passed."""

    def __init__(self, bulk: RemoteEmbedder, queries: Any) -> None:
        self.bulk = bulk
        self.queries = queries
        self.config: ModelConfig = queries.config
        self.bulk_fragments = bulk.bulk_fragments

    @property
    def fingerprint(self) -> str:
        return self.bulk.fingerprint  # the stored vectors are the server's

    @property
    def passages_embedded(self) -> int:
        return self.bulk.passages_embedded

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self.bulk.embed_passages(texts)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.queries.embed_query(text)
        return vector


def check_agreement(bulk: RemoteEmbedder, local: Any) -> float:
    """The lowest cosine between the server's and the local pack's vectors of
    the probe texts (queries and passages, prefixes included); raises
    EmbedderUnavailable below AGREEMENT_MIN_COSINE."""
    remote = np.concatenate(
        [bulk.embed_passages(list(PROBE_PASSAGES)), np.stack([bulk.embed_query(q) for q in PROBE_QUERIES])]
    )
    mine = np.concatenate(
        [local.embed_passages(list(PROBE_PASSAGES)), np.stack([local.embed_query(q) for q in PROBE_QUERIES])]
    )
    lowest = float(np.min(np.sum(l2_normalise(remote) * l2_normalise(mine), axis=1)))
    if lowest < AGREEMENT_MIN_COSINE:
        raise EmbedderUnavailable(
            f"the local model {local.config.name} and the server's {bulk.served_model} disagree (cosine {lowest:.3f}"
            f" on a probe, {AGREEMENT_MIN_COSINE} needed): they are not the same model. Unset NOTARIUM_MODEL_DIR"
            " to embed queries on the server too, or point it at the server's model"
        )
    return lowest
