"""The semantic channel's relevance floor: the model's margin (model.json,
the [model] table, or the one measured for a known model) over what unrelated
text scores against the query."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from notarium_search.semantic.calibration import E5_SMALL_MARGIN, known_margin, model_family
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.model_config import read_model_config
from tests.conftest import models_dir

MINILM = "all-minilm-l6-v2-int8"


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("multilingual-e5-small-int8", "multilingual-e5-small"),
        ("Xenova/multilingual-e5-small", "multilingual-e5-small"),
        ("intfloat/multilingual-e5-small", "multilingual-e5-small"),
        ("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"),
        ("all-minilm-l6-v2_quantized", "all-minilm-l6-v2"),
        ("BAAI/bge-m3", "bge-m3"),
    ],
)
def test_a_model_is_known_by_its_name_whatever_its_organisation_or_quantisation(name: str, family: str):
    assert model_family(name) == family


def test_only_measured_models_get_a_margin():
    assert known_margin("Xenova/multilingual-e5-small") == E5_SMALL_MARGIN
    assert known_margin("BAAI/bge-m3") is None  # never measured: no floor rather than a guess


def pack_copy(target: Path, **model_json: object) -> Path:
    """The MiniLM pack with these model.json fields changed."""
    source = models_dir() / MINILM
    target.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(source / name, target / name)
    stored = json.loads((source / "model.json").read_text(encoding="utf-8"))
    (target / "model.json").write_text(json.dumps({**stored, **model_json}), encoding="utf-8")
    return target


def test_model_json_and_the_configuration_set_the_margin(tmp_path: Path):
    stated = pack_copy(tmp_path / "stated", relevance_margin=0.2, name="my-own-model")
    assert read_model_config(stated, {}).relevance_margin == 0.2
    assert read_model_config(stated, {"relevance_margin": 0.25}).relevance_margin == 0.25  # [model] wins
    unknown = pack_copy(tmp_path / "unknown", name="my-own-model")
    assert read_model_config(unknown, {}).relevance_margin is None


@pytest.mark.parametrize("value", [True, "0.2", -0.1, 3])
def test_a_margin_that_is_not_a_number_in_range_is_refused_with_its_name(tmp_path: Path, value: object):
    with pytest.raises(EmbedderUnavailable, match=re.escape("relevance_margin must be a number between 0 and 2")):
        read_model_config(pack_copy(tmp_path / "pack", relevance_margin=value), {})


def test_the_margin_changes_no_vector_so_no_reembedding(tmp_path: Path):
    one = load_embedder(pack_copy(tmp_path / "one", relevance_margin=0.1))
    two = load_embedder(pack_copy(tmp_path / "two", relevance_margin=0.4))
    assert one.fingerprint == two.fingerprint
