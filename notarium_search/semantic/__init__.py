"""The semantic channel: note fragments embedded by a local ONNX model, in a
usearch index per space. Imported only when VECTOR_SEARCH is on (numpy,
usearch and onnxruntime are optional dependencies)."""

import contextlib
import os

from notarium_search.settings import MODEL_SOCKET_ENV

# onnxruntime must be loaded before usearch in a process: the other order
# kills the process with SIGSEGV at `import onnxruntime` (onnxruntime 1.32 with
# usearch 2.26 and its numkong kernels, reproduced here:
# `python -c "import usearch.index, onnxruntime"` exits 139). Not in a worker
# whose model is the service's model process (issue 34): it never loads one,
# and onnxruntime's libraries are 20 MiB of its memory.
if not os.environ.get(MODEL_SOCKET_ENV):
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
