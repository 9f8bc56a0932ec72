"""`models download` through huggingface_hub, against a model hub on
127.0.0.1 (tests/fake_hub.py) serving the shared packs' real files in the
hub's layout: presets, resume, checksums, tokens, offline. The packs it
writes are loaded by the real loader and compared with the shared packs."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec.structs
import numpy as np
import pytest

from notarium_search import cli
from notarium_search.semantic.calibration import MINILM_L6_MARGIN
from notarium_search.semantic.download import ModelDownloadError, _external_data_names, download_model
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.hubconfig import UnknownField, hub_model_json
from notarium_search.semantic.model_config import ModelConfig
from notarium_search.semantic.presets import PRESETS, Preset
from tests.conftest import models_dir
from tests.fake_hub import FakeHub

ROOT = Path(__file__).resolve().parents[2]
# The shared pack each preset stands for (../shared/models: where they come from is in their model.json).
SHARED = {"multilingual-e5-small": "multilingual-e5-small-int8", "all-minilm-l6-v2": "all-minilm-l6-v2-int8"}
# Fields of model.json that decide how a pack embeds (name and source are labels).
EMBEDDING_FIELDS = ("dim", "max_tokens", "pooling", "normalize", "query_prefix", "passage_prefix")
SAMPLE = "Comment préparer un bon café filtre ?"
TOKEN = "hf_test_token"  # noqa: S105 - a made-up token the fake hub expects
Documents = dict[str, dict[str, Any]]  # hub file name -> its JSON


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def serve_preset(hub: FakeHub, preset: Preset) -> Path:
    """The hub holds `preset`'s repository with the shared pack's files in
    place of the hub's own (which cannot be fetched here): the graph at the
    preset's path, tokenizer.json, and a config.json as such exports have."""
    shared = models_dir() / SHARED[preset.name]
    hub.commit = preset.revision if preset.revision != "main" else hub.commit
    hub.add(
        preset.repo_id,
        {
            preset.onnx_file: (shared / "model.onnx").read_bytes(),
            "tokenizer.json": (shared / "tokenizer.json").read_bytes(),
            "config.json": json.dumps({"hidden_size": preset.dim, "max_position_embeddings": 512}).encode(),
        },
    )
    return shared


