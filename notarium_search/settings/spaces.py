"""The spaces: `vault`, `spaces_root` (one space or its sub-folders:
settings/root.py) and the `[spaces.NAME]` tables (paths, languages,
include/exclude patterns, collections), checked apart from the index folder."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from notarium_search.settings.declared import (
    CHUNKING_MODES,
    DEFAULT_EXCLUDE,
    LANGUAGE_SETTINGS,
    OPEN_URL_FIELDS,
    SPACE_NAME_PATTERN,
    CollectionConfig,
    IgnoredFolder,
    RootReading,
    Settings,
    SpaceConfig,
    valid_space_name,
)
from notarium_search.settings.readers import ConfigError, empty_path, language_codes, read_path, text_list
from notarium_search.settings.root import (
    claiming_tables,
    list_root,
    name_from,
    notes_in_no_space,
    read_root,
    whole_folder_name,
)

# `include` not set: every file a registered note format reads. This layer
# cannot know the formats (they are notes/'s, above it): notes/scan resolves
# `()` (notes/formats.py, default_include: `**/*.md` with the built-in formats,
# settings.DEFAULT_INCLUDE). An empty list written in the file is refused.
REGISTERED_FORMATS: tuple[str, ...] = ()


def _patterns(key: str, value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    """`include` or `exclude`: a TOML list of glob patterns. A bare string is
    refused, not split: a string is a sequence, and `include = "*.md"` became
    the patterns "*", ".", "m", "d"."""
    if value is None:
        return default
    if isinstance(value, str):
        raise ConfigError(f'{key} must be a list of glob patterns, got {value!r} (write ["{value}"])')
    patterns = tuple(text_list(key, value, "glob patterns"))
    if not patterns and key.endswith("include"):
        raise ConfigError(f"{key} needs at least one pattern: with none, no file is a note")
    return patterns


def read_spaces(
    settings: Settings, raw: Mapping[str, Any], base_dir: Path
) -> tuple[tuple[SpaceConfig, ...], tuple[IgnoredFolder, ...], RootReading | None]:
    """The spaces: `vault` (one space), `spaces_root` (one space when it is a
    vault, else its sub-folders: settings/root.py), then the `[spaces.NAME]`
    tables, which win. Also what of the root is in no space, and how the root
    was read."""
    include = _patterns("include", raw.get("include"), REGISTERED_FORMATS)
    exclude = _patterns("exclude", raw.get("exclude"), DEFAULT_EXCLUDE)
    tables = raw.get("spaces", {})
    if not isinstance(tables, dict):
        raise ConfigError("[spaces] must be a table of [spaces.NAME] tables")
    found: dict[str, SpaceConfig] = {}
    whole: dict[str, str] = {}  # name → what made a whole folder that space (for collisions)
    misnamed: list[Path] = []
    ignored: list[IgnoredFolder] = []
    reading = None
    default_open_url = _open_url("open_url (NOTARIUM_OPEN_URL)", settings.open_url)

    def add(name: str, path: Path, what: str | None) -> None:
        if name in found:
            raise ConfigError(
                f"{found[name].path} and {path} would both be space {name}: declare one of them as"
                f' [spaces.OTHER] with path = "{path}"'
            )
        found[name] = SpaceConfig(
            name, path, settings.language, include, exclude, open_url=default_open_url, languages=settings.languages
        )
        if what is not None:
            whole[name] = what

    if settings.vault is not None:
        add(whole_folder_name(settings.vault), settings.vault, "vault (NOTARIUM_VAULT)")
    root = settings.spaces_root
    if root is not None and settings.vault is not None and _same(root, settings.vault):
        name = whole_folder_name(root)
        reading = RootReading(root, name, f"vault (NOTARIUM_VAULT) names this folder: served as one space, {name}")
    elif root is not None:
        listing = list_root(root)
        claims = claiming_tables(root, listing, tables, base_dir)
        reading = read_root(root, listing, claims)
        if reading.space is not None:
            add(reading.space, root, "spaces_root (NOTARIUM_SPACES_ROOT), a vault")
        else:
            for child in listing.folders:
                if valid_space_name(child.name):
                    add(child.name, child, None)
                else:
                    misnamed.append(child)
            ignored.extend(listing.unreachable)
            if listing.notes and claims:
                ignored.append(notes_in_no_space(root, listing, claims))
    for name, table in tables.items():
        config = _space_table(name, table, found.get(name), settings, base_dir, include, exclude)
        if name in whole and not _same(config.path, found[name].path):
            raise ConfigError(
                f"[spaces.{name}] path {config.path} and {found[name].path}, from {whole[name]}, would both be"
                f" space {name}: give the table another name"
            )
        found[name] = config
    for config in found.values():
        _check_space(config)
    try:
        _check_indexes_apart(tuple(found.values()), settings.index_dir)
    except ConfigError as exc:
        if reading is None or reading.space is None:
            raise
        raise ConfigError(f"{exc} (spaces_root {root} is one space: {reading.reason})") from None
    declared = {config.path.resolve() for config in found.values()}
    if root is not None and root.resolve() in declared:  # a table serves the notes directly in it
        ignored = [entry for entry in ignored if entry.path != root]
    taken = set(found)
    for folder in misnamed:
        if folder.resolve() not in declared:  # a [spaces.NAME] table may give it a valid name
            ignored.append(_ignored(folder, taken))
    return tuple(found[name] for name in sorted(found)), tuple(sorted(ignored, key=_by_path)), reading


def _same(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()


def _by_path(entry: IgnoredFolder) -> str:
    return str(entry.path)


def _ignored(folder: Path, taken: set[str]) -> IgnoredFolder:
    """Why a sub-folder of spaces_root is not a space, and how to make it one.
    Its name is not mapped to a valid one automatically: two folders could
    map to one name, and a space's name is in its URLs and index folder, so
    it should be chosen, not guessed behind the user's back."""
    why = f"{folder.name!r} is not a valid space name ({SPACE_NAME_PATTERN})"
    base = name_from(folder.name)
    if not valid_space_name(base):
        return IgnoredFolder(folder, f'{why}: declare it as [spaces.NAME] with path = "{folder}"', None)
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return IgnoredFolder(folder, f'{why}: declare it as [spaces.{name}] with path = "{folder}"', name)


