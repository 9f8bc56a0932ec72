"""The word-embedding table read from the pack's file, row by row
(semantic/word_table.py): the same vectors for less memory, and the graphs
it does not apply to loaded whole."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from notarium_search.semantic import word_table
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.word_table import ModelFileChanged, WordTable, split_graph
from tests.conftest import models_dir, run_child
from tests.semantic.test_tokenizing import HOSTILE
from tests.test_quality import collection

E5 = "multilingual-e5-small-int8"
E5_TABLE_ROWS = 250_037  # its vocabulary's rows of 384 int8 values: 92 MiB
MIB = 2**20
ROWS, WIDTH = 64, 8  # the tiny graphs' table: 2 KiB of float32


def texts(name: str, kind: str, count: int) -> list[str]:
    lines = (collection(name) / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines[:count]]


def test_e5_small_reads_its_word_table_from_the_file_and_gives_the_same_vectors(monkeypatch: pytest.MonkeyPatch):
    split = load_embedder(models_dir() / E5)
    assert split._word_table is not None
    assert split._word_table.layout.rows == E5_TABLE_ROWS
    assert split.input_names == ("input_ids", "attention_mask")  # what the embedder feeds itself
    monkeypatch.setattr(word_table, "MIN_TABLE_BYTES", 2**62)
    whole = load_embedder(models_dir() / E5)
    assert whole._word_table is None
    assert split.fingerprint == whole.fingerprint  # the same pack: the vectors built stay valid
    queries = [*texts("piaf-fr", "queries", 60), *texts("cranfield", "queries", 60), *HOSTILE]
    for query in queries:
        np.testing.assert_array_equal(split.embed_query(query), whole.embed_query(query), err_msg=query)
    passages = [*texts("piaf-fr", "corpus", 12), *texts("cranfield", "corpus", 12), "mot " * 600]
    np.testing.assert_array_equal(split.embed_passages(passages), whole.embed_passages(passages))


MEMORY = """
import ctypes, json, sys
from pathlib import Path
from notarium_search.semantic import word_table
from notarium_search.semantic.embedding import load_embedder
if sys.argv[2] == "whole":
    word_table.MIN_TABLE_BYTES = 2**62
embedder = load_embedder(Path(sys.argv[1]))
for text in ("Combien de personnes travaillent au ministère des sports ?", "what is the boundary layer", "漢字 🤖"):
    embedder.embed_query(text)
