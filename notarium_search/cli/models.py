"""`models download` (a pack from the Hugging Face hub, asked for explicitly),
`models list` (the download's presets) and `models check`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from notarium_search.cli import EXIT_SETUP, EXIT_USAGE
from notarium_search.logsetup import configure_logging
from notarium_search.settings import Settings

# `models check` embeds one query and one passage of it, and prints their cosine.
CHECK_QUERY = "Comment préparer un bon café ?"
CHECK_PASSAGE = "Pour un café filtre, versez l'eau chaude lentement sur la mouture fraîchement moulue."
UNIT_TOLERANCE = 1e-3  # |1 - norm| of a normalised float32 vector


def models_command(settings: Settings, args: argparse.Namespace) -> int:
    # What the loaders log goes to stderr, warnings and worse only: stdout is
    # the command's one-line answer (unconfigured, structlog printed every
    # level there, the tokenizer's route included).
    configure_logging("warning", sys.stderr, on_first_use=True)
    if args.models_command == "check":
        return _models_check(settings, args)
    if args.models_command == "list":
        from notarium_search.model_packs import preset_table

        print(preset_table())
        return 0
    return _models_download(args)


def _models_check(settings: Settings, args: argparse.Namespace) -> int:
    """Load the pack with the service's loader and settings ([model]
    overrides, threads, batch size included), embed a French query and
    passage, check their vectors, and print one line either way: an image
    build runs it, so a pack that cannot work fails the build."""
    from pathlib import Path

    from msgspec.structs import replace

    from notarium_search.errors import EmbedderUnavailable
    from notarium_search.model_packs import load_configured_embedder

    pack = Path(args.pack) if args.pack else settings.model_dir
    if pack is None:
        print("notarium-search: no model pack to check: name its folder, or set NOTARIUM_MODEL_DIR", file=sys.stderr)
        return EXIT_SETUP
    try:
        embedder = load_configured_embedder(replace(settings, model_dir=pack))
        summary = _embed_test_pair(embedder)
        graph_mb = (pack / "model.onnx").stat().st_size / 1e6
    except (EmbedderUnavailable, OSError) as exc:
        reason = " ".join(str(exc).split())  # one line, whatever onnxruntime or a parser wrote
        print(f"notarium-search: model pack {pack} is not usable: {reason}", file=sys.stderr)
        return EXIT_SETUP
    config = embedder.config
    prefixes = f"prefixes {config.query_prefix!r} / {config.passage_prefix!r}"
    overrides = sorted(k for k, v in settings.model.items() if v is not None)
    print(
        f"model pack {pack} works: {config.name}, dim {config.dim}, pooling {config.pooling},"
        f" {'normalized' if config.normalize else 'not normalized'},"
        f" {prefixes if config.query_prefix or config.passage_prefix else 'no prefixes'},"
        f" max_tokens {config.max_tokens}, model.onnx {graph_mb:.1f} MB, {summary}"
        + (f" ([model] of the configuration sets {', '.join(overrides)})" if overrides else "")
    )
    return 0


def _embed_test_pair(embedder: Any) -> str:
    """Embed CHECK_QUERY and CHECK_PASSAGE; EmbedderUnavailable unless both
    vectors have the pack's dim, are finite and (when it normalises) unit."""
    import numpy as np

    from notarium_search.errors import EmbedderUnavailable

    config = embedder.config
    try:
        query = np.asarray(embedder.embed_query(CHECK_QUERY))
        passages = np.asarray(embedder.embed_passages([CHECK_PASSAGE]))
    # onnxruntime raises private types deriving from Exception only (semantic/embedding.py).
    except Exception as exc:  # re-raised as the pack's failure, in one line
        raise EmbedderUnavailable(f"embedding the test pair failed: {type(exc).__name__}: {exc}") from exc
    for role, vector, shape in (("query", query, (config.dim,)), ("passage", passages, (1, config.dim))):
        if vector.shape != shape:
            raise EmbedderUnavailable(f"the test {role} vector has shape {vector.shape}, expected {shape}")
        if not np.isfinite(vector).all():
            raise EmbedderUnavailable(f"the test {role} vector holds NaN or infinite values")
    passage = passages[0]
    norms = float(np.linalg.norm(query)), float(np.linalg.norm(passage))
    if config.normalize and any(abs(1.0 - n) > UNIT_TOLERANCE for n in norms):
        raise EmbedderUnavailable(f"normalize is on but the test vectors have lengths {norms[0]:.4f}, {norms[1]:.4f}")
    if min(norms) == 0.0:
        raise EmbedderUnavailable("a test vector is all zeros")
    cosine = float(np.dot(query, passage)) / (norms[0] * norms[1])
    return f"cosine of a French query and its passage {cosine:.3f}"


# Options that describe a repository's files; a preset already says all of them.
REPOSITORY_OPTIONS = ("onnx_file", "dim", "pooling", "query_prefix", "passage_prefix")


def _models_download(args: argparse.Namespace) -> int:
    """A preset by name, else a repository with explicit options; every
    failure (offline, gated, a checksum refused) is one line on stderr and
    exit 2, with nothing left at the target."""
    from pathlib import Path

    from notarium_search.model_packs import PRESETS, ModelDownloadError, download_model, download_preset

    preset = PRESETS.get(args.model)
    try:
        if preset is not None:
            extra = [f"--{name.replace('_', '-')}" for name in REPOSITORY_OPTIONS if getattr(args, name) is not None]
            if extra:
                print(
                    f"notarium-search: {', '.join(extra)} describe a repository; the preset {preset.name} sets them"
                    f" (download {preset.repo_id} instead to choose them)",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            path = download_preset(
                preset,
                Path(args.target),
                args.timeout,
                revision=args.revision,
                sha256=args.sha256,
                hub_url=args.hub_url,
            )
        elif "/" not in args.model:
            known = ", ".join(PRESETS)
            print(f"notarium-search: {args.model!r} is neither a preset ({known}) nor owner/name", file=sys.stderr)
            return EXIT_USAGE
        else:
            path = download_model(
                args.model,
                Path(args.target),
                args.timeout,
                dim=args.dim,
                pooling=args.pooling,
                query_prefix=args.query_prefix,
                passage_prefix=args.passage_prefix,
                onnx_file=args.onnx_file,
                revision=args.revision or "main",
                sha256=args.sha256,
                hub_url=args.hub_url,
            )
    except ModelDownloadError as exc:
        print(f"notarium-search: {exc}", file=sys.stderr)
        return EXIT_SETUP
    print(f"model saved in {path}: check it with `notarium-search models check {path}`, then set NOTARIUM_MODEL_DIR")
    return 0
