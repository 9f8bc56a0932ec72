"""A search channel that lives in the tests only (docs/architecture.md,
"Recipe: a channel"): the notes whose tags hold a word of the query. One
folder and one `register_channel` line make it searched, fused, reported in
/status and followed by other workers (tests/index/test_channel_plugin.py)."""