def _space_table(
    name: str,
    table: Any,
    existing: SpaceConfig | None,
    settings: Settings,
    base_dir: Path,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
) -> SpaceConfig:
    if not valid_space_name(name):
        raise ConfigError(f"space name {name!r} must match {SPACE_NAME_PATTERN}")
    if not isinstance(table, dict):
        raise ConfigError(f"[spaces.{name}] must be a table")
    unknown = set(table) - {"path", "language", "languages", "include", "exclude", "collections", "open_url"}
    if unknown:
        raise ConfigError(f"unknown keys in [spaces.{name}]: {', '.join(sorted(unknown))}")
    if "path" in table:
        if empty_path(table["path"]):
            raise ConfigError(f"[spaces.{name}] path is empty")
        path = read_path(table["path"], base_dir)
    elif existing is not None:
        path = existing.path
    else:
        raise ConfigError(f"[spaces.{name}] needs a path (or a folder of that name under spaces_root)")
    return SpaceConfig(
        name=name,
        path=path,
        language=str(table.get("language", existing.language if existing else settings.language)),
        include=_patterns(f"[spaces.{name}] include", table.get("include"), include),
        exclude=_patterns(f"[spaces.{name}] exclude", table.get("exclude"), exclude),
        collections=_collections(name, table.get("collections", {})),
        open_url=_open_url(f"[spaces.{name}] open_url", table.get("open_url", settings.open_url)),
        languages=_languages(name, table, existing, settings),
    )