@pytest.mark.parametrize("name", sorted(SHARED))
def test_a_preset_pack_loads_exactly_like_the_shared_pack(
    fake_hub: FakeHub, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = PRESETS[name]
    shared = serve_preset(fake_hub, preset)
    target = tmp_path / "pack"
    # --sha256: the hub serves the shared pack's graph, not the hub's own build the preset pins.
    argv = ["models", "download", name, str(target), "--sha256", sha256(shared / "model.onnx")]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert sorted(p.name for p in target.iterdir()) == ["model.json", "model.onnx", "tokenizer.json"]
    assert [p.name for p in tmp_path.iterdir() if p.name != "hf-home"] == ["pack"]  # no staging folder left
    written, reference = (
        json.loads((target / "model.json").read_text()),
        json.loads((shared / "model.json").read_text()),
    )
    assert {k: written[k] for k in EMBEDDING_FIELDS} == {k: reference[k] for k in EMBEDDING_FIELDS}
    assert written["relevance_margin"] == preset.relevance_margin
    assert preset.revision in written["source"]  # the pinned commit, asked for in every URL
    assert all(f"/resolve/{preset.revision}/" in s.path for s in fake_hub.seen if "/resolve/" in s.path)
    capsys.readouterr()
    assert cli.main(["models", "check", str(target)]) == 0
    assert f"dim {preset.dim}, pooling {preset.pooling}" in capsys.readouterr().out

    downloaded, original = load_embedder(target), load_embedder(shared)
    assert downloaded.config == msgspec.structs.replace(original.config, name=name)  # all but the label
    assert downloaded.fingerprint == original.fingerprint
    np.testing.assert_array_equal(downloaded.embed_query(SAMPLE), original.embed_query(SAMPLE))
    np.testing.assert_array_equal(downloaded.embed_passages([SAMPLE]), original.embed_passages([SAMPLE]))


def test_a_transfer_cut_half_way_resumes_where_it_stopped(fake_hub: FakeHub, tmp_path: Path) -> None:
    preset = PRESETS["all-minilm-l6-v2"]
    shared = serve_preset(fake_hub, preset)
    size = (shared / "model.onnx").stat().st_size
    fake_hub.cut[preset.onnx_file] = size // 2
    target = tmp_path / "pack"
    argv = ["models", "download", preset.name, str(target), "--sha256", sha256(shared / "model.onnx")]
    assert cli.main(argv) == 0
    assert (target / "model.onnx").read_bytes() == (shared / "model.onnx").read_bytes()
    # The first GET stopped half way; the second asked only for what the first
    # had not written yet (huggingface_hub writes whole 10 MB chunks, so it may
    # ask again for the tail of the last one), and got it.
    first, second = fake_hub.gets(preset.onnx_file)
    assert (first.range, first.sent) == (None, size // 2)
    assert second.range is not None
    start = int(second.range.removeprefix("bytes=").removesuffix("-"))
    assert 0 < start <= size // 2
    assert second.sent == size - start


def test_a_graph_that_is_not_the_pinned_one_is_refused_and_nothing_is_kept(
    fake_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = PRESETS["multilingual-e5-small"]
    shared = serve_preset(fake_hub, preset)  # the shared pack's graph is not the hub build the preset pins
    target = tmp_path / "models" / "e5"
    assert cli.main(["models", "download", preset.name, str(target)]) == 2
    error = capsys.readouterr().err
    assert error == (
        f"notarium-search: {preset.onnx_file} has SHA-256 {sha256(shared / 'model.onnx')},"
        f" not the expected {preset.sha256}: refused, nothing kept\n"
    )
    assert list(target.parent.iterdir()) == []  # neither the pack nor its staging folder


def test_bytes_changed_in_flight_are_refused_by_the_hubs_own_checksum(fake_hub: FakeHub, tmp_path: Path) -> None:
    # No pinned SHA-256 (a repository without a preset): the hub's X-Linked-Etag is the check.
    source = models_dir() / SHARED["all-minilm-l6-v2"]
    fake_hub.add("someone/minilm", {"model.onnx": (source / "model.onnx").read_bytes()})
    fake_hub.add("someone/minilm", {"tokenizer.json": (source / "tokenizer.json").read_bytes()})
    fake_hub.corrupt.add("model.onnx")
    with pytest.raises(ModelDownloadError, match=r"model\.onnx has SHA-256 \w+, not the hub's \w+: refused"):
        download_model("someone/minilm", tmp_path / "pack", dim=384, pooling="mean")
    assert [p.name for p in tmp_path.iterdir() if p.name != "hf-home"] == []  # no pack, no staging folder


def test_hf_token_is_sent_as_a_bearer_token_to_a_gated_repository(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = PRESETS["all-minilm-l6-v2"]
    shared = serve_preset(fake_hub, preset)
    fake_hub.token = TOKEN
    argv = ["models", "download", preset.name, str(tmp_path / "pack"), "--sha256", sha256(shared / "model.onnx")]
    assert cli.main(argv) == 2  # no token: the hub says gated
    assert "is gated: accept its terms on the hub, then set HF_TOKEN" in capsys.readouterr().err
    assert not (tmp_path / "pack").exists()
    fake_hub.seen.clear()
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert cli.main(argv) == 0
    assert fake_hub.seen  # and every request carried the token
    assert {s.authorization for s in fake_hub.seen} == {f"Bearer {TOKEN}"}


def test_offline_the_cli_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HOME": str(tmp_path / "hf")}
    target = tmp_path / "models" / "e5"
    done = subprocess.run(
        [sys.executable, "-m", "notarium_search", "models", "download", "multilingual-e5-small", str(target)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"notarium-search: cannot reach the model hub http://127.0.0.1:{port}: [Errno 111] Connection refused"
        " (offline? copy a model pack by hand: docs/models.md)"
    ]
    assert done.stdout == ""
    assert not target.parent.exists() or list(target.parent.iterdir()) == []


def test_a_repository_without_a_preset_gets_model_json_from_its_configs(fake_hub: FakeHub, tmp_path: Path) -> None:
    # A sentence-transformers repository with an onnx/ export: model.json is
    # inferred from its config files; the pack is readable by every user.
    source = models_dir() / SHARED["all-minilm-l6-v2"]
    fake_hub.add(
        "sentence-transformers/all-MiniLM-L6-v2",
        {
            "onnx/model.onnx": (source / "model.onnx").read_bytes(),
            "tokenizer.json": (source / "tokenizer.json").read_bytes(),
            "config.json": json.dumps({"hidden_size": 384, "max_position_embeddings": 512}).encode(),
            "1_Pooling/config.json": json.dumps({"pooling_mode_mean_tokens": True}).encode(),
            "sentence_bert_config.json": json.dumps({"max_seq_length": 256}).encode(),
        },
    )
    umask = os.umask(0o022)
    try:
        target = download_model("sentence-transformers/all-MiniLM-L6-v2", tmp_path / "minilm")
    finally:
        os.umask(umask)
    assert sorted(path.name for path in target.iterdir()) == ["model.json", "model.onnx", "tokenizer.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert {stat.S_IMODE(path.stat().st_mode) for path in target.iterdir()} == {0o644}
    expected = ModelConfig("sentence-transformers/all-MiniLM-L6-v2", 384, 256, "mean", True, "", "", MINILM_L6_MARGIN)
    assert load_embedder(target).config == expected
    # model.onnx (tried first) exists: model.onnx at the root is never asked for.
    assert not [s for s in fake_hub.seen if s.path.endswith("/resolve/main/model.onnx")]


@pytest.mark.parametrize(
    ("repo_id", "hub_url", "message"),
    [
        ("../../etc", "https://huggingface.co", "not a hub repository id"),
        ("Xenova/multilingual-e5-small", "http://huggingface.co", r"must use https \(http only on this machine\)"),
    ],
)
def test_download_refuses_bad_ids_and_plain_http_across_a_network(
    tmp_path: Path, repo_id: str, hub_url: str, message: str
) -> None:
    with pytest.raises(ModelDownloadError, match=message):
        download_model(repo_id, tmp_path / "pack", hub_url=hub_url)


def test_download_never_replaces_an_existing_pack(tmp_path: Path) -> None:
    (tmp_path / "pack").mkdir()
    with pytest.raises(ModelDownloadError, match="already exists"):
        download_model("Xenova/multilingual-e5-small", tmp_path / "pack", hub_url="http://127.0.0.1:9")


def test_models_list_shows_every_preset_with_its_pins(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for preset in PRESETS.values():
        assert f"{preset.name}: " in out
        assert f"{preset.repo_id} {preset.onnx_file}, dim {preset.dim}, pooling {preset.pooling}" in out
    assert "margin 0.07; revision 761b726dd34f, sha256 f80102d3f2a1…" in out
    assert "no margin (not measured); revision main (not pinned), sha256 from the hub only" in out


def test_a_preset_refuses_options_it_already_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models", "download", "bge-m3", str(tmp_path / "p"), "--pooling", "mean"]) == 2
    assert "--pooling describe a repository; the preset bge-m3 sets them" in capsys.readouterr().err
    assert cli.main(["models", "download", "e5-smal", str(tmp_path / "p")]) == 2
    assert "'e5-smal' is neither a preset (multilingual-e5-small, " in capsys.readouterr().err


def test_model_json_is_inferred_from_the_repository_configs() -> None:
    xenova_e5: Documents = {
        "config.json": {"hidden_size": 384, "max_position_embeddings": 514, "model_type": "xlm-roberta"}
    }
    sbert_minilm: Documents = {
        "config.json": {"hidden_size": 384, "max_position_embeddings": 512, "model_type": "bert"},
        "1_Pooling/config.json": {"word_embedding_dimension": 384, "pooling_mode_mean_tokens": True},
        "sentence_bert_config.json": {"max_seq_length": 256},
    }
    bge: Documents = {"config.json": {"hidden_size": 1024}, "1_Pooling/config.json": {"pooling_mode_cls_token": True}}
    e5 = hub_model_json("Xenova/multilingual-e5-small", xenova_e5, {"pooling": "mean", "dim": None})
    assert e5 == {
        "name": "Xenova/multilingual-e5-small",
        "normalize": True,
        "dim": 384,
        "max_tokens": 512,
        "pooling": "mean",
        "query_prefix": "query: ",
        "passage_prefix": "passage: ",
    }
    minilm = hub_model_json("sentence-transformers/all-MiniLM-L6-v2", sbert_minilm, {})
    assert (minilm["dim"], minilm["pooling"], minilm["max_tokens"]) == (384, "mean", 256)
    assert "query_prefix" not in minilm
    assert hub_model_json("BAAI/bge-m3", bge, {})["pooling"] == "cls"
    with pytest.raises(UnknownField, match="pooling"):
        hub_model_json("Xenova/multilingual-e5-small", xenova_e5, {})


def test_external_weight_files_named_by_the_graph_are_found(tmp_path: Path) -> None:
    # An ONNX external-data entry is {key: "location", value: NAME} as protobuf
    # fields 1 and 2; a graph over 2 GB (bge-m3) names one or more such files.
    def entry(name: bytes) -> bytes:
        return b"\x0a\x08location\x12" + bytes([len(name)]) + name

    graph = tmp_path / "model.onnx"
    graph.write_bytes(
        b"\x08\x07" + entry(b"model.onnx_data") + b"\x00" + entry(b"Constant_7_attr__value") + entry(b"../x")
    )
    assert _external_data_names(graph) == {"model.onnx_data", "Constant_7_attr__value"}
    assert _external_data_names(models_dir() / SHARED["all-minilm-l6-v2"] / "model.onnx") == set()
