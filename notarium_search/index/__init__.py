"""Keeping one space's indexes in step with its files: the space (its one
writer), the indexing passes, the manifest, the watcher, the index folder."""
