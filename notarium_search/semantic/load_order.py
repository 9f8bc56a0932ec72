"""onnxruntime loaded before usearch, in every process that may load both.

The other order kills the process with SIGSEGV at `import onnxruntime`
(onnxruntime 1.32 with usearch 2.26 and its numkong kernels, reproduced
here: `python -c "import usearch.index, onnxruntime"` exits 139). usearch
is imported in two places only (vector_store's new index, vector_file's
restore), each calling `before_usearch` first. It was the package's
`__init__`, which made every semantic import load onnxruntime: `status`
with VECTOR_SEARCH read the pack's fingerprint and counted the vectors
with onnxruntime in memory (issue 34, item 5).
"""

from __future__ import annotations

import contextlib
import os

from notarium_search.settings import MODEL_SOCKET_ENV


def before_usearch() -> None:
    """Load onnxruntime now, unless this process never loads a model: a
    worker whose model is the service's model process (issue 34), where its
    libraries would be 20 MiB of memory for nothing. Cheap once loaded."""
    if not os.environ.get(MODEL_SOCKET_ENV):
        with contextlib.suppress(ImportError):
            import onnxruntime  # noqa: F401