def _languages(name: str, table: dict[str, Any], existing: SpaceConfig | None, settings: Settings) -> tuple[str, ...]:
    if "languages" not in table:
        return existing.languages if existing else settings.languages
    try:
        return language_codes(table["languages"])
    except ConfigError as exc:
        raise ConfigError(f"[spaces.{name}] {exc}") from exc


def _open_url(where: str, value: Any) -> str:
    """A template of OPEN_URL_FIELDS, "" (automatic) or "none"; an unknown field is an error, not a silent blank."""
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, got {value!r}")
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(value) if field is not None]
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc} in {value!r} (write {{{{ and }}}} for braces)") from exc
    unknown = sorted(set(fields) - set(OPEN_URL_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown field {{{unknown[0]}}} (known: {', '.join(OPEN_URL_FIELDS)})")
    return value


def _collections(space_name: str, tables: Any) -> tuple[CollectionConfig, ...]:
    if not isinstance(tables, dict):
        raise ConfigError(
            f"[spaces.{space_name}.collections] must be a table of [spaces.{space_name}.collections.NAME] tables"
        )
    found = []
    for name, table in sorted(tables.items()):
        where = f"[spaces.{space_name}.collections.{name}]"
        if not valid_space_name(name) or not isinstance(table, dict):
            raise ConfigError(f"{where}: the name must match {SPACE_NAME_PATTERN} and the value be a table")
        unknown = set(table) - {"folder", "pattern", "root_only", "chunking"}
        if unknown:
            raise ConfigError(f"unknown keys in {where}: {', '.join(sorted(unknown))}")
        config = CollectionConfig(
            name=name,
            folder=str(table.get("folder", "")).strip("/"),
            pattern=str(table.get("pattern", "")),
            root_only=table.get("root_only", False),
            chunking=str(table.get("chunking", "paragraph")),
        )
        try:
            re.compile(config.pattern)
        except re.error as exc:
            raise ConfigError(f"{where}: pattern is not a valid regular expression: {exc}") from exc
        if not isinstance(config.root_only, bool) or config.chunking not in CHUNKING_MODES:
            raise ConfigError(f"{where}: root_only must be true or false, chunking one of {CHUNKING_MODES}")
        if ".." in config.folder.split("/"):
            raise ConfigError(f"{where}: folder must stay inside the space")
        found.append(config)
    return tuple(found)


def _check_space(config: SpaceConfig) -> None:
    """A path that is there but is not a folder is a mistake of the
    configuration. A path that is not there (yet) is not: a share mounted
    after the service starts, a disk plugged in later. That space is served
    as a folder gone away is (index/passes.py): its index kept, status saying
    why, tried again until the folder is there; the others serve."""
    if config.language not in LANGUAGE_SETTINGS:
        raise ConfigError(f"space {config.name}: language must be one of {', '.join(LANGUAGE_SETTINGS)}")
    try:
        exists = config.path.exists()
    except OSError:  # a parent the service may not search: the space says so once open
        return
    if exists and not config.path.is_dir():
        raise ConfigError(f"space {config.name}: {config.path} is not a directory")


def _check_indexes_apart(spaces: tuple[SpaceConfig, ...], index_dir: Path) -> None:
    """A space's index is written to `index_dir/NAME`, not to `index_dir`:
    that folder and every space's notes folder must be apart (neither inside
    the other), or indexing writes manifest.json, lexical/ and writer.lock
    among the notes (index_dir = spaces_root did), and a rebuild deletes
    there."""
    folders = [(config.name, (index_dir / config.name).resolve(), config.path.resolve()) for config in spaces]
    for name, index, _ in folders:
        for other, _, notes in folders:
            if index == notes or notes in index.parents:
                raise ConfigError(
                    f"the index folder {index} of space {name} must not be inside (or be) the notes folder"
                    f" {notes} of space {other}: set index_dir outside every notes folder"
                )
            if index in notes.parents:
                raise ConfigError(
                    f"the notes folder {notes} of space {other} must not be inside the index folder {index}"
                    f" of space {name}: set index_dir elsewhere"
                )