ctypes.CDLL("libc.so.6").malloc_trim(0)
status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
print(json.dumps({"rss": int(status["VmRSS"].split()[0]) * 1024, "table": embedder._word_table is not None}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_process_holding_e5_small_does_not_hold_its_word_table():
    """Measured apart, in a process each: 92 MiB of table read by row, not copied in."""
    pack = str(models_dir() / E5)
    split, whole = run_child(MEMORY, pack, "split"), run_child(MEMORY, pack, "whole")
    assert split["table"]
    assert not whole["table"]
    assert whole["rss"] - split["rss"] > 60 * MIB, (whole, split)


# ---------------------------------------------------------------- tiny graphs


def tiny_model(
    path: Path, *, indices: str = "input_ids", second_reader: bool = False, listed: bool = False
) -> np.ndarray[Any, Any]:
    """A graph whose first step looks its table up by `indices`, then scales
    the rows; the table it holds is returned. `listed`: the table is also a
    graph input (older exports list their weights so)."""
    table = np.arange(ROWS * WIDTH, dtype=np.float32).reshape(ROWS, WIDTH) / 7
    nodes = [
        helper.make_node("Gather", ["table", indices], ["rows"]),
        helper.make_node("Mul", ["rows", "two"], ["last_hidden_state"]),
    ]
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", WIDTH])]
    if second_reader:  # the table read again elsewhere: it must stay in the graph
        nodes.append(helper.make_node("ReduceSum", ["table"], ["total"], keepdims=0))
        outputs.append(helper.make_tensor_value_info("total", TensorProto.FLOAT, []))
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
        helper.make_tensor_value_info("other_ids", TensorProto.INT64, ["b", "s"]),
    ]
    if listed:
        inputs.append(helper.make_tensor_value_info("table", TensorProto.FLOAT, [ROWS, WIDTH]))
    graph = helper.make_graph(
        nodes,
        "tiny",
        inputs,
        outputs,
        initializer=[
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(np.array(2, dtype=np.float32), "two"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return table


@pytest.fixture
def small_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_table, "MIN_TABLE_BYTES", ROWS * WIDTH * 4)


def hidden(model: str | bytes, feeds: dict[str, Any]) -> Any:
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["last_hidden_state"], feeds)[0]


@pytest.mark.usefixtures("small_tables")
def test_a_split_graph_fed_with_the_rows_answers_as_the_whole_one(tmp_path: Path):
    path = tmp_path / "model.onnx"
    table = tiny_model(path)
    split = split_graph(path)
    assert split is not None
    graph, rows = split
    ids = np.array([[3, 0, 63, 3], [5, 5, 1, 62]], dtype=np.int64)
    feeds = {"input_ids": ids, "other_ids": ids}
    looked_up = rows.rows(ids)
    np.testing.assert_array_equal(looked_up, table[ids])
    np.testing.assert_array_equal(
        hidden(graph, {**feeds, rows.input_name: looked_up}),
        hidden(str(path), feeds),
    )
    with pytest.raises(ValueError, match="out of the table"):
        rows.rows(np.array([[ROWS]], dtype=np.int64))
    with pytest.raises(ValueError, match="out of the table"):
        rows.rows(np.array([[-1]], dtype=np.int64))
    # A pack replaced on disk (a new file renamed over it) is read as it was loaded.
    other = tmp_path / "other.onnx"
    tiny_model(other)
    other.write_bytes(other.read_bytes().replace(table.tobytes(), (table + 1).tobytes()))
    os.replace(other, path)
    np.testing.assert_array_equal(rows.rows(ids), table[ids])
    rows.close()


@pytest.mark.usefixtures("small_tables")
def test_graphs_without_a_lookup_to_take_out_load_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    by_other = tmp_path / "by_other.onnx"
    tiny_model(by_other, indices="other_ids")  # not the token ids
    assert split_graph(by_other) is None
    read_twice = tmp_path / "read_twice.onnx"
    tiny_model(read_twice, second_reader=True)
    assert split_graph(read_twice) is None
    small = tmp_path / "small.onnx"
    tiny_model(small)
    monkeypatch.setattr(word_table, "MIN_TABLE_BYTES", ROWS * WIDTH * 4 + 1)
    assert split_graph(small) is None


@pytest.mark.usefixtures("small_tables")
def test_unreadable_graphs_and_a_missing_library_load_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    descriptors = len(os.listdir("/proc/self/fd"))
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert split_graph(empty) is None
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 4096)
    assert split_graph(garbage) is None
    external = tmp_path / "external.onnx"
    tiny_model(external)
    model = onnx.load(str(external))
    onnx.save_model(model, str(external), save_as_external_data=True, location="weights.bin", size_threshold=0)
    assert split_graph(external) is None  # onnxruntime maps such weights itself
    fine = tmp_path / "fine.onnx"
    tiny_model(fine)
    missing = tmp_path / "missing"  # an `onnx` that cannot be imported, first on the graph reader's path
    (missing / "onnx").mkdir(parents=True)
    (missing / "onnx" / "__init__.py").write_text("raise ImportError('No module named onnx')\n")
    with monkeypatch.context() as patched:
        patched.setenv("PYTHONPATH", os.pathsep.join([str(missing), os.environ.get("PYTHONPATH", "")]))
        assert split_graph(fine) is None
    assert split_graph(fine) is not None  # the same graph, the library back
    assert len(os.listdir("/proc/self/fd")) == descriptors  # each file opened was closed


@pytest.mark.usefixtures("small_tables")
def test_weights_listed_as_inputs_leave_with_the_table(tmp_path: Path):
    path = tmp_path / "model.onnx"
    table = tiny_model(path, listed=True)
    split = split_graph(path)
    assert split is not None
    graph, rows = split
    ids = np.array([[1, 2, 3]], dtype=np.int64)
    feeds = {"input_ids": ids, "other_ids": ids}
    np.testing.assert_array_equal(hidden(graph, {**feeds, rows.input_name: rows.rows(ids)}), table[ids] * 2)
    rows.close()


@pytest.mark.usefixtures("small_tables")
def test_a_pack_written_over_in_place_is_refused_not_mixed(tmp_path: Path):
    """A new file renamed over the pack is read as loaded (above); one written
    into the same file would give the old graph the new table's rows."""
    path = tmp_path / "model.onnx"
    table = tiny_model(path)
    split = split_graph(path)
    assert split is not None
    rows = split[1]
    ids = np.array([[3, 4]], dtype=np.int64)
    np.testing.assert_array_equal(rows.rows(ids), table[ids])
    with path.open("r+b") as stream:  # as `cp new.onnx model.onnx` writes: the same inode
        data = stream.read().replace(table.tobytes(), (table + 1).tobytes())
        stream.seek(0)
        stream.write(data)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 1_000_000))
    with pytest.raises(ModelFileChanged, match="restart"):
        rows.rows(ids)
    rows.close()


@pytest.mark.usefixtures("small_tables")
def test_a_table_whose_bytes_are_not_its_shape_stays_in_the_graph(tmp_path: Path):
    path = tmp_path / "model.onnx"
    tiny_model(path)
    model = onnx.load(str(path))
    model.graph.initializer[0].dims[0] = ROWS * 2  # twice the rows its bytes hold
    onnx.save_model(model, str(path))
    assert split_graph(path) is None  # onnxruntime refuses it whole, with its reason


@pytest.mark.usefixtures("small_tables")
def test_the_graph_reader_imports_only_this_package_and_its_answer_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    path = tmp_path / "model.onnx"
    tiny_model(path)
    here = tmp_path / "started-here"  # a folder the service was started in, with a module of its own
    here.mkdir()
    (here / "numpy.py").write_text(f"open({str(here / 'ran')!r}, 'w').close()\n")
    monkeypatch.chdir(here)
    split = split_graph(path)
    assert split is not None
    split[1].close()
    assert not (here / "ran").exists()
    talkative = tmp_path / "talkative"  # anything printed before the answer is no answer
    talkative.mkdir()
    (talkative / "sitecustomize.py").write_text("print('hello from the site')\n")
    monkeypatch.setenv("PYTHONPATH", str(talkative))
    assert split_graph(path) is None


def test_a_split_graph_that_does_not_load_leaves_the_pack_whole(monkeypatch: pytest.MonkeyPatch):
    pack = models_dir() / "all-minilm-l6-v2-int8"
    broken = WordTable(os.open(pack / "model.onnx", os.O_RDONLY), word_table.TableLayout(0, 10, 384, "u1", "rows"))
    monkeypatch.setattr(word_table, "split_graph", lambda path: (b"not a graph", broken))
    embedder = load_embedder(pack)
    assert embedder._word_table is None
    assert embedder.embed_query("a query").shape == (384,)
    assert not broken._close.alive  # its descriptor closed with the table set aside
