"""How `spaces_root` is read: as one space when the folder is a vault, else
as a folder whose sub-folders are spaces.

Pointed at a vault (the likeliest first try), reading each sub-folder as a
space dropped every note directly in the vault (7 of a real vault's 14) and
every sub-folder whose name is no valid space name (`Daily`). A folder that
holds notes directly, or `.obsidian/` (Obsidian opens such a folder as one
vault), is therefore one space, its sub-folders included: nothing of it is
left out. `[spaces.NAME]` tables that name the folder or one of its
sub-folders win: the user has said how the folder is cut, and a root of
several vaults read as before keeps its spaces, their URLs and indexes."""

from __future__ import annotations

import contextlib
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from notarium_search.settings.declared import IgnoredFolder, RootReading, valid_space_name
from notarium_search.settings.readers import ConfigError, empty_path, read_path

# What counts as a note directly in the root. Settings sit below notes/ and
# cannot ask its formats (spaces.py, REGISTERED_FORMATS): Markdown is the one
# format a vault is made of.
NOTE_SUFFIX = ".md"
OBSIDIAN = ".obsidian"
# The name of a whole-folder space whose folder's name gives no valid one
# (`日記`, `/`).
FALLBACK_NAME = "vault"
SHOWN = 3  # notes or folders named in a reason before "…"


class RootListing(msgspec.Struct):
    """What is directly in the root: its visible sub-folders, the notes, whether
    it holds `.obsidian/`, and the entries that could not be looked at."""

    folders: list[Path] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    obsidian: bool = False
    unreachable: list[IgnoredFolder] = msgspec.field(default_factory=list)


def name_from(text: str) -> str:
    """A space name made from a folder's name (`Mes Notes (2024)` →
    `mes-notes-2024`), possibly empty or still invalid (`日記` → ``)."""
    ascii_name = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9_-]+", "-", ascii_name).strip("-_")


def whole_folder_name(folder: Path) -> str:
    """The name of a space that is a whole folder: its name made valid, else FALLBACK_NAME."""
    name = name_from(folder.name)
    return name if valid_space_name(name) else FALLBACK_NAME


def list_root(root: Path) -> RootListing:
    """The root's entries. Hidden ones are tool state (`.git`, `.trash`), never
    spaces nor notes, except that `.obsidian/` marks a vault. An entry whose
    kind cannot be known (a link to nothing, no permission to look) is listed
    as unreachable: a space that would vanish without a word otherwise."""
    if not root.is_dir():
        raise ConfigError(f"spaces_root {root} is not a directory")
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise ConfigError(f"spaces_root {root} cannot be listed: {exc.strerror or exc}") from exc
    listing = RootListing()
    for entry in entries:
        if entry.name.startswith("."):
            with contextlib.suppress(OSError):  # a hidden entry is never reported
                listing.obsidian = listing.obsidian or (entry.name == OBSIDIAN and entry.is_dir())
            continue
        try:
            if entry.is_dir():
                listing.folders.append(entry)
            elif entry.is_file():
                if entry.suffix.lower() == NOTE_SUFFIX:
                    listing.notes.append(entry.name)
            elif entry.is_symlink():
                why = f"a symbolic link to {os.readlink(entry)}, which is not there"
                listing.unreachable.append(IgnoredFolder(entry, why, None))
        except OSError as exc:
            why = f"cannot be looked at: {exc.strerror or exc}"
            listing.unreachable.append(IgnoredFolder(entry, why, None))
    return listing


def claiming_tables(root: Path, listing: RootListing, tables: Mapping[str, Any], base_dir: Path) -> list[str]:
    """The `[spaces.NAME]` tables that name the root or one of its sub-folders
    (by their name without a path: the sub-folder of that name; or by a path),
    each as a phrase for a reason. A malformed table is left to spaces.py,
    which refuses it with its name."""
    names = {folder.name for folder in listing.folders}
    here = root.resolve()
    claims = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            continue
        path = table.get("path")
        if path is None:
            if name in names:
                claims.append(f"[spaces.{name}] names its sub-folder {name}")
        elif isinstance(path, str) and not empty_path(path):
            folder = read_path(path, base_dir).resolve()
            if folder == here:
                claims.append(f"[spaces.{name}] names this folder")
            elif folder.parent == here:
                claims.append(f"[spaces.{name}] names its sub-folder {folder.name}")
    return claims


def read_root(root: Path, listing: RootListing, claims: list[str]) -> RootReading:
    """Whether the root is one space (a vault no table cuts), and why."""
    if (listing.obsidian or listing.notes) and not claims:
        name = whole_folder_name(root)
        held = []
        if listing.obsidian:
            held.append(f"{OBSIDIAN}/ (an Obsidian vault)")
        if listing.notes:
            held.append(f"{_notes(listing.notes)} directly in it ({_shown(listing.notes)})")
        reason = f"it holds {' and '.join(held)}: served as one space, {name}, with its sub-folders"
        would_be = [folder.name for folder in listing.folders if valid_space_name(folder.name)]
        if would_be:
            reason += (
                f" ({_shown(would_be)} included: to make each sub-folder a space instead, name one in a"
                " [spaces.NAME] table)"
            )
        return RootReading(root, name, reason)
    if claims:
        return RootReading(root, None, f"its sub-folders are spaces: {claims[0]}")
    return RootReading(root, None, f"its sub-folders are spaces: it holds no note directly and no {OBSIDIAN}/")


def notes_in_no_space(root: Path, listing: RootListing, claims: list[str]) -> IgnoredFolder:
    """The root itself as an ignored entry: its notes are in no space, a table
    having made its sub-folders spaces."""
    why = (
        f"{_notes(listing.notes)} directly in it ({_shown(listing.notes)}) in no space:"
        f" its sub-folders are spaces ({claims[0]}); move the notes into one, or declare"
        f' the whole folder as [spaces.NAME] with path = "{root}"'
    )
    return IgnoredFolder(root, why, None)


def _shown(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (", …" if len(names) > SHOWN else "")


def _notes(names: list[str]) -> str:
    return "1 note" if len(names) == 1 else f"{len(names)} notes"
