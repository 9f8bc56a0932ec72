"""How to use a model pack: `ModelConfig`, read from the pack's model.json
with the configured overrides winning, each field checked (docs/models.md).
Local files only; semantic/embedding.py and semantic/remote.py build their
embedders on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from notarium_search.semantic.calibration import known_margin
from notarium_search.semantic.embedder_errors import EmbedderUnavailable

CONFIG_FILE = "model.json"
POOLINGS = ("mean", "cls")

# Position-embedding limit of the BERT / XLM-R family every supported model
# belongs to; used when neither model.json nor the overrides say, and the
# most a download writes: bge-m3 accepts 8,192, but attention cost grows with
# the square of the length and notes are embedded passage by passage.
DEFAULT_MAX_TOKENS = 512


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """How to use one model pack: model.json merged with configured overrides."""

    name: str
    """A label for messages and status (the directory name unless given)."""
    dim: int
    """Length of one embedding; checked against the model's real output."""
    max_tokens: int
    """Longer texts are truncated to this many tokens (special tokens included)."""
    pooling: str
    """"mean" (attention-masked mean of last_hidden_state) or "cls" (first token)."""
    normalize: bool
    """L2-normalise each vector, so that a dot product is a cosine."""
    query_prefix: str
    """Prepended to queries (E5 models need "query: ")."""
    passage_prefix: str
    """Prepended to passages (E5 models need "passage: ")."""
    relevance_margin: float | None = None
    """How much more similar than unrelated text (the reference passages) a
    fragment must be to a query to count on its own (semantic/calibration.py);
    None: every nearest fragment counts."""


_CONFIG_FIELDS = tuple(f.name for f in fields(ModelConfig))
REQUIRED_CONFIG_FIELDS = ("dim", "pooling")


def read_model_config(model_dir: Path, overrides: Mapping[str, object]) -> ModelConfig:
    """model.json of `model_dir`, with `overrides` (configuration) winning.

    Overrides alone suffice when there is no model.json; an override whose value
    is None counts as unset. Extra model.json keys (languages, licence, source)
    are ignored; unknown override keys are an error (most likely a typo).
    """
    if not model_dir.is_dir():
        raise EmbedderUnavailable(f"model directory {model_dir} does not exist")
    unknown = sorted(set(overrides) - set(_CONFIG_FIELDS))
    if unknown:
        raise EmbedderUnavailable(f"unknown model setting(s) {', '.join(unknown)}; known: {', '.join(_CONFIG_FIELDS)}")
    stored = _read_config_file(model_dir / CONFIG_FILE)
    merged = {key: value for key, value in stored.items() if key in _CONFIG_FIELDS}
    merged.update({key: value for key, value in overrides.items() if value is not None})
    for key in REQUIRED_CONFIG_FIELDS:
        if key not in merged:
            raise EmbedderUnavailable(
                f"model {model_dir}: '{key}' is unknown ({CONFIG_FILE} is missing or lacks it);"
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
    """A ModelConfig from merged settings (`pooling` and `dim` required), checked."""
    pooling = str(values["pooling"]).lower()
    if pooling not in POOLINGS:
        raise EmbedderUnavailable(f"model pooling must be one of {', '.join(POOLINGS)}, got {values['pooling']!r}")
    name = str(values.get("name", default_name))
    return ModelConfig(
        name=name,
        dim=_positive_int(values, "dim", None),
        max_tokens=_positive_int(values, "max_tokens", DEFAULT_MAX_TOKENS),
        pooling=pooling,
        normalize=_boolean(values, "normalize", default=True),
        query_prefix=_text(values, "query_prefix"),
        passage_prefix=_text(values, "passage_prefix"),
        relevance_margin=_margin(values, name),
    )


def _margin(values: Mapping[str, object], name: str) -> float | None:
    """The pack's (or the configuration's) margin, else the one measured for the model, else None."""
    value = values.get("relevance_margin")
    if value is None:
        return known_margin(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 2.0:
        raise EmbedderUnavailable(f"model relevance_margin must be a number between 0 and 2, got {value!r}")
    return float(value)


def _positive_int(values: Mapping[str, object], key: str, default: int | None) -> int:
    value = values.get(key, default)
    # bool is an int subclass: `dim = true` is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise EmbedderUnavailable(f"model {key} must be a positive integer, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise EmbedderUnavailable(f"model {key} must be a positive integer, got {value!r}")
    return number


def _boolean(values: Mapping[str, object], key: str, default: bool) -> bool:
    value = values.get(key, default)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise EmbedderUnavailable(f"model {key} must be a boolean, got {value!r}")


def _text(values: Mapping[str, object], key: str) -> str:
    value = values.get(key, "")
    if not isinstance(value, str):
        raise EmbedderUnavailable(f"model {key} must be a string, got {value!r}")
    return value
