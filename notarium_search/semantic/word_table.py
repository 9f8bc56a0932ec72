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

A pack whose graph has no such lookup (another input, another op, a table
under `MIN_TABLE_BYTES`, or its bytes not found verbatim in the file) keeps
its table in the graph, as before.
"""

from __future__ import annotations

import mmap
import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from notarium_search.logsetup import get_logger

log = get_logger(__name__)

# Below this a table stays in the graph: all-MiniLM-L6's 30,522 rows of 384
# bytes are 11 MiB, and reading rows costs a system call each (~1 µs: ~10 µs
# a query, ~2 ms a batch of 16 passages of 512 tokens, against ~1 s of model).
MIN_TABLE_BYTES = 16 * 2**20
TOKEN_IDS_INPUT = "input_ids"  # noqa: S105 - a graph input's name
# The table's first bytes, looked for in the file; then all of them compared.
PROBE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Where the table's rows are in the file, and what the graph now takes instead."""

    offset: int
    rows: int
    width: int
    dtype: str  # numpy's name for the element type
    input_name: str  # the graph input fed with the rows looked up


class WordTable:
    """The rows of one table, read from the pack's file as it was when the
    graph was read (its descriptor is kept, and closed with the table)."""

    def __init__(self, fd: int, layout: TableLayout) -> None:
        self.layout = layout
        self.input_name = layout.input_name
        self._dtype = np.dtype(layout.dtype)
        self._row_bytes = layout.width * self._dtype.itemsize
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)

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
                raise OSError(f"the model file ends inside its word table (row {token})")
            view[at * size : (at + 1) * size] = row
        table = np.frombuffer(found, dtype=self._dtype).reshape(unique.size, self.layout.width)
        rows: np.ndarray[Any, Any] = table[inverse.reshape(ids.shape)]
        return rows

    def close(self) -> None:
        self._close()


def split_graph(model_path: Path) -> tuple[bytes, WordTable] | None:
    """The pack's graph without its word-table lookup, and the table read
    from the same file; None when the graph has no lookup to take out (or
    the `onnx` library is missing): the pack then loads whole."""
    try:
        import onnx  # noqa: F401  (checked here: the pack loads whole without it)
    except ImportError:
        log.info("word_table_kept", reason="the onnx library is not installed")
        return None
    fd = os.open(model_path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        split = _split(fd)
    except BaseException:
        os.close(fd)
        raise
    if split is None:
        os.close(fd)
        return None
    graph, layout = split
    return graph, WordTable(fd, layout)


def _split(fd: int) -> tuple[bytes, TableLayout] | None:
    import onnx

    try:
        mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # an empty file, a file that cannot be mapped
        log.info("word_table_kept", reason=_first_line(exc))
        return None
    with mapped:
        try:
            model = onnx.load_model_from_string(mapped[:])
        # The library's own errors (protobuf's DecodeError, ...): onnxruntime's load then says why.
        except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and onnx's own, undeclared
            log.info("word_table_kept", reason=_first_line(exc))
            return None
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
            return None  # weights in files of their own: onnxruntime maps those already
        found = _lookup(model)
        if found is None:
            return None
        node, table = found
        offset = _offset_in(mapped, table.raw_data)
    if offset is None:
        log.info("word_table_kept", reason="the table's bytes are not stored verbatim in the file")
        return None
    rows, width = (int(d) for d in table.dims)
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(table.data_type))
    layout = TableLayout(offset, rows, width, dtype.name, node.output[0])
    graph = model.graph
    graph.node.remove(node)
    graph.initializer.remove(table)
    graph.input.append(
        onnx.helper.make_tensor_value_info(layout.input_name, table.data_type, ["batch", "sequence", width])
    )
    return model.SerializeToString(), layout


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
