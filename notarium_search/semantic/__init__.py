"""The semantic channel: note fragments embedded by a local ONNX model, in a
usearch index per space. Imported only when VECTOR_SEARCH is on (numpy,
usearch and onnxruntime are optional dependencies)."""

import contextlib

# onnxruntime must be loaded before usearch in a process: the other order
# kills the process with SIGSEGV at `import onnxruntime` (onnxruntime 1.32 with
# usearch 2.26 and its numkong kernels, reproduced here:
# `python -c "import usearch.index, onnxruntime"` exits 139).
with contextlib.suppress(ImportError):
    import onnxruntime  # noqa: F401
