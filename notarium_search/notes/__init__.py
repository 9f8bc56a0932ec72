"""Files → parsed notes: which files are notes (scan), what is read from each
(parse, markdown), collections and activation fields. Pure but for reading files."""
