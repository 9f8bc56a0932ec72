"""The semantic channel: note fragments embedded by a local ONNX model, in a
usearch index per space. Imported only when VECTOR_SEARCH is on (numpy,
usearch and onnxruntime are optional dependencies). onnxruntime is loaded
before usearch wherever usearch is imported (load_order.py), not here: a
module of this package that needs neither (the pack's fingerprint, the
count of saved vectors) loads neither."""
