"""notarium-search: hybrid search over folders of Markdown notes."""

from functools import cache


# The one version string is pyproject.toml's; the code reads it here, from the
# installed package's metadata (the API schema, the MCP server, --version).
# Read on first use (PEP 562): importing importlib.metadata took ~28 ms of
# every `notarium-search search` from the shell, which never shows it.
def __getattr__(name: str) -> str:
    if name == "__version__":
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("notarium-search")
    except PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"
