"""The embedder the configuration names: the local pack of NOTARIUM_MODEL_DIR,
or the server of NOTARIUM_EMBED_URL (with both, passages from the server and
queries from the pack, once their vectors agree). Used by the service, the
CLI's `index` and `models check`."""

from __future__ import annotations

from msgspec.structs import replace

from notarium_search.semantic.embedding import Embedder
from notarium_search.settings import Settings


def load_configured_embedder(settings: Settings) -> Embedder:
    """The local pack of NOTARIUM_MODEL_DIR, or the server of NOTARIUM_EMBED_URL
    (with both, passages from the server and queries from the pack, once their
    vectors are checked to agree: semantic/remote.py)."""
    from notarium_search.semantic.embedder_errors import EmbedderUnavailable
    from notarium_search.semantic.embedding import load_embedder

    if settings.embed_url is not None:
        return _load_remote(settings)
    if settings.model_socket is not None and settings.model_dir is not None:
        from notarium_search.semantic.model_config import read_model_config
        from notarium_search.semantic.shared_model import connect

        # The service's model process (semantic/model_server.py): its config is read
        # here from the same pack and [model] table, its fingerprint asked of it.
        return connect(settings.model_socket, read_model_config(settings.model_dir, settings.model))
    if settings.model_dir is None:
        raise EmbedderUnavailable(
            "no model configured: set NOTARIUM_MODEL_DIR to a local model folder, or NOTARIUM_EMBED_URL to an"
            " embedding server (docs/models.md)"
        )
    return load_embedder(
        settings.model_dir,
        settings.model,
        bulk_threads=settings.embed_threads,
        batch_size=settings.embed_batch_size,
    )


def _load_remote(settings: Settings) -> Embedder:
    from notarium_search.semantic.embedder_errors import EmbedderUnavailable
    from notarium_search.semantic.embedding import load_embedder
    from notarium_search.semantic.model_config import read_model_config
    from notarium_search.semantic.remote import (
        REMOTE_POOLING,
        SplitEmbedder,
        check_agreement,
        load_remote_embedder,
        remote_config,
    )

    assert settings.embed_url is not None
    local = read_model_config(settings.model_dir, settings.model) if settings.model_dir is not None else None
    model = settings.embed_model or str(settings.model.get("name") or "")
    if not model:
        raise EmbedderUnavailable("embed_url is set but no model name: set NOTARIUM_EMBED_MODEL (or name in [model])")
    config = replace(local, pooling=REMOTE_POOLING) if local is not None else remote_config(dict(settings.model), model)
    remote = load_remote_embedder(
        settings.embed_url,
        config,
        model,
        token=settings.embed_token,
        batch_size=settings.embed_url_batch,
        concurrency=settings.embed_url_concurrency,
        timeout=settings.embed_url_timeout,
    )
    if settings.model_dir is None:
        return remote
    try:
        # One thread: the pack embeds queries only, the bulk is the server's.
        queries = load_embedder(
            settings.model_dir, settings.model, bulk_threads=1, batch_size=settings.embed_batch_size
        )
        check_agreement(remote, queries)
    except Exception:
        remote.close()
        raise
    return SplitEmbedder(remote, queries)
