"""A space's index folder, besides the indexes themselves: the fingerprint
its manifest is held to, the cursor key, and the check that the lexical
index holds what its manifest says."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from notarium_search.index.manifest import Manifest
from notarium_search.lexical.cursor import KEY_BYTES, CursorCodec
from notarium_search.lexical.schema import fingerprint as lexical_fingerprint
from notarium_search.lexical.store import LexicalIndex
from notarium_search.notes import formats
from notarium_search.notes.collection import CollectionRules
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.storage.atomic import write_atomic
from notarium_search.storage.faults import StorageFault, describe, is_passing

CURSOR_KEY_FILE = "cursor.key"


def index_fingerprint(config: SpaceConfig, settings: Settings) -> str:
    """Everything that changes what a file becomes in the index. Each note
    format's version is in it (notes/formats.py): Markdown's is "parser12".
    Here rather than beside the indexer: every role opens its manifest with
    it, and a reader (the CLI's `search`) imports no indexer (issue 34)."""
    return (
        f"{lexical_fingerprint(config.analyzed)}-{formats.fingerprint(config.include)}"
        f"-max{settings.max_file_bytes}-{settings.oversize}"
        f"-collections-{CollectionRules(config.collections).fingerprint}"
    )


def cursor_codec(directory: Path, read_only: bool) -> CursorCodec:
    """The space's cursor signer, its key read from the folder or made there
    (0600). Read-only (the CLI, which issues no cursors): a key of its own
    when the folder has none."""
    path = directory / CURSOR_KEY_FILE
    try:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        key = b""
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and is_passing(exc) and not read_only:
            raise StorageFault(f"cannot read {path}: {describe(exc)}") from exc
        key = b""
    if len(key) >= KEY_BYTES:
        return CursorCodec(key)
    key = secrets.token_bytes(KEY_BYTES)
    if not read_only:
        save_cursor_key(directory, key)
    return CursorCodec(key)


def save_cursor_key(directory: Path, key: bytes) -> None:
    path = directory / CURSOR_KEY_FILE
    write_atomic(path, key.hex().encode("ascii"))
    os.chmod(path, 0o600)


def index_mismatch(lexical: LexicalIndex, manifest: Manifest) -> str | None:
    """Why the index does not hold what its manifest says, or None. The
    manifest is saved after each commit, with the commit's opstamp; an index
    whose meta.json names an older commit, or whose note count differs, lost
    or kept notes behind the manifest's back (an older meta.json with one
    segment fewer silently lost 750 notes in the attack review). A commit
    cut short by a crash (unsettled.json) is redone by the next pass instead."""
    if lexical.created or not manifest.file_count() or manifest.load_unsettled() is not None:
        return None
    opstamp = lexical.committed_opstamp()
    if manifest.opstamp is not None and opstamp is not None and opstamp < manifest.opstamp:
        return f"the index is older than its manifest (commit {opstamp}, manifest {manifest.opstamp})"
    held, expected = int(lexical.searcher().num_docs), manifest.indexed_notes()
    if held != expected:
        return f"the index holds {held} notes, its manifest {expected}"
    return None
