"""Why an embedder cannot be used: the exceptions shared by the model
configuration (semantic/model_config.py), local packs (semantic/embedding.py)
and inference servers (semantic/remote.py). Leaf module."""

from __future__ import annotations


class EmbedderUnavailable(RuntimeError):
    """The model cannot be used; `str(exc)` is a precise, user-facing reason."""


class EmbedderUnreachable(EmbedderUnavailable):
    """The model is served by another process that cannot answer right now
    (down, overloaded, timing out): worth trying again later, unlike a
    configuration error (semantic/remote.py)."""
