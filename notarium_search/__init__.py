"""notarium-search: hybrid search over folders of Markdown notes."""

__version__ = "0.1.0"
