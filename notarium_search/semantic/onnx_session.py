"""The onnxruntime session a pack is run by: its options, the run options
that give the arena back, and the inputs the embedder feeds it (the graph's
own, and the word table's rows when they are read from the file:
semantic/word_table.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    import numpy as np
except ImportError:  # lexical-only install: import_onnxruntime reports it
    np = None  # type: ignore[assignment]

from notarium_search.logsetup import get_logger
from notarium_search.semantic.embedder_errors import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy.typing as npt

    from notarium_search.semantic.word_table import WordTable

    Ids = npt.NDArray[np.int64]

log = get_logger(__name__)

INSTALL_HINT = "pip install 'notarium-search[semantic]'"

# The last run of each call (a query, a call's last batch of passages, the
# load-time check) gives the arena's unused chunks back (onnxruntime's
# "memory.enable_memory_arena_shrinkage"): the check's max_tokens text left
# e5-small's process 30 MiB larger for good (235 → 205 MiB RssAnon once
# shrunk), and a build's batches their peak. Measured side by side on 2 cores
# (2026-12-06): 64 passages 3.21 s without, 3.13 s with (noise); a query
# 7.23 → 7.29 ms p50, 10.12 → 10.11 p90.
ARENA_SHRINK = "memory.enable_memory_arena_shrinkage"
SPINNING = "session.intra_op.allow_spinning"
_REQUIRED_INPUTS = ("input_ids", "attention_mask")
_OPTIONAL_INPUTS = ("token_type_ids",)


def import_onnxruntime() -> Any:
    """onnxruntime, or EmbedderUnavailable saying what to install."""
    if np is None:
        raise EmbedderUnavailable(f"numpy is not installed ({INSTALL_HINT})")
    try:
        import onnxruntime
    except ImportError as exc:
        raise EmbedderUnavailable(f"onnxruntime is not installed ({INSTALL_HINT})") from exc
    return onnxruntime


def open_session(model_path: Path, threads: int) -> tuple[Any, WordTable | None]:
    """The pack's session, with its word table read from the file when it has
    one to take out (semantic/word_table.py)."""
    ort = import_onnxruntime()
    from notarium_search.semantic.word_table import split_graph

    split = split_graph(model_path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    # On an x86 CPU without VNNI (AVX2-only: AMD Zen 2/3, Intel before Ice Lake),
    # onnxruntime's u8s8 int8 kernels saturate 16-bit sums, and the int8 packs'
    # vectors come out wrong: on this project's dev machine (AMD EPYC, no VNNI)
    # "a famous line from Shakespeare" scored Hamlet 0.806 against a floor of
    # 0.817 calibrated on a VNNI machine (tests/semantic/test_relevance.py).
    # This option (onnxruntime PR 12088) makes those multiplications u8u8 on such
    # CPUs only: the same vectors everywhere; a VNNI CPU is unchanged.
    options.add_session_config_entry("session.x64quantprecision", "1")
    # One graph, run node after node: parallelism is inside each matrix kernel.
    options.inter_op_num_threads = 1
    # onnxruntime's threads spin, waiting for the next run, after each one: a
    # query's embedding cost 28-32 ms of CPU for 9-11 ms of wall time (e5-small,
    # 2 cores, a query every 10 ms), CPU the HTTP workers on the same cores then
    # lacked; without spinning 17-19 ms, for +1 ms of latency (p50 8.6-10.6 →
    # 9.8-11.7 ms), and bulk passages as fast (14.0-14.3 a second both ways).
    options.add_session_config_entry(SPINNING, "0")
    # Failures come back as exceptions carrying the same message; onnxruntime's
    # own coloured copy on stderr (and its warnings about unused initializers
    # of some exports) would only be noise in the service's log.
    options.log_severity_level = 4
    if split is not None:
        graph, table = split
        try:
            session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
            graph_inputs(session, table.input_name)
        # onnxruntime's private pybind11 types (InvalidProtobuf, Fail, ...) derive from Exception only.
        except Exception as exc:  # noqa: BLE001 - the graph as split does not load: the pack loads whole
            log.info("word_table_kept", reason=f"the split graph does not load: {first_line(exc)}")
            table.close()
        else:
            return session, table
    try:
        return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"]), None
    except Exception as exc:
        raise EmbedderUnavailable(f"cannot load {model_path}: {first_line(exc)}") from exc


def shrinking_run() -> Any:
    """Run options after which the session's arena gives its unused chunks back."""
    options = import_onnxruntime().RunOptions()
    options.add_run_config_entry(ARENA_SHRINK, "cpu:0")
    return options


Feed = Callable[["Ids", "Ids"], "Ids"]
FEEDS: Mapping[str, Feed] = {
    "input_ids": lambda ids, mask: ids,
    "attention_mask": lambda ids, mask: mask,
    # Single-segment texts: every token belongs to segment 0.
    "token_type_ids": lambda ids, mask: np.zeros_like(ids),
}


def graph_inputs(session: Any, rows_input: str | None) -> dict[str, Feed]:
    """The feeds of the graph's inputs, except the word table's rows (`rows_input`)."""
    names = [node.name for node in session.get_inputs() if node.name != rows_input]
    unknown = [name for name in names if name not in FEEDS]
    missing = [name for name in _REQUIRED_INPUTS if name not in names]
    if unknown or missing:
        raise EmbedderUnavailable(
            f"model inputs {names} are not supported: need {' and '.join(_REQUIRED_INPUTS)}"
            f" (optionally {', '.join(_OPTIONAL_INPUTS)}) and nothing else"
        )
    return {name: FEEDS[name] for name in names}


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
