"""A model's word-embedding table read from the pack's file row by row,
instead of held in the process's memory.

A transformer's first step looks up one row of its word-embedding table per
token. In multilingual-e5-small that table is 250,037 rows of 384 bytes (its
250,002-piece vocabulary, int8): 92 MiB of the model's 113, while a query of
ten words reads ten rows. onnxruntime copies every initializer into the
process at load, so the table was ~92 MiB of every process holding the model
(the model process, or a single worker), whatever the notes' languages.

Here the pack's graph is split at load: the lookup (a `Gather` of the table
by `input_ids`) leaves the graph, its output becomes a graph input, and the
rows each run needs are read with `pread` from the pack's own `model.onnx`
at the offset where the table's bytes lie. The rows then live in the
kernel's page cache, shared and reclaimable, not in any process's memory;
no file is written (the packs may be read-only), and the values fed are the
same bytes the `Gather` would have produced, so the vectors are identical
(tests/semantic/test_word_table.py). Mapping the table instead was measured
and dropped: the kernel maps 16 pages around each one touched, and 625
queries had mapped 79 of its 92 MiB.

The graph is read and rewritten by the onnx library's own protobuf module,
in a short-lived process handed the file's descriptor, so that neither the
parse's peak nor the library stays in the process holding the model.

A pack whose graph has no such lookup (another input, another op, a table
under `MIN_TABLE_BYTES`, or its bytes not found verbatim in the file) keeps
its table in the graph, as before; so does every pack when the graph's
reader fails (the `word_table_kept` log line says why).
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import os
import subprocess
import sys
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from notarium_search.logsetup import get_logger
from notarium_search.semantic.embedder_errors import EmbedderUnavailable
from notarium_search.semantic.onnx_session import first_line

log = get_logger(__name__)

# Below this a table stays in the graph: all-MiniLM-L6's 30,522 rows of 384
# bytes are 11 MiB, and reading rows costs a system call each (~1 µs: ~10 µs
# a query, ~2 ms a batch of 16 passages of 512 tokens, against ~1 s of model).
MIN_TABLE_BYTES = 16 * 2**20
TOKEN_IDS_INPUT = "input_ids"  # noqa: S105 - a graph input's name
# The graph's reader: e5-small's 118 MB take ~1 s; a process that hangs is given up on.
SPLIT_SECONDS = 120
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding this package
# The table's first bytes, looked for in the file; then all of them compared.
PROBE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Where the table's rows are in the file, and what the graph now takes instead."""

    offset: int
    rows: int
    width: int
    dtype: str  # numpy's code for the element type, as stored
    input_name: str  # the graph input fed with the rows looked up


class ModelFileChanged(EmbedderUnavailable):
    """The pack's model.onnx was written over in place since it was loaded:
    its table's rows would no longer match the rest of the graph."""


