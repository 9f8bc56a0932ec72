"""The one place configuration is read: `load_settings`, from the
declarations in `declared.py` (every setting, once) and the spaces in `spaces.py`;
and a model pack's values, through the `[model]` keys declared there
(`model_keys`, `resolve_model_config`).

Sources, later ones winning: built-in defaults, the TOML file named by
`NOTARIUM_CONFIG` (or `--config`), then environment variables. Every field is
documented here and in `docs/configuration.md` (a test keeps the two in step).
Leaf module: imports nothing from the package.
"""

from __future__ import annotations

import functools
import json
import os
import re
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec
from msgspec import Meta

from notarium_search.logsetup import get_logger
from notarium_search.settings.declared import (
    AUTO_LANGUAGE,
    CHUNKING_MODES,
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    DEFAULT_MAX_TOKENS,
    LANGUAGE_SETTINGS,
    LANGUAGES,
    MODEL_SOCKET_ENV,
    OVERSIZE_POLICIES,
    PAGE_CHUNKING,
    POOLINGS,
    SPACE_NAME_PATTERN,
    SPACE_NAME_RE,
    Choices,
    CollectionConfig,
    Default,
    Env,
    FusionConfig,
    IgnoredFolder,
    LabelOnly,
    ModelConfig,
    RankingConfig,
    ReadWith,
    Required,
    RootReading,
    Settings,
    SpaceConfig,
    valid_space_name,
)
from notarium_search.settings.readers import ConfigError, converted, empty_path, host_pattern, loose, read_path
from notarium_search.settings.spaces import read_spaces

__all__ = [
    "AUTO_LANGUAGE",
    "CHUNKING_MODES",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DEFAULT_MAX_TOKENS",
    "LANGUAGES",
    "LANGUAGE_SETTINGS",
    "MODEL_SOCKET_ENV",
    "OVERSIZE_POLICIES",
    "PAGE_CHUNKING",
    "POOLINGS",
    "SPACE_NAME_PATTERN",
    "SPACE_NAME_RE",
    "Choices",
    "CollectionConfig",
    "ConfigError",
    "Default",
    "Env",
    "FusionConfig",
    "IgnoredFolder",
    "LabelOnly",
    "ModelConfig",
    "ModelKey",
    "RankingConfig",
    "ReadWith",
    "Required",
    "RootReading",
    "Settings",
    "SpaceConfig",
    "env_names",
    "host_pattern",
    "load_settings",
    "log_ignored_folders",
    "model_keys",
    "resolve_model_config",
    "valid_space_name",
]

_Table = TypeVar("_Table", RankingConfig, FusionConfig)

log = get_logger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class _Spec(msgspec.Struct, frozen=True):
    """One declared setting, as `load_settings` reads it."""

    key: str
    env: str | None
    check: Any  # the type msgspec converts to, with its Meta bounds
    kind: Any  # the bare type: int, float, bool, str, Path
    choices: tuple[str, ...]
    read: Callable[[Any], Any] | None


@functools.cache
def _specs() -> dict[str, _Spec]:
    """The declared settings: the fields of Settings annotated with `Env`, `Meta`,
    `Choices` or `ReadWith` (the others are tables or derived)."""
    hints = get_type_hints(Settings, include_extras=True)
    specs = {}
    for item in msgspec.structs.fields(Settings):
        hint = hints[item.name]
        if get_origin(hint) is not Annotated:
            continue
        base, *extras = get_args(hint)
        bare = [a for a in get_args(base) if a is not type(None)] if _is_optional(base) else [base]
        metas = [extra for extra in extras if isinstance(extra, Meta)]
        specs[item.name] = _Spec(
            key=item.name,
            env=next((extra.name for extra in extras if isinstance(extra, Env)), None),
            check=Annotated[bare[0], *metas] if metas else bare[0],
            kind=bare[0],
            choices=next((extra.values for extra in extras if isinstance(extra, Choices)), ()),
            read=next((extra.read for extra in extras if isinstance(extra, ReadWith)), None),
        )
    return specs


