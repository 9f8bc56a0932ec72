"""Sentence embeddings from a local ONNX model pack (the semantic channel's encoder).

A pack is a directory holding `model.onnx`, `tokenizer.json` and usually
`model.json` (how to use it: dim, pooling, prefixes..., read by
semantic/model_config.py); see docs/models.md. `load_embedder` reads one from
the local disk only: nothing here touches the network (`semantic/download.py`
does, and only an explicit command calls it).

Leaf-ish module: imports only the standard library, numpy and
semantic/model_config.py (with semantic/embedder_errors.py) at import time.
onnxruntime, tokenizers and sentencepiece (the optional `semantic` extra) are imported by
`load_embedder`, so importing this module never fails on a lexical-only
install; a missing package becomes an `EmbedderUnavailable` that says what to
install.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

try:
    import numpy as np
except ImportError:  # lexical-only install: load_embedder reports it
    np = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import numpy.typing as npt

    from notarium_search.semantic.tokenizing import HasIds, TextTokenizer
    from notarium_search.semantic.word_table import WordTable

    Vectors = npt.NDArray[np.float32]
    Ids = npt.NDArray[np.int64]

from notarium_search.logsetup import get_logger
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.model_config import ModelConfig, read_model_config, vector_settings
from notarium_search.semantic.onnx_session import (
    INSTALL_HINT,
    first_line,
    graph_inputs,
    open_session,
    shrinking_run,
)

log = get_logger(__name__)

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

# The most texts run together. Throughput per text hardly depends on the batch
# (e5-small, 2 cores: 9 → 7 ms per 64-token text from batch 1 to 16, 33 ms per
# 256-token text at batch 1, 2 or 4); memory does (docs/models.md).
DEFAULT_BATCH_SIZE = 16
# A run's memory grows with batch × length² (the attention matrices), and
# onnxruntime's arena keeps its peak: e5-small grew +490 MiB for 16 texts of 512
# tokens, +56 MiB for 8 of 256, +18 MiB for 16 of 128. Batches are cut so that
# batch × longest² stays within one text of max_tokens, which the load-time
# check has already sized the arena for (fragments are sorted by length first,
# so batch-mates are of similar length and little is padding).
ATTENTION_BUDGET_TEXTS = 1
# No vocabulary token of the supported tokenizers is longer than 18
# characters (words are separated by at least one more), so cutting a text at
# 32 characters per allowed token before tokenising never changes the kept
# tokens of normal prose, and spares tokenising a 2 MB note in full (1.7 s
# with the e5 tokenizer) only to keep its first 512 tokens.
MAX_CHARS_PER_TOKEN = 32
# 128 bits: a collision-free identity for a handful of models, short enough
# to store beside every vector index.
FINGERPRINT_BYTES = 16
# Bumped when pooling or pre-processing code changes what a model produces,
# so that indexes built by an older version are rebuilt.
FINGERPRINT_VERSION = b"notarium-embedding-1"
HASH_CHUNK_BYTES = 1 << 20
# Two texts of different lengths: the load-time check runs a padded batch, so
# an export with a fixed batch size or sequence length fails at load, not
# halfway through a build.
WARMUP_TEXTS = ("warm-up", "a longer warm-up text, padded against the first one")
# At least one token per repetition in every tokenizer: repeated max_tokens
# times it reaches the truncation length, where a max_tokens larger than the
# model's position table fails (at load, rather than on the first long note).
WARMUP_WORD = "word "


class Embedder(Protocol):
    """What the semantic channel needs from an encoder (fakes implement it in tests)."""

    @property
    def config(self) -> ModelConfig: ...

    @property
    def fingerprint(self) -> str:
        """Stable across restarts; changes when the model file, tokenizer, dim,
        pooling, normalize, prefixes or max_tokens change."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        """Shape (len(texts), dim), float32, rows in the order of `texts`."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Shape (dim,), float32."""
        ...


# ---------------------------------------------------------------- loading


