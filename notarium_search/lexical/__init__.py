"""The lexical channel: Tantivy BM25 over notes."""
