"""Why an embedder cannot be used: the exceptions shared by the model
configuration (semantic/model_config.py), local packs (semantic/embedding.py)
and inference servers (semantic/remote.py). They live in errors.py, the
lowest layer, so that the service and the front doors catch them without
importing the semantic channel; named here too for the channel's modules."""

from __future__ import annotations

from notarium_search.errors import EmbedderUnavailable, EmbedderUnreachable

__all__ = ["EmbedderUnavailable", "EmbedderUnreachable"]
