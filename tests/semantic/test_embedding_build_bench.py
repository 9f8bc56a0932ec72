"""bench/embedding_build.py: the build's share of time in the embedder (real
Tantivy, real usearch, a deterministic hash embedder that takes its time)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from bench.embedding_build import embed_space
from tests.conftest import HashEmbedder, Vault

CALL_SECONDS = 0.05  # each embed_passages call sleeps this long: a floor for the time measured in it


class SleepyEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=32)
        self.calls = 0

    def embed_passages(self, texts: Sequence[str]):
        self.calls += 1
        time.sleep(CALL_SECONDS)
        self.passages_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts])


def test_the_time_in_the_embedder_is_reported_and_the_index_keeps_the_embedder_itself(vault: Vault) -> None:
    for i in range(12):
        vault.write(f"n{i}.md", f"# Note {i}\n\n" + " ".join(f"mot{i}x{j}" for j in range(40)) + ".\n")
    service = vault.service(vector_search=True)
    space = service.spaces["notes"]
    embedder = SleepyEmbedder()
    figures = embed_space(space, embedder)
    assert figures["fragments"] == embedder.passages_embedded == 12
    assert figures["model_seconds"] >= embedder.calls * CALL_SECONDS
    assert 0 < figures["share_in_model"] <= 1
    assert space.semantic is not None
    assert space.semantic.index is not None
    assert space.semantic.index.embedder is embedder
    service.stop()
