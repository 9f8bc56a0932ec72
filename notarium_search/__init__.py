"""notarium-search: hybrid search over folders of Markdown notes."""

from importlib.metadata import PackageNotFoundError, version

# The one version string is pyproject.toml's; the code reads it here, from the
# installed package's metadata (the API schema, the MCP server, --version).
try:
    __version__ = version("notarium-search")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
