"""The ONNX embedder over the real shared model packs (real onnxruntime).

The packs live beside the repository (`../shared/models`, or
`NOTARIUM_MODELS_DIR`). Locally they may be absent (the tests skip); in CI
(`CI` set) their absence is a failure, never a silent skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from notarium_search.malloc_trim import MemoryTrimmer
from notarium_search.semantic.calibration import E5_SMALL_MARGIN, MINILM_L6_MARGIN
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.embedding import OnnxEmbedder, load_embedder
from notarium_search.semantic.model_config import ModelConfig, read_model_config
from notarium_search.semantic.onnx_session import ARENA_SHRINK, SPINNING
from tests.conftest import models_dir

MIB = 1 << 20

MINILM = "all-minilm-l6-v2-int8"
E5 = "multilingual-e5-small-int8"
DIM = 384
MINILM_FIELDS = {"dim": 384, "pooling": "mean", "max_tokens": 256, "normalize": True}
TEXTS = [
    "A short note.",
    "The quarterly report compares revenue across three regions and explains the decline in the north.",
    "Gardening tips: water tomatoes in the morning.",
    "Interoperability lets systems exchange data through open APIs and shared formats, without manual export.",
    "x",
]


def pack(name: str) -> Path:
    """A shared pack (found, or failed/skipped, by the shared `models_dir`)."""
    path = models_dir() / name
    if not (path / "model.onnx").is_file():
        pytest.fail(f"model pack missing: {path}")
    return path


@pytest.fixture(scope="module")
def minilm() -> OnnxEmbedder:
    return load_embedder(pack(MINILM), bulk_threads=2)


@pytest.fixture(scope="module")
def e5() -> OnnxEmbedder:
    return load_embedder(pack(E5), bulk_threads=2)


def copy_pack(source: Path, target: Path, files: tuple[str, ...] = ("model.onnx", "tokenizer.json")) -> Path:
    target.mkdir()
    for name in files:
        shutil.copyfile(source / name, target / name)
    return target


# ---------------------------------------------------------------- loading and shape


@pytest.mark.parametrize("fixture", ["minilm", "e5"])
def test_pack_loads_and_embeds_normalised_384_dim_rows(fixture: str, request: pytest.FixtureRequest) -> None:
    embedder: OnnxEmbedder = request.getfixturevalue(fixture)
    vectors = embedder.embed_passages(TEXTS)
    query = embedder.embed_query("what is interoperability")
    assert embedder.config.dim == DIM
    assert vectors.shape == (len(TEXTS), DIM)
    assert vectors.dtype == np.float32
    assert query.shape == (DIM,)
    assert query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)


def test_minilm_is_fed_token_type_ids_and_e5_is_not(minilm: OnnxEmbedder, e5: OnnxEmbedder) -> None:
    assert minilm.input_names == ("input_ids", "attention_mask", "token_type_ids")
    assert e5.input_names == ("input_ids", "attention_mask")
    assert np.isfinite(minilm.embed_passages(TEXTS)).all()


def test_config_comes_from_model_json(minilm: OnnxEmbedder, e5: OnnxEmbedder) -> None:
    # The margins measured for these models apply (their model.json has none): semantic/calibration.py.
    assert minilm.config == ModelConfig(MINILM, 384, 256, "mean", True, "", "", MINILM_L6_MARGIN)
    assert e5.config == ModelConfig(E5, 384, 512, "mean", True, "query: ", "passage: ", E5_SMALL_MARGIN)


def test_empty_list_gives_an_empty_matrix(minilm: OnnxEmbedder) -> None:
    vectors = minilm.embed_passages([])
    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32


def test_a_single_string_is_refused_rather_than_embedded_per_character(minilm: OnnxEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        minilm.embed_passages("one text")


# ---------------------------------------------------------------- batching, order, prefixes


def test_batch_equals_one_by_one_in_the_original_order(minilm: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    # Batches of 2 over 5 texts of mixed lengths: sorting by length moves
    # texts across batches, and the rows must still come back in order.
    monkeypatch.setattr(minilm, "batch_size", 2)
    batched = minilm.embed_passages(TEXTS)
    singles = np.vstack([minilm.embed_passages([text]) for text in TEXTS])
    np.testing.assert_allclose(batched, singles, atol=1e-4)
    assert (np.argmax(batched @ singles.T, axis=1) == np.arange(len(TEXTS))).all()


def test_batches_are_cut_by_attention_size_not_only_by_count(
    minilm: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's memory grows with batch x length^2: long texts go alone, short
    # ones together, so one long note cannot blow the arena up 16-fold.
    shapes: list[tuple[int, int]] = []
    run = minilm._run

    def spy(encodings: Sequence[Any], last: bool) -> Any:
        shapes.append((len(encodings), max(len(e.ids) for e in encodings)))
        return run(encodings, last)

    monkeypatch.setattr(minilm, "_run", spy)
    texts = ["word " * 600] * 3 + ["word " * 150] * 6 + ["a short passage about rivers"] * 20
    vectors = minilm.embed_passages(texts)
    budget = minilm.config.max_tokens**2
    assert sum(count for count, _ in shapes) == len(texts)
    assert all(count * width**2 <= budget for count, width in shapes if count > 1)
    assert shapes[:3] == [(1, minilm.config.max_tokens)] * 3  # longest first, one at a time
    assert max(count for count, _ in shapes) == minilm.batch_size  # short texts still batch
    np.testing.assert_allclose(vectors[-1], minilm.embed_passages(texts[-1:])[0], atol=1e-4)


def test_e5_batches_agree_with_single_texts_up_to_dynamic_quantisation(e5: OnnxEmbedder) -> None:
    # The e5 pack quantises activations per tensor, over the whole padded
    # batch: a text's vector moves slightly with its batch-mates (cosine
    # ≈ 0.998 measured), unlike MiniLM whose int8 weights load as float.
    batched = e5.embed_passages(TEXTS)
    singles = np.vstack([e5.embed_passages([text]) for text in TEXTS])
    assert ((batched * singles).sum(axis=1) > 0.99).all()
    assert (np.argmax(batched @ singles.T, axis=1) == np.arange(len(TEXTS))).all()


def test_e5_prefixes_make_query_and_passage_vectors_differ(minilm: OnnxEmbedder, e5: OnnxEmbedder) -> None:
    text = "interopérabilité des systèmes"
    e5_cosine = float(e5.embed_query(text) @ e5.embed_passages([text])[0])
    assert e5_cosine < 0.99
    # Without prefixes the two roles embed the same string.
    np.testing.assert_allclose(minilm.embed_query(text), minilm.embed_passages([text])[0], atol=1e-6)


def test_french_query_is_closest_to_the_passage_about_it(e5: OnnxEmbedder) -> None:
    passages = [
        "Les systèmes d'information échangent leurs données au moyen d'API ouvertes et de formats standard.",
        "Au jardin, on arrose les tomates le matin et on taille les rosiers en fin d'hiver.",
    ]
    scores = e5.embed_passages(passages) @ e5.embed_query("interopérabilité des systèmes")
    assert scores[0] > scores[1]


@pytest.mark.parametrize("fixture", ["minilm", "e5"])
def test_long_input_is_truncated_to_max_tokens(fixture: str, request: pytest.FixtureRequest) -> None:
    embedder: OnnxEmbedder = request.getfixturevalue(fixture)
    long_text = "word " * 5000
    vectors = embedder.embed_passages([long_text, long_text + "an entirely different ending " * 200])
    # Both texts keep the same first max_tokens tokens, so embed the same.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert embedder.embed_query(long_text).shape == (DIM,)


def test_passages_embedded_counts_passages_not_queries(minilm: OnnxEmbedder) -> None:
    before = minilm.passages_embedded
    minilm.embed_passages(TEXTS[:3])
    minilm.embed_query("not counted")
    minilm.embed_passages([])
    assert minilm.passages_embedded == before + 3


def test_queries_during_a_bulk_embed_on_another_thread_are_correct(minilm: OnnxEmbedder) -> None:
    expected = minilm.embed_query(TEXTS[3])
    bulk_expected = minilm.embed_passages(TEXTS * 8)
    bulk_result: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: bulk_result.append(minilm.embed_passages(TEXTS * 8)))
    worker.start()
    during = [minilm.embed_query(TEXTS[3]) for _ in range(5)]
    worker.join()
    for vector in during:
        np.testing.assert_allclose(vector, expected, atol=1e-5)
    np.testing.assert_allclose(bulk_result[0], bulk_expected, atol=1e-5)


# ---------------------------------------------------------------- fingerprint and overrides


def test_the_sessions_threads_do_not_spin_between_runs(minilm: OnnxEmbedder) -> None:
    """Spinning cost a query 28-32 ms of CPU for 9-11 ms of wall time, CPU the
    HTTP workers on the same cores lacked (semantic/embedding.py)."""
    options = minilm._session.get_session_options()
    assert options.get_session_config_entry(SPINNING) == "0"


def test_fingerprint_is_stable_and_follows_what_changes_vectors(minilm: OnnxEmbedder, e5: OnnxEmbedder) -> None:
    again = load_embedder(pack(MINILM))
    prefixed = load_embedder(pack(MINILM), {"query_prefix": "query: "})
    renamed = load_embedder(pack(MINILM), {"name": "english-small"})
    assert len(minilm.fingerprint) == 32
    assert int(minilm.fingerprint, 16) >= 0
    assert again.fingerprint == minilm.fingerprint
    assert renamed.fingerprint == minilm.fingerprint  # a label does not change vectors
    assert prefixed.fingerprint != minilm.fingerprint
    assert e5.fingerprint != minilm.fingerprint


def test_overrides_replace_a_missing_model_json(minilm: OnnxEmbedder, tmp_path: Path) -> None:
    bare = copy_pack(pack(MINILM), tmp_path / "bare")
    overrides = {**MINILM_FIELDS, "query_prefix": "", "passage_prefix": ""}
    embedder = load_embedder(bare, overrides)
    assert embedder.config == ModelConfig("bare", 384, 256, "mean", True, "", "")
    np.testing.assert_allclose(embedder.embed_passages(TEXTS), minilm.embed_passages(TEXTS), atol=1e-5)
    # Same model, same settings: same fingerprint, wherever the pack lives.
    assert embedder.fingerprint == minilm.fingerprint


def test_overrides_win_over_model_json_and_none_means_unset() -> None:
    config = read_model_config(pack(E5), {"max_tokens": 128, "query_prefix": None})
    assert config.max_tokens == 128
    assert config.query_prefix == "query: "


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pooling": "mean"}, "'dim' is unknown"),
        ({"dim": 384}, "'pooling' is unknown"),
        ({"dim": 384, "pooling": "max"}, "pooling must be one of mean, cls"),
        ({"dim": "wide", "pooling": "mean"}, "dim must be a positive integer"),
        ({"dim": 384, "pooling": "mean", "normalize": "perhaps"}, "normalize must be a boolean"),
        ({"dimension": 384}, "unknown model setting(s) dimension"),
    ],
)
def test_incomplete_or_invalid_settings_name_the_field(
    tmp_path: Path, overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(EmbedderUnavailable, match=re.escape(message)):
        read_model_config(tmp_path, overrides)


# ---------------------------------------------------------------- load failures


def test_missing_directory_is_reported(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="does not exist"):
        load_embedder(tmp_path / "nowhere")


def test_missing_model_file_is_named(tmp_path: Path) -> None:
    partial = copy_pack(pack(MINILM), tmp_path / "partial", ("tokenizer.json", "model.json"))
    with pytest.raises(EmbedderUnavailable, match=r"model\.onnx is missing"):
        load_embedder(partial)


def test_corrupt_model_file_is_reported_with_its_path(tmp_path: Path) -> None:
    broken = copy_pack(pack(MINILM), tmp_path / "broken", ("tokenizer.json", "model.json"))
    (broken / "model.onnx").write_bytes(b"\x00garbage, not a protobuf\xff" * 64)
    with pytest.raises(EmbedderUnavailable, match=r"cannot load .*broken/model\.onnx"):
        load_embedder(broken)


def test_unparsable_tokenizer_is_reported(tmp_path: Path) -> None:
    broken = copy_pack(pack(MINILM), tmp_path / "broken", ("model.onnx", "model.json"))
    (broken / "tokenizer.json").write_text('{"version": "1.0", "model": ', encoding="utf-8")
    with pytest.raises(EmbedderUnavailable, match=r"cannot parse .*tokenizer\.json"):
        load_embedder(broken)


def test_dim_that_does_not_match_the_model_output_is_refused() -> None:
    with pytest.raises(EmbedderUnavailable, match="produces 384-dimensional vectors but its dim is set to 768"):
        load_embedder(pack(MINILM), {"dim": 768})


def test_max_tokens_beyond_the_model_position_table_fails_at_load() -> None:
    with pytest.raises(EmbedderUnavailable, match=r"fails on a 1000-token input \(is max_tokens above"):
        load_embedder(pack(MINILM), {"max_tokens": 1000})


def test_missing_onnxruntime_is_a_clear_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbedderUnavailable) as caught:
        load_embedder(pack(MINILM))
    assert str(caught.value) == "onnxruntime is not installed (pip install 'notarium-search[semantic]')"


def test_module_imports_without_the_optional_packages() -> None:
    code = (
        "import sys; sys.modules['onnxruntime'] = None; sys.modules['tokenizers'] = None\n"
        "import notarium_search.semantic.embedding as e; print(e.load_embedder.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "load_embedder"


def _rss_anon_trimmed() -> int:
    """This process's anonymous memory (bytes), freed heap given back first."""
    trimmer = MemoryTrimmer()
    assert trimmer.available
    trimmer.trim()
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("RssAnon:"))
    return int(line.split()[1]) * 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_each_call_leaves_the_arena_as_a_shrink_would():
    """A call's last run gives the arena's unused chunks back: the load-time
    check's max_tokens text left e5-small's process ~30 MiB larger for good.
    Compared, in one process, with a shrink forced after the call."""
    import onnxruntime

    embedder = load_embedder(models_dir() / "multilingual-e5-small-int8")  # its check ran a 512-token text
    forced = onnxruntime.RunOptions()
    forced.add_run_config_entry(ARENA_SHRINK, "cpu:0")
    session = embedder._session

    def shrunk_apart() -> int:
        """Memory this call left, beyond what a forced shrink leaves."""
        left = _rss_anon_trimmed()
        feeds = {"input_ids": np.ones((1, 4), np.int64), "attention_mask": np.ones((1, 4), np.int64)}
        feeds |= {"token_type_ids": np.zeros((1, 4), np.int64)} if "token_type_ids" in embedder.input_names else {}
        if (table := embedder._word_table) is not None:  # e5-small's rows are read from its file
            feeds[table.input_name] = table.rows(feeds["input_ids"])
        session.run(None, feeds, forced)
        return left - _rss_anon_trimmed()

    assert shrunk_apart() < 8 * MIB  # after the load-time check
    embedder.embed_passages(["mot " * 600] * 3 + ["court"])  # three 512-token texts, one short
    assert shrunk_apart() < 8 * MIB
    embedder.embed_query("long " * 600)
    assert shrunk_apart() < 8 * MIB
