"""The `[model]` table, declared once (settings.ModelConfig): the keys the
configuration accepts, how a pack's values are read, which keys stay out of
the vectors' fingerprint, docs/models.md against the declarations, and a key
declared only here, to show that one declaration is all a new key needs."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from msgspec.structs import asdict, replace

import notarium_search.settings
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.embedding import pack_fingerprint
from notarium_search.semantic.hubconfig import hub_model_json
from notarium_search.semantic.model_config import (
    REQUIRED_CONFIG_FIELDS,
    ModelConfig,
    config_from,
    read_model_config,
    vector_settings,
)
from notarium_search.semantic.presets import PRESETS
from notarium_search.semantic.remote import RemoteEmbedder
from notarium_search.settings import Choices, ConfigError, LabelOnly, ModelKey, load_settings, model_keys

ROOT = Path(__file__).resolve().parents[1]
MODELS_DOC = ROOT / "docs" / "models.md"
TABLE_HEADER = "| field | type | meaning | when absent | changing it re-embeds |"


def fake_pack(folder: Path, **model_json: object) -> Path:
    """A pack whose files are only hashed (pack_fingerprint loads nothing)."""
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"not a graph, only hashed")
    (folder / "tokenizer.json").write_text("{}")
    (folder / "model.json").write_text(json.dumps({"dim": 384, "pooling": "mean", **model_json}))
    return folder


def another_value(key: ModelKey, value: Any) -> Any:
    """A valid value of `key` other than `value`, from its declaration."""
    if key.choices:
        return next(choice for choice in key.choices if choice != value)
    if key.kind is bool:
        return not value
    if key.kind is str:
        return f"{value}x"
    bounds = key.bounds
    high = None if bounds is None else bounds.le if bounds.le is not None else bounds.lt
    if value is None:
        low = 0 if bounds is None else bounds.ge if bounds.ge is not None else bounds.gt or 0
        return (low + high) / 2 if high is not None else low + 1
    other = value + 1
    return other if high is None or other < high else value - 1


# ---------------------------------------------------------------- the declarations


def test_the_declared_keys_are_the_ones_the_configuration_accepts(tmp_path: Path) -> None:
    # Which keys are labels is in every stored fingerprint: changing it rebuilds users' vectors.
    assert [name for name, key in model_keys().items() if key.label_only] == ["name", "relevance_margin"]
    assert REQUIRED_CONFIG_FIELDS == ("dim", "pooling")
    config = tmp_path / "c.toml"
    config.write_text("[model]\n" + "".join(f'{name} = "as written"\n' for name in model_keys()))
    assert dict(load_settings(config, env={}).model) == dict.fromkeys(model_keys(), "as written")  # read at load
    config.write_text("[model]\ndim = 384\ndimension = 384\ncolour = 1\n")
    with pytest.raises(ConfigError, match=r"^unknown \[model\] keys: colour, dimension$"):
        load_settings(config, env={})
    config.write_text("model = 3\n")
    with pytest.raises(ConfigError, match=r"^model = 3 in .*c\.toml \(line 1\): must be a \[model\] table$"):
        load_settings(config, env={})


def test_a_wrong_value_does_not_stop_the_service_it_makes_the_model_unusable(tmp_path: Path) -> None:
    """Values are checked with model.json's when the model loads: the semantic
    channel is unavailable with the reason, lexical search goes on (as before)."""
    config = tmp_path / "c.toml"
    config.write_text('[model]\ndim = 384\npooling = "max"\n')
    settings = load_settings(config, env={})
    with pytest.raises(EmbedderUnavailable, match=r"^model pooling must be one of mean, cls, got 'max'$"):
        read_model_config(fake_pack(tmp_path / "pack"), settings.model)


@pytest.mark.parametrize(
    ("key", "value", "read"),
    [
        # As leniently as model.json was always read.
        ("dim", "384", 384),
        ("dim", " 384 ", 384),
        ("max_tokens", 128, 128),
        ("pooling", "CLS", "cls"),
        ("normalize", "yes", True),
        ("normalize", " Off ", False),
        ("normalize", 1, True),
        ("normalize", 0, False),
        ("name", 5, "5"),
        ("query_prefix", "", ""),
        ("relevance_margin", 0, 0.0),
        ("relevance_margin", 2, 2.0),
        ("relevance_margin", 0.35, 0.35),
    ],
)
def test_values_are_read_as_model_json_always_was(key: str, value: object, read: object) -> None:
    config = config_from({"dim": 384, "pooling": "mean", key: value}, "pack")
    assert getattr(config, key) == read
    assert type(getattr(config, key)) is type(read)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("dim", True, "model dim must be a positive integer, got True"),  # not 1
        ("dim", 384.0, "model dim must be a positive integer, got 384.0"),
        ("dim", 0, "model dim must be a positive integer, got 0"),
        ("dim", "wide", "model dim must be a positive integer, got 'wide'"),
        ("max_tokens", -1, "model max_tokens must be a positive integer, got -1"),
        ("pooling", "max", "model pooling must be one of mean, cls, got 'max'"),
        ("pooling", None, "model pooling must be one of mean, cls, got None"),
        ("normalize", "perhaps", "model normalize must be a boolean, got 'perhaps'"),
        ("normalize", 2, "model normalize must be a boolean, got 2"),
        ("query_prefix", 3, "model query_prefix must be a string, got 3"),
        ("passage_prefix", ["x"], "model passage_prefix must be a string, got ['x']"),
        ("relevance_margin", "0.2", "model relevance_margin must be a number between 0 and 2, got '0.2'"),
        ("relevance_margin", True, "model relevance_margin must be a number between 0 and 2, got True"),
        ("relevance_margin", 2.5, "model relevance_margin must be a number between 0 and 2, got 2.5"),
        ("relevance_margin", math.nan, "model relevance_margin must be a number between 0 and 2, got nan"),
    ],
)
def test_a_wrong_value_is_refused_with_its_key(key: str, value: object, message: str) -> None:
    with pytest.raises(EmbedderUnavailable, match=f"^{re.escape(message)}$"):
        config_from({"dim": 384, "pooling": "mean", key: value}, "pack")


def test_every_preset_and_what_a_download_writes_read_through_the_declarations() -> None:
    for preset in PRESETS.values():
        values = {name: getattr(preset, name) for name in model_keys() if hasattr(preset, name)}
        config = config_from(values, preset.name)
        assert {name: getattr(config, name) for name in values} == values, preset.name
    written = hub_model_json("intfloat/multilingual-e5-small", {}, {"dim": 384, "pooling": "mean"})
    assert set(written) <= set(model_keys())
    assert config_from(written, "pack").query_prefix == "query: "


# ---------------------------------------------------------------- the fingerprint


@pytest.mark.parametrize("name", list(model_keys()))
def test_a_key_changes_the_fingerprint_unless_it_is_label_only(tmp_path: Path, name: str) -> None:
    """Local packs (semantic/embedding.py) and served models (semantic/remote.py)
    alike: the fingerprint follows `vector_settings`, i.e. the LabelOnly marker."""
    pack = fake_pack(tmp_path / "pack")
    key = model_keys()[name]
    config = read_model_config(pack, {})
    changed = {name: another_value(key, getattr(config, name))}
    assert getattr(read_model_config(pack, changed), name) == changed[name]
    assert (pack_fingerprint(pack, changed) == pack_fingerprint(pack, {})) is key.label_only
    assert (name in vector_settings(config)) is not key.label_only
    remote = [RemoteEmbedder("http://127.0.0.1:9", c, "served") for c in (config, replace(config, **changed))]
    try:
        assert (remote[0].fingerprint == remote[1].fingerprint) is key.label_only
    finally:
        for embedder in remote:
            embedder.close()


# ---------------------------------------------------------------- docs/models.md


def documented_rows() -> dict[str, list[str]]:
    """docs/models.md's table of model.json fields: each key → its row's cells
    after the first (a row may document several keys)."""
    doc = MODELS_DOC.read_text(encoding="utf-8")
    lines = doc[doc.index(TABLE_HEADER) :].splitlines()[2:]
    rows: dict[str, list[str]] = {}
    for line in lines:
        if not line.startswith("|"):
            break
        first, *cells = (cell.strip() for cell in line.strip().strip("|").split(" | "))
        for key in re.findall(r"`([a-z_]+)`", first):
            assert key not in rows, f"{key} has two rows"
            rows[key] = cells
    return rows


def documented_type(key: ModelKey) -> str:
    if key.choices:
        return " or ".join(f'`"{choice}"`' for choice in key.choices)
    kind = {bool: "bool", int: "int", str: "string", float: "number"}[key.kind]
    bounds = key.bounds
    if bounds is not None and bounds.ge is not None and bounds.le is not None:
        kind += f", {bounds.ge:g}–{bounds.le:g}"
    return kind


def check_models_doc() -> None:
    rows = documented_rows()
    assert sorted(rows) == sorted(model_keys()), "docs/models.md documents other [model] keys than ModelConfig's"
    for name, key in model_keys().items():
        kind, _meaning, absent, reembeds = rows[name]
        assert kind == documented_type(key), (name, kind)
        assert absent.startswith("**required**") is key.required, (name, absent)
        if key.has_default and key.default is not None:
            assert absent == f"`{json.dumps(key.default)}`", (name, absent, key.default)
        assert reembeds == ("no: a label" if key.label_only else "yes"), (name, reembeds)
    doc = MODELS_DOC.read_text(encoding="utf-8")
    section = doc[doc.index("### When vectors are rebuilt") :].split("\n#", 1)[0]
    reembedding = re.search(r"re-embed \(([^)]*)\)", section)
    labels = re.search(r"are labels \(([^;)]*)", section)
    assert reembedding, "the fingerprint's paragraph lists the fields in it"
    assert labels, "the fingerprint's paragraph lists the fields out of it"
    assert re.findall(r"`([a-z_]+)`", reembedding[1]) == [n for n, k in model_keys().items() if not k.label_only]
    assert re.findall(r"`([a-z_]+)`", labels[1]) == [n for n, k in model_keys().items() if k.label_only]


def test_models_doc_documents_exactly_the_declared_keys() -> None:
    check_models_doc()


# ---------------------------------------------------------------- a new key


class WithTruncation(ModelConfig, frozen=True):
    """ModelConfig with one more key, declared as any other (after the last
    required key, so with a plain default)."""

    truncation: Annotated[str, Choices("end", "start")] = "end"
    """Which end of a long text is kept."""


class WithComment(ModelConfig, frozen=True):
    comment: Annotated[str, LabelOnly()] = ""
    """A note about the pack; changes no vector."""


def test_a_new_key_is_one_declaration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared, the key is accepted in [model], read from model.json and the
    table with its choices and default, and enters the vectors' fingerprint;
    docs/models.md then lacks its row, which its test says."""
    config = tmp_path / "c.toml"
    config.write_text('[model]\ntruncation = "start"\n')
    with pytest.raises(ConfigError, match="unknown \\[model\\] keys: truncation"):
        load_settings(config, env={})
    pack = fake_pack(tmp_path / "pack")
    plain = pack_fingerprint(pack, {})

    monkeypatch.setattr(notarium_search.settings, "ModelConfig", WithTruncation)
    settings = load_settings(config, env={})
    assert asdict(read_model_config(pack, settings.model))["truncation"] == "start"
    assert asdict(read_model_config(pack, {}))["truncation"] == "end"
    stated = fake_pack(tmp_path / "stated", truncation="START")
    assert asdict(read_model_config(stated, {}))["truncation"] == "start"
    with pytest.raises(EmbedderUnavailable, match=r"^model truncation must be one of end, start, got 'middle'$"):
        read_model_config(pack, {"truncation": "middle"})
    assert pack_fingerprint(pack, {"truncation": "start"}) != pack_fingerprint(pack, {})
    assert pack_fingerprint(pack, {}) != plain  # a new key in the fingerprint rebuilds every space's vectors once
    with pytest.raises(AssertionError, match="documents other \\[model\\] keys"):
        check_models_doc()


def test_a_new_label_only_key_is_one_declaration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notarium_search.settings, "ModelConfig", WithComment)
    pack = fake_pack(tmp_path / "pack")
    config = read_model_config(pack, {"comment": "from the hub"})
    assert "comment" not in vector_settings(config)
    assert asdict(config)["comment"] == "from the hub"
    assert pack_fingerprint(pack, {"comment": "from the hub"}) == pack_fingerprint(pack, {})