class WordTable:
    """The rows of one table, read from the pack's file through the descriptor
    the graph was read from (kept, and closed with the table): a pack replaced
    by a new file renamed over it is still read as loaded. One written over in
    place is refused (`ModelFileChanged`): onnxruntime held its own copy of
    every weight, so such a write never changed the vectors before."""

    def __init__(self, fd: int, layout: TableLayout) -> None:
        self.layout = layout
        self.input_name = layout.input_name
        self._dtype = np.dtype(layout.dtype)
        self._row_bytes = layout.width * self._dtype.itemsize
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)
        self._loaded = _identity(os.fstat(fd))

    def rows(self, ids: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The table's rows for token ids of any shape: shape + (width,)."""
        unique, inverse = np.unique(ids, return_inverse=True)
        if unique.size and (unique[0] < 0 or unique[-1] >= self.layout.rows):
            raise ValueError(f"token id out of the table's {self.layout.rows} rows")
        found = bytearray(unique.size * self._row_bytes)
        view = memoryview(found)
        size, start = self._row_bytes, self.layout.offset
        for at, token in enumerate(unique.tolist()):
            row = os.pread(self._fd, size, start + token * size)
            if len(row) != size:
                break
            view[at * size : (at + 1) * size] = row
        else:
            if _identity(os.fstat(self._fd)) == self._loaded:  # ~1 µs a call
                table = np.frombuffer(found, dtype=self._dtype).reshape(unique.size, self.layout.width)
                # Native byte order (a no-op where it is little-endian already, as stored).
                native = table.astype(self._dtype.newbyteorder("="), copy=False)
                rows: np.ndarray[Any, Any] = native[inverse.reshape(ids.shape)]
                return rows
        raise ModelFileChanged("the model file was changed on disk since it was loaded: restart the service")

    def close(self) -> None:
        self._close()


def split_graph(model_path: Path) -> tuple[bytes, WordTable] | None:
    """The pack's graph without its word-table lookup, and the table read
    from the same file; None when the graph has no lookup to take out (or
    the `onnx` library is missing, or the graph cannot be read): the pack
    then loads whole.

    The graph is parsed in a short-lived process of its own, handed the
    file's descriptor: the onnx library (20 MiB of RSS once imported) and
    the parse's peak (the file and its parsed copy, +70 MiB for a moment)
    stay out of the process that holds the model for its whole life."""
    fd = os.open(model_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        split = _split_apart(fd)
    except BaseException:
        os.close(fd)
        raise
    if split is None:
        os.close(fd)
        return None
    graph, layout = split
    return graph, WordTable(fd, layout)


def _split_apart(fd: int) -> tuple[bytes, TableLayout] | None:
    # -P and this package's folder first: the child imports this very package, never a module
    # of the folder the service was started in; no stdin (MCP's stdio is the protocol's pipe).
    command = [sys.executable, "-P", "-m", __name__, str(fd), str(MIN_TABLE_BYTES)]
    # No empty entry: one would put the child's working folder back on its path.
    paths = [PACKAGE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    try:
        done = subprocess.run(
            command,
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            cwd="/",
            env=env,
            timeout=SPLIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:  # no process to be had, or one that hangs
        log.info("word_table_kept", reason=first_line(exc))
        return None
    head, _, graph = done.stdout.partition(b"\n")
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        log.info("word_table_kept", reason=f"the graph's reader ended with {done.returncode}: {reason[-1:]}")
        return None
    layout = _layout(head)
    if isinstance(layout, str):
        log.info("word_table_kept", reason=layout)
        return None
    return graph, layout


def _layout(head: bytes) -> TableLayout | str:
    """The layout the child's first line gives, or why there is none (its own
    reason, or an answer that is not one: anything it printed is mistrusted)."""
    try:
        answer = json.loads(head)
        fields = answer["layout"]
        if fields is None:
            return str(answer["reason"])
        layout = TableLayout(**fields)
    except (ValueError, KeyError, TypeError) as exc:
        return f"the graph's reader answered no layout: {first_line(exc)}"
    numbers = (layout.offset, layout.rows, layout.width)
    fits = all(type(n) is int and n >= 0 for n in numbers) and isinstance(layout.input_name, str)
    if not fits or layout.dtype not in _NUMPY_TYPES.values():
        return f"the graph's reader answered a layout that is not one: {layout}"
    return layout


def _answer(fd: int) -> None:
    """The child's side: one line of JSON (the layout, or why there is
    none), then the split graph's bytes."""
    try:
        proto = _onnx_proto()
    except (ImportError, OSError):
        split, reason = None, "the onnx library is not installed"
    else:
        split, reason = _split(proto, fd)
    layout = None if split is None else asdict(split[1])
    sys.stdout.buffer.write(json.dumps({"layout": layout, "reason": reason}).encode() + b"\n")
    if split is not None:
        sys.stdout.buffer.write(split[0])
    sys.stdout.buffer.flush()


def _onnx_proto() -> Any:
    """The onnx library's generated protobuf module (ModelProto and the
    rest), loaded alone: `import onnx` also loads ml_dtypes, 0.63 s of its
    1.1 s, for number types the split never needs."""
    found = importlib.util.find_spec("onnx")  # finds the package without running its __init__
    if found is None or not found.submodule_search_locations:
        raise ImportError("No module named onnx")
    path = Path(found.submodule_search_locations[0]) / "onnx_ml_pb2.py"
    spec = importlib.util.spec_from_file_location("onnx_ml_pb2", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _split(proto: Any, fd: int) -> tuple[tuple[bytes, TableLayout] | None, str]:
    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # an empty file, a file that cannot be mapped
        return None, first_line(exc)
    with mapped:
        model = proto.ModelProto()
        try:
            model.ParseFromString(mapped[:])
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError, by implementation
            return None, first_line(exc)
        if any(t.data_location == proto.TensorProto.EXTERNAL for t in model.graph.initializer):
            return None, "weights in files of their own (onnxruntime maps those)"
        found = _lookup(model)
        if found is None:
            return None, f"no lookup of a table of {MIN_TABLE_BYTES} bytes or more by {TOKEN_IDS_INPUT}"
        node, table = found
        dtype = _NUMPY_TYPES.get(proto.TensorProto.DataType.Name(table.data_type))
        if dtype is None:
            return None, f"a table of {proto.TensorProto.DataType.Name(table.data_type)}"
        rows, width = (int(d) for d in table.dims)
        if len(table.raw_data) != rows * width * np.dtype(dtype).itemsize:
            return None, "the table's bytes are not its shape's (onnxruntime says why)"
        offset = _offset_in(mapped, table.raw_data)
    if offset is None:
        return None, "the table's bytes are not stored verbatim in the file"
    layout = TableLayout(offset, rows, width, dtype, node.output[0])
    graph = model.graph
    graph.node.remove(node)
    graph.initializer.remove(table)
    for listed in [i for i in graph.input if i.name == table.name]:  # exports that list weights as inputs
        graph.input.remove(listed)
    fed = graph.input.add()
    fed.name = layout.input_name
    tensor = fed.type.tensor_type
    tensor.elem_type = table.data_type
    tensor.shape.dim.add().dim_param = "batch"
    tensor.shape.dim.add().dim_param = "sequence"
    tensor.shape.dim.add().dim_value = width
    return (model.SerializeToString(), layout), ""


# ONNX element types numpy holds as stored (raw_data is little-endian, whatever the machine).
_NUMPY_TYPES = {
    "FLOAT": "<f4",
    "DOUBLE": "<f8",
    "FLOAT16": "<f2",
    "UINT8": "u1",
    "INT8": "i1",
    "UINT16": "<u2",
    "INT16": "<i2",
    "UINT32": "<u4",
    "INT32": "<i4",
    "UINT64": "<u8",
    "INT64": "<i8",
}


def _lookup(model: Any) -> tuple[Any, Any] | None:
    """The graph's `Gather` of a large initializer by the token ids, when
    nothing else reads that initializer."""
    graph = model.graph
    tables = {t.name: t for t in graph.initializer if len(t.raw_data) >= MIN_TABLE_BYTES and len(t.dims) == 2}
    inputs = {i.name for i in graph.input}
    for node in graph.node:
        if node.op_type != "Gather" or len(node.input) != 2 or node.input[0] not in tables:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        readers = [n for n in graph.node if node.input[0] in n.input]
        if node.input[1] == TOKEN_IDS_INPUT and TOKEN_IDS_INPUT in inputs and axis == 0 and readers == [node]:
            return node, tables[node.input[0]]
    return None


def _offset_in(mapped: mmap.mmap, data: bytes) -> int | None:
    """Where `data` lies in the file, verbatim (the first place it does: any
    place holding the same bytes gives the same rows)."""
    at = mapped.find(data[:PROBE_BYTES])
    if at < 0 or at + len(data) > len(mapped):
        return None
    with memoryview(mapped) as whole, memoryview(data) as wanted:
        # A slice at a time: a copy of the whole table would be a second one for a moment.
        for start in range(0, len(data), PROBE_BYTES):
            end = min(start + PROBE_BYTES, len(data))
            if whole[at + start : at + end] != wanted[start:end]:
                return None
    return at


def _identity(stat: os.stat_result) -> tuple[int, int, int, int]:
    """What changes when a file is written over in place (not its ctime, which
    a new pack renamed over it changes too: the old file loses its name)."""
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


if __name__ == "__main__":
    MIN_TABLE_BYTES = int(sys.argv[2])
    _answer(int(sys.argv[1]))
