"""Keys and vectors as numpy arrays, on their way into and out of a `VectorStore`.

In: the keys callers pass are checked and made a uint64 array (integers in
[0, 2**64)), their vectors and queries finite float32 rows of the store's
dimension. Out: the rows usearch stores for some keys, every live key with
its row for a rebuild, which keys the index holds. And the exact cosine
scoring of stored rows that `VectorStore.search` uses for a small allowed
subset instead of the graph.

These functions are apart from vector_store.py, which owns the index, its
locks and its HNSW parameters (creating an index and searching its graph
stay there), because they keep no state: each is a plain function of its
arguments (an index is read with the caller holding its lock). numpy and
usearch (the optional "semantic" extra) are imported on first use: importing
this module needs neither.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, SupportsIndex, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from usearch.index import Index

    KeyArray: TypeAlias = npt.NDArray[np.uint64]
    FloatArray: TypeAlias = npt.NDArray[np.float32]

_MAX_KEY: Final = 2**64 - 1


def key_array(keys: Iterable[int] | npt.NDArray[np.integer[Any]]) -> KeyArray:
    """Keys as a 1-d uint64 array; ValueError for anything that is not a
    non-negative integer below 2**64."""
    import numpy as np

    if isinstance(keys, np.ndarray):
        if keys.ndim != 1 or keys.dtype.kind not in "iu":
            raise ValueError(f"keys must be a 1-d integer array, got {keys.dtype} with shape {keys.shape}")
        if keys.dtype.kind == "i" and len(keys) and int(keys.min()) < 0:
            raise ValueError("keys must be non-negative")
        return keys.astype(np.uint64, copy=False)
    values = [as_key(key) for key in keys]
    if None in values:
        raise ValueError("keys must be integers in [0, 2**64)")
    return np.array(values, dtype=np.uint64)


def as_key(value: object) -> int | None:
    """`value` as a storable key (a Python or numpy integer in [0, 2**64)), or None."""
    if isinstance(value, int):  # the common case, and 50 times faster than the protocol check
        key = value
    elif isinstance(value, SupportsIndex):
        key = operator.index(value)
    else:
        return None
    return key if 0 <= key <= _MAX_KEY else None


def vector_matrix(vectors: npt.NDArray[np.floating[Any]], dim: int) -> FloatArray:
    import numpy as np

    if vectors.ndim != 2 or vectors.shape[1] != dim:
        raise ValueError(f"vectors must have shape (n, {dim}), got {vectors.shape}")
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(matrix).all():
        raise ValueError("vectors must be finite (NaN or infinity found)")
    return matrix


def query_vector(query: npt.NDArray[np.floating[Any]], dim: int) -> FloatArray:
    import numpy as np

    if query.shape != (dim,):
        raise ValueError(f"query must have shape ({dim},), got {query.shape}")
    vector = np.ascontiguousarray(query, dtype=np.float32)
    if not np.isfinite(vector).all():
        raise ValueError("query must be finite (NaN or infinity found)")
    return vector


def get(index: Index, keys: KeyArray, dim: int) -> FloatArray:
    """The stored vectors of keys known to be present, as float32."""
    import numpy as np

    return _rows(index, keys, dim).astype(np.float32)


def export(index: Index) -> tuple[KeyArray, npt.NDArray[np.float16]]:
    """Every live key and its vector as stored (f16), for a rebuild."""
    import numpy as np

    keys = np.asarray(index.keys, dtype=np.uint64)
    return keys, _rows(index, keys, index.ndim).astype(np.float16, copy=False)


def _rows(index: Index, keys: KeyArray, dim: int) -> npt.NDArray[Any]:
    """The stored vectors of keys known to be present, in the index's scalar
    type (`get` returns one row per key, None for a missing key)."""
    import numpy as np

    rows = index.get(keys) if len(keys) else ()
    if not isinstance(rows, tuple):
        raise TypeError(f"usearch returned {type(rows).__name__} for a batch of keys")
    present = [row for row in rows if row is not None]
    if len(present) != len(keys):
        raise KeyError("a key vanished from the vector store")
    return np.vstack(present) if present else np.empty((0, dim), dtype=np.float16)


def contains(index: Index, keys: KeyArray) -> npt.NDArray[np.bool_]:
    import numpy as np

    if not len(keys):
        return np.zeros(0, dtype=bool)
    return np.asarray(index.contains(keys), dtype=bool)


def cosine(matrix: FloatArray, vector: FloatArray) -> FloatArray:
    """Cosine similarity of each row with `vector`; 0 for a zero vector."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    dots = matrix @ vector
    similarities: FloatArray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return similarities


def top_k(keys: KeyArray, similarities: FloatArray, k: int) -> list[tuple[int, float]]:
    import numpy as np

    order = np.argsort(-similarities, kind="stable")[:k]
    return [(int(keys[i]), float(similarities[i])) for i in order]
