"""The graph channel: wiki-links between notes (links) and the channel that
ranks the neighbours of good hits (channel)."""
