"""How to use a model pack: `ModelConfig`, read from the pack's model.json
with the configured overrides winning, each field checked (docs/models.md).
The keys, their bounds, defaults and which are labels only are declared once,
as the fields of `settings.ModelConfig`; this module reads a pack through
them. Local files only; semantic/embedding.py and semantic/remote.py build
their embedders on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import asdict, replace

from notarium_search.semantic.calibration import known_margin
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.settings import (
    DEFAULT_MAX_TOKENS,
    POOLINGS,
    ConfigError,
    ModelConfig,
    model_keys,
    resolve_model_config,
)

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_MAX_TOKENS",
    "POOLINGS",
    "REQUIRED_CONFIG_FIELDS",
    "ModelConfig",
    "config_from",
    "read_model_config",
    "vector_settings",
]

CONFIG_FILE = "model.json"
REQUIRED_CONFIG_FIELDS = tuple(name for name, key in model_keys().items() if key.required)


def read_model_config(model_dir: Path, overrides: Mapping[str, object]) -> ModelConfig:
    """model.json of `model_dir`, with `overrides` (configuration) winning.

    Overrides alone suffice when there is no model.json; an override whose value
    is None counts as unset. Extra model.json keys (languages, licence, source)
    are ignored; unknown override keys are an error (most likely a typo).
    """
    if not model_dir.is_dir():
        raise EmbedderUnavailable(f"model directory {model_dir} does not exist")
    keys = model_keys()
    unknown = sorted(set(overrides) - set(keys))
    if unknown:
        raise EmbedderUnavailable(f"unknown model setting(s) {', '.join(unknown)}; known: {', '.join(keys)}")
    stored = _read_config_file(model_dir / CONFIG_FILE)
    merged = {key: value for key, value in stored.items() if key in keys}
    merged.update({key: value for key, value in overrides.items() if value is not None})
    for name, key in keys.items():
        if key.required and name not in merged:
            raise EmbedderUnavailable(
                f"model {model_dir}: '{name}' is unknown ({CONFIG_FILE} is missing or lacks it);"
                " set it in the configuration"
            )
    return config_from(merged, model_dir.name)


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderUnavailable(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise EmbedderUnavailable(f"{path} must hold a JSON object")
    return raw


def config_from(values: Mapping[str, object], default_name: str) -> ModelConfig:
    """A ModelConfig from merged settings (the required keys given), checked
    through the declarations; `name` defaults to `default_name`, an unset
    `relevance_margin` to the one measured for the model (else None)."""
    try:
        config = resolve_model_config({"name": default_name, **values})
    except ConfigError as exc:
        raise EmbedderUnavailable(f"model {exc}") from None
    if config.relevance_margin is None:
        return replace(config, relevance_margin=known_margin(config.name))
    return config


def vector_settings(config: ModelConfig) -> dict[str, object]:
    """The fields of `config` that change its vectors, for their fingerprint:
    all but the ones declared `LabelOnly` (`name`, `relevance_margin`)."""
    keys = model_keys()
    return {name: value for name, value in asdict(config).items() if not keys[name].label_only}
