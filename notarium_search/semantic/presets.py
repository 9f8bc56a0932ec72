"""Named model presets for `notarium-search models download NAME DIR`.

Each preset says everything a hub repository does not: which ONNX file of
the repository to take (the int8 graph, not the 470 MB fp32 one), the
pooling (Xenova exports carry no sentence-transformers files), prefixes,
maximum length, the relevance margin measured for the model
(semantic/calibration.py; none when never measured) and, where known, the
commit and the SHA-256 of the graph, so that a download is the same file
a year later.

Where the pins come from (docs/models.md, "Presets"): the e5-small and
MiniLM-L6 commits and SHA-256s are the values several public projects pin
for these files (with the same byte sizes); they could not be checked
against huggingface.co from where this was written. The other two follow
`main` and are checked against the hub's own LFS SHA-256 only.
"""

from __future__ import annotations

from dataclasses import dataclass

from notarium_search.semantic.calibration import E5_SMALL_MARGIN, MINILM_L6_MARGIN


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    repo_id: str
    onnx_file: str
    dim: int
    pooling: str
    max_tokens: int
    query_prefix: str = ""
    passage_prefix: str = ""
    # A commit (40 hex digits) pins every file of the pack; "main" follows the branch.
    revision: str = "main"
    # SHA-256 of onnx_file at that revision; None: only the hub's own checksum is checked.
    sha256: str | None = None
    relevance_margin: float | None = None  # None: never measured, no floor
    summary: str = ""


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            name="multilingual-e5-small",
            repo_id="Xenova/multilingual-e5-small",
            onnx_file="onnx/model_quantized.onnx",  # int8, 118 MB; onnx/model.onnx is fp32, 470 MB
            dim=384,
            pooling="mean",
            max_tokens=512,
            query_prefix="query: ",
            passage_prefix="passage: ",
            revision="761b726dd34fb83930e26aab4e9ac3899aa1fa78",
            sha256="f80102d3f2a1229f387d3c81909990d8945513e347b0eab049f7de3c6f98c193",
            relevance_margin=E5_SMALL_MARGIN,
            summary="the default for French and mixed vaults; ~100 languages",
        ),
        Preset(
            name="all-minilm-l6-v2",
            repo_id="Xenova/all-MiniLM-L6-v2",
            onnx_file="onnx/model_quantized.onnx",  # int8, 23 MB
            dim=384,
            pooling="mean",
            max_tokens=256,  # what sentence-transformers trained and truncates it at
            revision="751bff37182d3f1213fa05d7196b954e230abad9",
            sha256="afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1",
            relevance_margin=MINILM_L6_MARGIN,
            summary="small and fast, English",
        ),
        Preset(
            name="paraphrase-multilingual-minilm-l12-v2",
            repo_id="Xenova/paraphrase-multilingual-MiniLM-L12-v2",
            onnx_file="onnx/model_quantized.onnx",
            dim=384,
            pooling="mean",
            max_tokens=128,  # its sentence-transformers max_seq_length
            summary="multilingual alternative, 50+ languages; not measured here",
        ),
        Preset(
            name="bge-m3",
            repo_id="BAAI/bge-m3",
            onnx_file="onnx/model.onnx",  # fp32: the graph names its 2.27 GB of weights, fetched beside it
            dim=1024,
            pooling="cls",
            max_tokens=512,  # it accepts 8,192, but attention grows with the square (docs/models.md)
            summary="large, 100+ languages, 1024 dimensions; a few GB of RAM; not measured here",
        ),
    )
}


def preset_table() -> str:
    """`models list`: one line per preset, then what each pins."""
    lines = []
    for preset in PRESETS.values():
        pins = [f"revision {preset.revision[:12] if preset.revision != 'main' else 'main (not pinned)'}"]
        pins.append(f"sha256 {preset.sha256[:12]}…" if preset.sha256 else "sha256 from the hub only")
        margin = "no margin (not measured)"
        if preset.relevance_margin is not None:
            margin = f"margin {preset.relevance_margin}"
        prefixes = "no prefixes"
        if preset.query_prefix or preset.passage_prefix:
            prefixes = f"prefixes {preset.query_prefix!r}/{preset.passage_prefix!r}"
        lines.append(
            f"{preset.name}: {preset.summary}\n"
            f"    {preset.repo_id} {preset.onnx_file}, dim {preset.dim}, pooling {preset.pooling},"
            f" max_tokens {preset.max_tokens}, {prefixes}, {margin}; {', '.join(pins)}"
        )
    return "\n".join(lines)
