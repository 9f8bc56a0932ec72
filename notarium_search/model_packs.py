"""The model packs as the command line handles them (`notarium-search
models`): the presets, a download, the configured pack loaded. The CLI sees
these, never `semantic/` (the front doors' import contract in pyproject.toml)."""

from __future__ import annotations

from typing import Any

from notarium_search.semantic.download import ModelDownloadError, download_model, download_preset
from notarium_search.semantic.presets import PRESETS, Preset, preset_table
from notarium_search.settings import Settings

__all__ = [
    "PRESETS",
    "ModelDownloadError",
    "Preset",
    "download_model",
    "download_preset",
    "load_configured_embedder",
    "preset_table",
]


def load_configured_embedder(settings: Settings) -> Any:
    """The configured pack (or embedding server), loaded as the service loads
    it: onnxruntime is imported only here."""
    from notarium_search.semantic.loading import load_configured_embedder as load

    return load(settings)