def _is_optional(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def env_names() -> dict[str, str]:
    """Environment variable → setting, from the declarations (for docs and tests)."""
    return {spec.env: spec.key for spec in _specs().values() if spec.env is not None}


class ModelKey(msgspec.Struct, frozen=True):
    """One declared `[model]` key (a field of ModelConfig), as a pack's
    values are read through it."""

    key: str
    kind: Any  # the bare type: bool, int, float or str
    optional: bool  # None is a value (relevance_margin: not set, the use decides)
    bounds: Meta | None
    choices: tuple[str, ...]
    read_with: Callable[[Any], Any] | None
    has_default: bool
    default: Any
    required: bool
    label_only: bool

    def read(self, value: object) -> Any:
        """The key's value from model.json or the `[model]` table (readers.loose);
        raises ConfigError naming the key: "dim must be a positive integer, got 'wide'"."""
        if value is None and self.optional:
            return None
        try:
            if self.read_with is not None:
                return self.read_with(value)
            return loose(value, self.kind, self.bounds, self.choices)
        except ConfigError as exc:
            raise ConfigError(f"{self.key} {exc}") from None


def model_keys() -> dict[str, ModelKey]:
    """The declared `[model]` keys, in the order of ModelConfig's fields
    (looked up at each call: a test declares a key of its own by putting a
    subclass of ModelConfig in its place)."""
    return _model_keys_of(ModelConfig)


@functools.cache
def _model_keys_of(table: type[ModelConfig]) -> dict[str, ModelKey]:
    hints = get_type_hints(table, include_extras=True)
    keys = {}
    for item in msgspec.structs.fields(table):
        hint = hints[item.name]
        base, *extras = get_args(hint) if get_origin(hint) is Annotated else (hint,)
        optional = _is_optional(base)
        kind = next(a for a in get_args(base) if a is not type(None)) if optional else base
        if kind not in (bool, int, float, str) or any(isinstance(extra, Env) for extra in extras):
            raise TypeError(f"[model] {item.name}: a [model] key is a bool, int, float or str, without Env")
        defaults = [extra.value for extra in extras if isinstance(extra, Default)]
        if item.default is not msgspec.NODEFAULT:
            defaults.append(item.default)
        keys[item.name] = ModelKey(
            key=item.name,
            kind=kind,
            optional=optional,
            bounds=next((extra for extra in extras if isinstance(extra, Meta)), None),
            choices=next((extra.values for extra in extras if isinstance(extra, Choices)), ()),
            read_with=next((extra.read for extra in extras if isinstance(extra, ReadWith)), None),
            has_default=bool(defaults),
            default=defaults[0] if defaults else None,
            required=any(isinstance(extra, Required) for extra in extras),
            label_only=any(isinstance(extra, LabelOnly) for extra in extras),
        )
    return keys


def resolve_model_config(values: Mapping[str, object]) -> ModelConfig:
    """A pack's ModelConfig from its values (model.json with the `[model]`
    table winning), each read through its declaration, an absent one taking
    its default. Raises ConfigError naming the key: the first wrong value, or
    a key without a default that is absent."""
    resolved: dict[str, Any] = {}
    for key in model_keys().values():
        if key.key in values:
            resolved[key.key] = key.read(values[key.key])
        elif key.has_default:
            resolved[key.key] = key.default
        else:
            raise ConfigError(f"{key.key} is not set")
    return ModelConfig(**resolved)


class _File(msgspec.Struct, frozen=True):
    """The TOML file read, to say where a refused value was written."""

    path: Path
    text: str

    def where(self, table: str | None, key: str) -> str:
        """`FILE (line N)`: the key's first line in the table (None: the top level)."""
        current: str | None = None
        for number, line in enumerate(self.text.splitlines(), start=1):
            stripped = line.strip()
            if stripped.startswith("["):
                current = stripped.strip("[]").strip()
            elif current == table and re.match(rf"{re.escape(key)}\s*=", stripped):
                return f"{self.path} (line {number})"
        return str(self.path)


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Build the settings from the file (if any) and the environment."""
    env = os.environ if env is None else env
    path_text = config_path or env.get("NOTARIUM_CONFIG")
    raw: dict[str, Any] = {}
    source = _File(Path("."), "")
    base_dir = Path.cwd()
    if path_text:
        import tomllib  # with a file only: 3.5-5.5 ms of a search from the shell

        file_path = Path(path_text)
        try:
            text = file_path.read_text(encoding="utf-8")
            raw = tomllib.loads(text)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {file_path}: {exc}") from exc
        source = _File(file_path, text)
        base_dir = file_path.resolve().parent
    specs = _specs()
    values: dict[str, Any] = {}
    for spec in specs.values():
        if spec.key in raw and not _empty_path(spec, raw[spec.key]):
            values[spec.key] = _from_file(spec, raw[spec.key], source, base_dir)
    for spec in specs.values():
        if spec.env is not None and spec.env in env and not _empty_path(spec, env[spec.env]):
            values[spec.key] = _from_env(spec, env[spec.env])
    unknown = set(raw) - set(specs) - {"ranking", "fusion", "spaces", "include", "exclude", "model"}
    if unknown:
        raise ConfigError(f"unknown config keys: {', '.join(sorted(unknown))}")
    model = raw.get("model", {})
    if not isinstance(model, dict):
        raise ConfigError(f"model = {_shown(model)} in {source.where(None, 'model')}: must be a [model] table")
    if set(model) - set(model_keys()):
        raise ConfigError(f"unknown [model] keys: {', '.join(sorted(set(model) - set(model_keys())))}")
    settings = msgspec.structs.replace(
        Settings(),
        **values,
        ranking=_numbers_table("ranking", RankingConfig, raw.get("ranking", {}), source),
        fusion=_numbers_table("fusion", FusionConfig, raw.get("fusion", {}), source),
        model=dict(model),
    )
    spaces, ignored, reading = read_spaces(settings, raw, base_dir)
    return msgspec.structs.replace(settings, spaces=spaces, ignored_folders=ignored, root_reading=reading)


def log_ignored_folders(settings: Settings) -> None:
    """How spaces_root was read (one space or its sub-folders), then one
    warning per entry of it that is in no space (called once logging is set
    up: settings are read before it)."""
    reading = settings.root_reading
    if reading is not None:
        log.info(
            "spaces_root_read",
            path=str(reading.path),
            served_as=reading.served_as,
            space=reading.space,
            reason=reading.reason,
        )
    for folder in settings.ignored_folders:
        log.warning(
            "space_folder_ignored",
            path=str(folder.path),
            reason=folder.reason,
            suggested_name=folder.suggested_name,
        )


def _empty_path(spec: _Spec, value: Any) -> bool:
    return spec.kind is Path and empty_path(value)


def _from_env(spec: _Spec, text: str) -> Any:
    try:
        return _read(spec, text, Path.cwd())
    except ConfigError as exc:
        raise ConfigError(f"{spec.env}={text!r}: {exc}") from None


def _from_file(spec: _Spec, value: Any, source: _File, base_dir: Path) -> Any:
    try:
        return _read(spec, value, base_dir)
    except ConfigError as exc:
        raise ConfigError(f"{spec.key} = {_shown(value)} in {source.where(None, spec.key)}: {exc}") from None


def _read(spec: _Spec, value: Any, base_dir: Path) -> Any:
    """The field's value from a TOML value (typed: converted strictly, so
    `port = 18802.9` and `commit_every = true` are refused) or an environment
    string (converted from text)."""
    if spec.read is not None:
        return spec.read(value)
    if spec.kind is Path:
        return read_path(value, base_dir)
    if spec.kind is bool and isinstance(value, str):
        text = value.strip().lower()
        if text not in _TRUE | _FALSE:
            raise ConfigError("must be a boolean (1/0, true/false, yes/no, on/off)")
        return text in _TRUE
    result = converted(value, spec.check, strict=not isinstance(value, str))
    if spec.choices and str(result).lower() not in spec.choices:
        raise ConfigError(f"must be one of {', '.join(spec.choices)}")
    return result


def _shown(value: Any) -> str:
    """A TOML value as it was written (near enough): `true`, `"text"`, `1.5`."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, bool | str | list) else repr(value)


def _numbers_table(name: str, kind: type[_Table], raw: Mapping[str, Any], source: _File) -> _Table:
    """[ranking] or [fusion]: numbers >= 0 unless the field declares its own
    bounds (FusionConfig.k, score_floor); `k = true` and `k = "big"` are refused."""
    hints = get_type_hints(kind, include_extras=True)
    unknown = set(raw) - set(hints)
    if unknown:
        raise ConfigError(f"unknown [{name}] keys: {', '.join(sorted(unknown))}")
    values = {}
    for key, value in raw.items():
        declared = hints[key] if get_origin(hints[key]) is Annotated else Annotated[float, Meta(ge=0)]
        try:
            values[key] = converted(value, declared, strict=True)
        except ConfigError as exc:
            raise ConfigError(f"[{name}] {key} = {_shown(value)} in {source.where(name, key)}: {exc}") from None
    return kind(**values)
