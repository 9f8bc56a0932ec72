"""What the command line does with the indexes without a running service:
a space indexed now (`notarium-search index`), what each index holds
(`status`: a comparison of the files with the index's records, which a
running service's /status does not make), the index folders checked before
`serve`. The CLI sees these functions, `offline_search` (its `search`), the
service and the settings only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from notarium_search.index.indexer import SpaceIndexer
from notarium_search.index.manifest import named_skipped
from notarium_search.index.opening import NotIndexed, Role, open_space
from notarium_search.index.registry import why_unopened
from notarium_search.index.space import Space
from notarium_search.lexical import stored as stored_notes
from notarium_search.lexical.store import IndexLocked, IndexUnreadable
from notarium_search.notes.scan import SpaceUnavailable, check_root
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.storage.faults import StorageFault
from notarium_search.types import BuildStep, ChannelStatus, IndexProgress


class OpenFailed(RuntimeError):
    """The space could not open to be indexed: why, in one sentence."""


class BuildFailed(RuntimeError):
    """Indexing stopped: a lock another process took, the notes folder gone."""


def open_for_indexing(config: SpaceConfig, settings: Settings, full: bool) -> Space:
    """The space opened as its writer, for `notarium-search index` (`full`:
    every note read again); OpenFailed with one sentence when it cannot."""
    try:
        return open_space(config, settings, Role.WRITER, rebuild=full)
    except Exception as exc:  # a lock held, a folder it may not read: one sentence, not a traceback
        raise OpenFailed(f"space {config.name}: {why_unopened(config, exc)}") from exc


def build(space: Space, show: Callable[[BuildStep], None], embedder: Any) -> IndexProgress:
    """Index it now (index/building.py); BuildFailed when a lock or the notes folder stops it."""
    try:
        return space.writing.build(show, embedder)
    except (IndexLocked, SpaceUnavailable) as exc:
        raise BuildFailed(str(exc)) from exc
    finally:
        space.lexical.close()


def load_embedder(space: Space, settings: Settings) -> Any:
    """The configured model for a space with VECTOR_SEARCH, or None (the
    space's status then says why the semantic channel is unavailable)."""
    if space.semantic is None:
        return None
    from notarium_search.semantic.loading import load_configured_embedder  # onnxruntime: only when on

    try:
        return load_configured_embedder(settings)
    except Exception as exc:  # noqa: BLE001 - shown to the user; lexical indexing goes on
        space.model_unavailable(str(exc))
        return None


def model_fingerprint(settings: Settings) -> str | None:
    """The configured pack's fingerprint, or why there is none (a str starting "!")."""
    if not settings.vector_search:
        return None
    if settings.embed_url is not None:
        return REMOTE
    if settings.model_dir is None:
        return "!no model configured (NOTARIUM_MODEL_DIR)"
    try:
        from notarium_search.semantic.embedder_errors import EmbedderUnavailable
        from notarium_search.semantic.embedding import pack_fingerprint
    except ImportError as exc:  # a lexical-only install
        return f"!semantic extra not installed ({exc.name})"
    try:
        return pack_fingerprint(settings.model_dir, settings.model)
    except (EmbedderUnavailable, OSError) as exc:
        return f"!{exc}"


def space_row(settings: Settings, config: SpaceConfig, fingerprint: str | None) -> dict[str, Any]:
    """One space's row of `status`: "complete", "partial", "not indexed" or
    "folder unavailable", each channel's state, and in `detail` what is
    missing and what to run."""
    row: dict[str, Any] = {"space": config.name, "path": str(config.path), "notes": 0, "skipped": 0}
    row.update(state="not indexed", last_indexed=None, files=None, to_index=None, to_delete=None, detail=None)
    try:
        space = open_space(config, settings, Role.READER)
    except NotIndexed:
        unavailable = folder_unavailable(config)
        if unavailable is not None:
            row.update(state="folder unavailable", detail=unavailable)
            return row
        row["detail"] = f"run `notarium-search index {config.name}` (or start the service)"
        return row
    except (IndexUnreadable, StorageFault) as exc:
        # Read-only: reported, never repaired here (a running service may be
        # writing it this very moment; it repairs its own index).
        row.update(state="unreadable", detail=f"{exc}: the service rebuilds it, or run `notarium-search index`")
        return row
    except Exception as exc:  # noqa: BLE001 - one space that cannot open never stops the others' rows
        row.update(state="unavailable", detail=why_unopened(config, exc))
        return row
    try:
        manifest = space.manifest
        saved = manifest.path.stat().st_mtime  # saved after every commit, and at the end of every pass that wrote
        row["last_indexed"] = datetime.fromtimestamp(saved).astimezone().isoformat(timespec="seconds")
        skipped = manifest.skipped()
        status = space.status()  # the SpaceStatus /status gives, as a reader sees it
        row.update(notes=status.notes, skipped=len(skipped))
        row["skipped_notes"] = [{"path": note.path, "reason": note.reason} for note in named_skipped(skipped)]
        unsettled = manifest.load_unsettled()
        try:
            pending = SpaceIndexer(config, settings, space.lexical, manifest).pending()
        except SpaceUnavailable as exc:
            row.update(state="folder unavailable", detail=str(exc))
            return row
        row["semantic"] = _semantic_row(space, fingerprint)
        row["graph"] = _graph_row(status.graph)
    finally:
        space.lexical.close()
    row.update(files=pending.files, to_index=pending.changed, to_delete=pending.gone)
    missing = []
    if pending.changed:
        missing.append(f"{pending.changed} of {pending.files} files new or changed since indexed")
    if pending.gone:
        missing.append(f"{pending.gone} deleted files still in the index")
    if unsettled is not None:
        redone = "every note" if unsettled.everything else f"{len(unsettled.ids)} notes"
        missing.append(f"a commit under way, or cut short by a crash ({redone} to redo then)")
    if space.mismatch is not None:
        missing.append(f"{space.mismatch}: it is rebuilt from the notes")
    row["lexical"] = {"state": "partial" if missing else "complete"}
    semantic = row["semantic"]
    if semantic["state"] == "partial":
        left = semantic["total"] - semantic["embedded"]
        missing.append(f"{left} of {semantic['total']} fragments not embedded yet")
    row["state"] = "partial" if missing else "complete"
    if missing:
        row["detail"] = f"{'; '.join(missing)}: run `notarium-search index {config.name}` (or start the service)"
    return row


def folder_unavailable(config: SpaceConfig) -> str | None:
    """Why the space's notes folder cannot be read (one sentence), or None."""
    try:
        check_root(config.path)
        with os.scandir(config.path):
            pass
    except SpaceUnavailable as exc:
        return str(exc)
    except OSError as exc:
        return f"the notes folder {config.path} cannot be listed: {exc.strerror} (the service's user needs read access)"
    return None


def _semantic_row(space: Space, fingerprint: str | None) -> dict[str, Any]:
    """ "off", "unavailable" (with the reason), "complete" or "partial", with
    the fragments embedded and wanted, as /status counts them."""
    if fingerprint is None:
        return {"state": "off", "embedded": None, "total": None, "reason": None}
    if fingerprint.startswith("!"):
        return {"state": "unavailable", "embedded": None, "total": None, "reason": fingerprint[1:]}
    from notarium_search.semantic.counting import count_embedded  # only when on

    notes = (payload.to_note() for payload in stored_notes.all_payloads(space.lexical))
    remote = fingerprint == REMOTE
    count = count_embedded(space.directory / "vectors", None if remote else fingerprint, notes)
    state = "complete" if count.embedded == count.total else "partial"
    reason = REMOTE_CAVEAT if remote else count.stale
    return {"state": state, "embedded": count.embedded, "total": count.total, "reason": reason}


# With NOTARIUM_EMBED_URL the model's identity is the server's answer: status
# does not call the server, so it counts the saved vectors whatever made them.
REMOTE = "remote"
REMOTE_CAVEAT = "vectors from the embedding server (NOTARIUM_EMBED_URL), its model not checked here: see /status"


def _graph_row(status: ChannelStatus) -> dict[str, Any]:
    """ "off", or "ready" with the links read from the index (as /status)."""
    if status.state.value == "disabled":
        return {"state": "off", "links": None, "dangling": None}
    return {"state": status.state.value, "links": status.links, "dangling": status.dangling}
