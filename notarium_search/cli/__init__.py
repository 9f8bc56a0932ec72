"""`notarium-search` command line: serve, mcp, index, search, status, models.

The package's face is `main`; each command lives in its own module, imported
only when it runs (a `search` from the shell loads no server code):
`serving` (serve, mcp), `indexing` (index, status), `searching` (search),
`models` (models download, models list, models check).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from msgspec.structs import replace

from notarium_search.settings import ConfigError, Settings, load_settings

EXIT_USAGE = 2
# What the command needs from the machine is not there (a writable index
# folder, a usable model pack): one line on stderr says why; nothing was done.
EXIT_SETUP = 2
# numpy's OpenBLAS keeps one thread per core and wakes them for every matrix
# product. The service's products are small (a filtered search over at most
# 2,000 fragments) and run beside onnxruntime's own threads; with the model
# embedding on both cores, those wake-ups put a 2,000 × 384 product at 8.1 ms
# p99 against 0.07 ms on one thread (docs/benchmarks.md, optimisation log).
# Read when numpy loads, which the semantic modules do after this.
BLAS_THREADS = "1"


# The command → the module and function that run it.
COMMANDS = {
    "serve": ("serving", "serve_command"),
    "mcp": ("serving", "mcp_command"),
    "index": ("indexing", "index_command"),
    "status": ("indexing", "status_command"),
    "search": ("searching", "search_command"),
    "models": ("models", "models_command"),
}


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)  # an operator's own setting wins
    args = _parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        print(f"notarium-search: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    module, function = COMMANDS[args.command]
    handler: Callable[[Settings, argparse.Namespace], int] = getattr(
        importlib.import_module(f"notarium_search.cli.{module}"), function
    )
    return handler(settings, args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="notarium-search", description="Hybrid search over folders of Markdown notes."
    )
    parser.add_argument("--config", help="TOML config file (default: $NOTARIUM_CONFIG)")
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP service (indexes every space in the background)")
    sub.add_parser("mcp", help="serve the MCP tools over stdio, for assistants that start it (docs/mcp.md)")
    index = sub.add_parser("index", help="index a space now, with a progress bar (Ctrl+C stops safely)")
    index.add_argument("space")
    index.add_argument("--full", action="store_true", help="rebuild from scratch instead of updating")
    search = sub.add_parser("search", help="search an indexed space")
    search.add_argument("space")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--sort", choices=["relevance", "updated", "created"], default="relevance")
    search.add_argument("--folder")
    search.add_argument("--tag", action="append", default=[])
    search.add_argument("--json", action="store_true", help="print the API's JSON body")
    status = sub.add_parser("status", help="what each space's index holds")
    status.add_argument("--json", action="store_true")
    models = sub.add_parser("models", help="embedding models (docs/models.md)")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    download = models_sub.add_parser(
        "download", help="fetch a pack from the Hugging Face hub: a preset (models list) or a repository"
    )
    download.add_argument("model", help="a preset name (models list), or a hub repository owner/name")
    download.add_argument("target", help="new directory for the pack, then point NOTARIUM_MODEL_DIR at it")
    download.add_argument("--revision", help="a commit, tag or branch (default: the preset's pin, else main)")
    download.add_argument("--sha256", help="the ONNX graph's expected SHA-256 (replaces the preset's)")
    download.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the hub's answers")
    download.add_argument("--hub-url", default=None, help="a hub mirror (default: $HF_ENDPOINT, else huggingface.co)")
    repository = download.add_argument_group("a repository without a preset")
    repository.add_argument("--onnx-file", help="graph path in the repository, e.g. onnx/model_quantized.onnx")
    repository.add_argument("--dim", type=int)
    repository.add_argument("--pooling", choices=["mean", "cls"])
    repository.add_argument("--query-prefix")
    repository.add_argument("--passage-prefix")
    models_sub.add_parser("list", help="the presets models download knows, with what each pins")
    check = models_sub.add_parser(
        "check", help="load a pack as the service does and embed a test pair: one line, exit 2 if it is not usable"
    )
    check.add_argument("pack", nargs="?", help="the pack's folder (default: NOTARIUM_MODEL_DIR)")
    return parser


class _Version(argparse.Action):
    """argparse's "version" action, reading the version only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from notarium_search import __version__

        print(f"notarium-search {__version__}")
        parser.exit()


def only(settings: Settings, name: str) -> Settings:
    return replace(settings, spaces=tuple(s for s in settings.spaces if s.name == name))


def unknown_space(settings: Settings, name: str) -> int:
    known = ", ".join(s.name for s in settings.spaces) or "none configured"
    print(f"notarium-search: no space named {name!r} (known: {known})", file=sys.stderr)
    return EXIT_USAGE