def load_embedder(
    model_dir: Path,
    overrides: Mapping[str, object] | None = None,
    bulk_threads: int = 0,
    query_threads: int = 1,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> OnnxEmbedder:
    """Load the pack in `model_dir` (local files only) and check it works.

    `bulk_threads` is onnxruntime's intra-op thread count (0 = all cores).
    `query_threads` is validated but unused: queries share the bulk session,
    as measured best (see OnnxEmbedder). Raises EmbedderUnavailable with the
    reason when anything is missing, unreadable or inconsistent.
    """
    if batch_size < 1 or bulk_threads < 0 or query_threads < 0:
        raise ValueError("batch_size must be >= 1 and thread counts >= 0")
    config = read_model_config(Path(model_dir), overrides or {})
    model_path, tokenizer_path = _pack_files(Path(model_dir))
    session, word_table = open_session(model_path, bulk_threads)
    tokenizer = _open_tokenizer(tokenizer_path, config.max_tokens)
    embedder = OnnxEmbedder(
        config=config,
        session=session,
        tokenizer=tokenizer,
        fingerprint=_fingerprint(model_path, tokenizer_path, config),
        batch_size=batch_size,
        word_table=word_table,
    )
    embedder.warm_up()
    return embedder


def pack_fingerprint(model_dir: Path, overrides: Mapping[str, object] | None = None) -> str:
    """The fingerprint `load_embedder` gives this pack, without loading it
    (no onnxruntime session, no tokenizer): what `notarium-search status`
    compares the vectors' manifest with. Hashes the graph (~0.2 s for 118 MB)."""
    config = read_model_config(Path(model_dir), overrides or {})
    model_path, tokenizer_path = _pack_files(Path(model_dir))
    return _fingerprint(model_path, tokenizer_path, config)


def _pack_files(model_dir: Path) -> tuple[Path, Path]:
    paths = (model_dir / MODEL_FILE, model_dir / TOKENIZER_FILE)
    for path in paths:
        if not path.is_file():
            raise EmbedderUnavailable(f"model file {path} is missing (a pack needs {MODEL_FILE} and {TOKENIZER_FILE})")
    return paths


def _open_tokenizer(path: Path, max_tokens: int) -> TextTokenizer:
    """The pack's tokenizer (semantic/tokenizing.py: SentencePiece for the
    XLM-R family's unigram vocabularies, a fifth of the memory)."""
    try:
        import tokenizers  # noqa: F401  (every pack may need it)
    except ImportError as exc:
        raise EmbedderUnavailable(f"tokenizers is not installed ({INSTALL_HINT})") from exc
    from notarium_search.semantic.tokenizing import open_tokenizer

    try:
        return open_tokenizer(path, max_tokens)
    # tokenizers and sentencepiece raise bare Exceptions for parse errors.
    except Exception as exc:
        raise EmbedderUnavailable(f"cannot parse {path}: {first_line(exc)}") from exc


def _fingerprint(model_path: Path, tokenizer_path: Path, config: ModelConfig) -> str:
    digest = hashlib.blake2b(FINGERPRINT_VERSION, digest_size=FINGERPRINT_BYTES)
    for path in (model_path, tokenizer_path):
        with path.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
    digest.update(json.dumps(vector_settings(config), sort_keys=True).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------- embedder


class OnnxEmbedder:
    """An `Embedder` over one onnxruntime session and one tokenizer.

    Bulk passages and queries share the one session (`run` is thread-safe).
    Measured on 2 cores (docs/models.md) with a query every 50 ms while
    another thread embedded batches non-stop: e5-small int8 answered in
    9.4-10.6 ms p50 on the shared 2-thread session, 10.0-10.7 ms on a second
    1-thread query session that cost 128-154 MiB more RSS (MiniLM alike).
    Both paths compete for the same cores, so a second one buys nothing.
    """

    def __init__(
        self,
        config: ModelConfig,
        session: Any,
        tokenizer: TextTokenizer,
        fingerprint: str,
        batch_size: int = DEFAULT_BATCH_SIZE,
        word_table: WordTable | None = None,
    ) -> None:
        self.config = config
        self.fingerprint = fingerprint
        self.batch_size = batch_size
        self.passages_embedded = 0
        """Texts embedded through embed_passages since load (tests count work)."""
        self._session = session
        self._tokenizer = tokenizer
        self.tokenizer_name = tokenizer.name
        """Which library holds the vocabulary (semantic/tokenizing.py)."""
        self._pad_id = tokenizer.pad_id()
        self._word_table = word_table
        """The rows of the word-embedding table, when read from the file."""
        self._inputs = graph_inputs(session, word_table.input_name if word_table else None)
        self.input_names = tuple(self._inputs)
        """The graph's declared inputs, all of which are fed."""
        self._output = _hidden_output(session)
        self._max_chars = config.max_tokens * MAX_CHARS_PER_TOKEN
        self._count_lock = threading.Lock()
        self._shrinking = shrinking_run()

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed_passages takes a sequence of texts, not one string")
        return self.embed_texts([self.config.passage_prefix + text for text in texts])

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Texts as given (their prefixes already on them: the model process's
        clients add them, semantic/model_server.py), grouped by length."""
        vectors = np.empty((len(texts), self.config.dim), dtype=np.float32)
        encodings = self._encode(list(texts))
        # Longest first, so that batch-mates pad little and the largest buffers
        # are allocated by the first run rather than late in a build.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids), reverse=True)
        start = 0
        while start < len(order):
            size = self._batch_for(len(encodings[order[start]].ids))
            rows = order[start : start + size]
            start += size
            vectors[rows] = self._run([encodings[i] for i in rows], last=start >= len(order))
        with self._count_lock:
            self.passages_embedded += len(texts)
        return vectors

    def _batch_for(self, longest: int) -> int:
        budget = ATTENTION_BUDGET_TEXTS * self.config.max_tokens**2
        return max(1, min(self.batch_size, budget // max(longest, 1) ** 2))

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._embed([self.config.query_prefix + text])[0]
        return vector

    def warm_up(self) -> None:
        """Check at load what would otherwise fail mid-build: the output width,
        batching with padding, and a text of the full max_tokens length."""
        try:
            width = self._embed(list(WARMUP_TEXTS)).shape[1]
        # Same private onnxruntime exception types as at load.
        except Exception as exc:
            raise EmbedderUnavailable(f"model {self.config.name} fails on a test input: {first_line(exc)}") from exc
        if width != self.config.dim:
            raise EmbedderUnavailable(
                f"model {self.config.name} produces {width}-dimensional vectors but its dim is set to {self.config.dim}"
            )
        try:
            self._embed([WARMUP_WORD * self.config.max_tokens])
        except Exception as exc:
            raise EmbedderUnavailable(
                f"model {self.config.name} fails on a {self.config.max_tokens}-token input"
                f" (is max_tokens above what the model accepts?): {first_line(exc)}"
            ) from exc

    def _embed(self, texts: list[str]) -> Vectors:
        return self._run(self._encode(texts), last=True)

    def _encode(self, texts: list[str]) -> Sequence[HasIds]:
        return self._tokenizer.encode_batch([text[: self._max_chars] for text in texts])

    def _run(self, encodings: Sequence[HasIds], last: bool) -> Vectors:
        """One session run over encodings padded to the longest of them
        (`last`: the call's last, after which the arena shrinks)."""
        lengths = [len(e.ids) for e in encodings]
        ids: Ids = np.full((len(encodings), max(lengths)), self._pad_id, dtype=np.int64)
        mask: Ids = np.zeros_like(ids)
        for row, (encoding, length) in enumerate(zip(encodings, lengths, strict=True)):
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
        feeds = {name: make(ids, mask) for name, make in self._inputs.items()}
        if self._word_table is not None:
            feeds[self._word_table.input_name] = self._word_table.rows(ids)
        hidden = self._session.run([self._output], feeds, self._shrinking if last else None)[0]
        pooled = _mean_pool(hidden, mask) if self.config.pooling == "mean" else hidden[:, 0, :]
        vectors = np.ascontiguousarray(pooled, dtype=np.float32)
        return l2_normalise(vectors) if self.config.normalize else vectors


def _hidden_output(session: Any) -> str:
    outputs = session.get_outputs()
    for node in outputs:
        if node.name == "last_hidden_state":
            return str(node.name)
    for node in outputs:
        if len(node.shape) == 3:
            return str(node.name)
    raise EmbedderUnavailable(f"model has no token-level output (last_hidden_state): {[o.name for o in outputs]}")


def _mean_pool(hidden: Vectors, mask: Ids) -> Vectors:
    weights = mask[:, :, None].astype(np.float32)
    counts = np.maximum(weights.sum(axis=1), 1.0)
    pooled: Vectors = (hidden * weights).sum(axis=1) / counts
    return pooled


def l2_normalise(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero row stays zero instead of becoming NaN.
    normalised: Vectors = vectors / np.maximum(norms, np.finfo(np.float32).tiny)
    return normalised
