"""model.json for a hub repository without a preset, from what the
repository documents (config.json and the sentence-transformers files);
docs/models.md has the table of which field comes from where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notarium_search.semantic.model_config import DEFAULT_MAX_TOKENS, REQUIRED_CONFIG_FIELDS

# What sentence-transformers repositories document about using the model:
# width and position table, pooling, maximum length, role prompts.
HUB_CONFIG_FILES = (
    "config.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
)
# E5 models were trained with these role prefixes and lose quality without them.
_E5_PREFIXES = ("query: ", "passage: ")
# RoBERTa-family position tables start after the padding index: two slots
# of max_position_embeddings are not usable positions.
_ROBERTA_TYPES = {"xlm-roberta", "roberta", "camembert"}


class UnknownField(LookupError):
    """A field model.json needs that the repository does not state; str() is its name."""


def hub_model_json(
    repo_id: str, documents: Mapping[str, Mapping[str, Any]], given: Mapping[str, object]
) -> dict[str, object]:
    """model.json content from the repository's HUB_CONFIG_FILES (missing ones
    are empty), `given` winning; UnknownField(name) when dim or pooling stay unknown."""
    config = documents.get("config.json", {})
    pooling = documents.get("1_Pooling/config.json", {})
    found: dict[str, object] = {"name": repo_id, "normalize": True}
    found.update(_hub_dim_and_length(config, pooling, documents.get("sentence_bert_config.json", {})))
    found.update(_hub_pooling(pooling))
    found.update(_hub_prefixes(repo_id, documents.get("config_sentence_transformers.json", {})))
    found.update({key: value for key, value in given.items() if value is not None})
    for key in REQUIRED_CONFIG_FIELDS:
        if key not in found:
            raise UnknownField(key)
    return found


def _hub_dim_and_length(
    config: Mapping[str, Any], pooling: Mapping[str, Any], sbert: Mapping[str, Any]
) -> dict[str, object]:
    found: dict[str, object] = {}
    dim = pooling.get("word_embedding_dimension", config.get("hidden_size"))
    if isinstance(dim, int):
        found["dim"] = dim
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int):
        usable = positions - 2 if config.get("model_type") in _ROBERTA_TYPES else positions
        found["max_tokens"] = min(usable, DEFAULT_MAX_TOKENS)
    if isinstance(sbert.get("max_seq_length"), int):
        found["max_tokens"] = min(sbert["max_seq_length"], DEFAULT_MAX_TOKENS)
    return found


def _hub_pooling(pooling: Mapping[str, Any]) -> dict[str, object]:
    if pooling.get("pooling_mode_cls_token"):
        return {"pooling": "cls"}
    if pooling.get("pooling_mode_mean_tokens"):
        return {"pooling": "mean"}
    return {}


def _hub_prefixes(repo_id: str, sentence_transformers: Mapping[str, Any]) -> dict[str, object]:
    prompts = sentence_transformers.get("prompts")
    if isinstance(prompts, dict) and prompts:
        return {"query_prefix": str(prompts.get("query", "")), "passage_prefix": str(prompts.get("passage", ""))}
    if "e5" in repo_id.lower().split("/")[-1].split("-"):
        return {"query_prefix": _E5_PREFIXES[0], "passage_prefix": _E5_PREFIXES[1]}
    return {}
