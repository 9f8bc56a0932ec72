"""The one place configuration is read.

Sources, later ones winning: built-in defaults, the TOML file named by
`NOTARIUM_CONFIG` (or `--config`), then environment variables. Every field is
documented here and in `docs/configuration.md` (a test keeps the two in step).
Leaf module: imports nothing from the package.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import structlog

SPACE_NAME_PATTERN = "[a-z0-9][a-z0-9_-]*"
# Anchored with \Z, not $: `$` also matches before a final newline, so
# "abc\n" passed. With \Z even a plain `.match` checks the whole name.
SPACE_NAME_RE = re.compile(rf"{SPACE_NAME_PATTERN}\Z")
LANGUAGES = ("fr", "en")
OVERSIZE_POLICIES = ("truncate", "skip")
CHUNKING_MODES = ("paragraph", "section")  # fragment modes of collections (semantic/chunking.py)

# Folders that are tool state, not notes: Obsidian settings, VCS, trash.
DEFAULT_EXCLUDE = (".obsidian/**", ".git/**", ".trash/**", "node_modules/**")
DEFAULT_INCLUDE = ("**/*.md",)


_Table = TypeVar("_Table", "RankingConfig", "FusionConfig")

log = structlog.get_logger(__name__)


class ConfigError(ValueError):
    """The configuration is invalid; the message says which field and why."""


def valid_space_name(name: str) -> bool:
    """Whether `name` can name a space or a collection (the whole of it)."""
    return SPACE_NAME_RE.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class RankingConfig:
    """Lexical ranking knobs. Defaults were measured on piaf-fr and cranfield
    (see docs/ranking.md); change them only with a measurement."""

    title_boost: float = 0.25
    """Extra weight of a term found in the title field, on top of the combined
    text field that already contains the title. 0 disables."""
    aliases_boost: float = 0.5
    """Extra weight of a term found in a frontmatter alias."""
    headings_boost: float = 0.2
    """Extra weight of a term found in a heading."""
    fuzzy_weight: float = 0.2
    """Score of a typo-tolerant (edit distance 1) match relative to an exact
    one; kept low so that exact matches always rank first."""
    prefix_weight: float = 0.5
    """Score of an as-you-type prefix match of the last query word."""
    phrase_boost: float = 2.0
    """Extra weight when the whole unquoted query occurs as a phrase."""


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """How channel rankings become one (Reciprocal Rank Fusion, see
    docs/ranking.md for the measurements behind the defaults)."""

    k: float = 60.0
    """RRF constant: a note at rank r of a channel scores weight / (k + r).
    Larger k flattens the difference between the top ranks of a channel."""
    lexical_weight: float = 1.0
    """Weight of the lexical (BM25) channel."""
    semantic_weight: float = 1.0
    """Weight of the semantic (embedding) channel."""
    graph_weight: float = 1.0
    """Weight of the wiki-link graph channel (GRAPH_BOOST)."""
    score_floor: float = 0.2
    """How much of a channel's contribution does not depend on its own scores:
    1 is plain rank-only RRF; below 1, a note's normalised score in the
    channel (its place between the channel's lowest and highest score)
    scales the rest. Must be in [0, 1]."""
    phrase_weight: float = 1.0
    """Weight of the exact-phrase list: lexical hits whose title or text holds
    the whole query (title only for a one-word query), so that an exact match
    is not outranked by notes the other channels merely like."""

    def weights(self) -> dict[str, float]:
        return {
            "lexical": self.lexical_weight,
            "semantic": self.semantic_weight,
            "graph": self.graph_weight,
            "phrase": self.phrase_weight,
        }


@dataclass(frozen=True, slots=True)
class CollectionConfig:
    """A named part of a space: `[spaces.NAME.collections.COLLECTION]`."""

    name: str
    folder: str = ""
    """Sub-folder of the space (POSIX, relative); "" is the space root."""
    pattern: str = ""
    """Regular expression a note's file name must match (searched, so anchor
    it: `^Article.+\\.md$`); "" accepts every note."""
    root_only: bool = False
    """Only notes directly in `folder`, not in its sub-folders."""
    chunking: str = "paragraph"
    """Fragments for the semantic channel: "paragraph" (packed paragraphs) or
    "section" (one fragment per `#`/`##` section, for books and long documents)."""


@dataclass(frozen=True, slots=True)
class SpaceConfig:
    """One space: a named folder of notes."""

    name: str
    path: Path
    language: str = "fr"
    """Analyzer language: "fr" (French stemming + stop words) or "en"."""
    include: tuple[str, ...] = DEFAULT_INCLUDE
    """Glob patterns (relative POSIX paths) a note must match."""
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    """Glob patterns to skip; hidden files and folders are always skipped."""
    collections: tuple[CollectionConfig, ...] = ()
    """Named parts of the space; a note may belong to several."""


@dataclass(frozen=True, slots=True)
class IgnoredFolder:
    """A sub-folder of `spaces_root` that is not a space, and why."""

    path: Path
    reason: str
    suggested_name: str | None
    """A valid space name made from the folder's name (None: none could be)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Service settings. Environment names in brackets."""

    spaces: tuple[SpaceConfig, ...] = ()
    """Configured spaces: sub-folders of `spaces_root` plus `[spaces.NAME]`
    tables of the config file."""
    spaces_root: Path | None = None
    """[NOTARIUM_SPACES_ROOT] Each sub-folder whose name is a valid space name
    is a space."""
    index_dir: Path = Path(".notarium-index")
    """[NOTARIUM_INDEX_DIR] Where indexes live, one sub-folder per space.
    Never inside a notes folder."""
    host: str = "127.0.0.1"
    """[NOTARIUM_HOST] Address the HTTP server binds."""
    port: int = 8377
    """[NOTARIUM_PORT] Port the HTTP server binds."""
    header_timeout: float = 3.0
    """[NOTARIUM_HEADER_TIMEOUT] Seconds a client may take to send a request's
    headers (a new connection's first request, and each next one on a kept-alive
    connection); past it the connection is closed. Also the longest a graceful
    stop waits for such a client. 0.5 to 60."""
    max_connections: int = 2048
    """[NOTARIUM_MAX_CONNECTIONS] Connections held open at once; more wait in the
    system's queue until one ends (never refused). Cut to what the file
    descriptor limit leaves after a reserve for the indexes."""
    log_level: str = "info"
    """[NOTARIUM_LOG_LEVEL] debug, info, warning or error."""
    language: str = "fr"
    """[NOTARIUM_LANGUAGE] Default analyzer language of spaces."""
    max_file_bytes: int = 2 * 1024 * 1024
    """[NOTARIUM_MAX_FILE_BYTES] Notes larger than this are truncated or
    skipped (see `oversize`)."""
    oversize: str = "truncate"
    """[NOTARIUM_OVERSIZE] "truncate" (index the first max_file_bytes) or
    "skip"."""
    commit_every: int = 20000
    """[NOTARIUM_COMMIT_EVERY] At most this many notes between two commits
    while a space builds (commits also come after 2 s, then at doubling
    intervals), so search answers from what is indexed so far."""
    vector_search: bool = False
    """[VECTOR_SEARCH] Enable the semantic channel (needs `model_dir`)."""
    model_dir: Path | None = None
    """[NOTARIUM_MODEL_DIR] Local folder of the embedding model (model.onnx,
    tokenizer.json, model.json). Nothing is ever downloaded implicitly."""
    embed_threads: int = 0
    """[NOTARIUM_EMBED_THREADS] Threads for bulk embedding; 0 = all cores."""
    embed_batch_size: int = 16
    """[NOTARIUM_EMBED_BATCH] Fragments per model call (64 costs 1.6 GB RSS for no gain)."""
    query_embed_timeout_ms: int = 300
    """[NOTARIUM_QUERY_EMBED_TIMEOUT_MS] Deadline of a query's embedding; past it
    the query is answered by the other channels and `degraded` says why."""
    model: dict[str, object] = field(default_factory=dict)
    """[model] table: overrides of model.json (dim, pooling, normalize,
    query_prefix, passage_prefix, max_tokens, name), or all of it when the
    model folder has none."""
    graph_boost: bool = False
    """[GRAPH_BOOST] Enable the wiki-link graph channel (not yet available)."""
    watch: bool = True
    """[NOTARIUM_WATCH] Follow every space's files as they change (creates,
    edits, deletes, renames): searches see a change within about a second."""
    watch_debounce_ms: int = 300
    """[NOTARIUM_WATCH_DEBOUNCE_MS] Quiet time after a change before it is
    applied, so that a burst (a `git pull`, a sync client, an editor's
    write-then-rename) is applied once."""
    reconcile_interval: int = 60
    """[NOTARIUM_RECONCILE_INTERVAL] Seconds between two full comparisons of a
    space's files with its index when watching is off or impossible (network
    filesystems, inotify limits); 0 = never."""
    api_token: str | None = None
    """[NOTARIUM_API_TOKEN] When set, every request but /healthz needs
    `Authorization: Bearer <token>` (this one or the admin token)."""
    admin_token: str | None = None
    """[NOTARIUM_ADMIN_TOKEN] When set, POST /spaces/{space}/reindex needs it
    (the API token is then read-only)."""
    cors_origins: tuple[str, ...] = ()
    """[NOTARIUM_CORS_ORIGINS] Origins allowed to call the API from a browser
    (comma-separated in the environment); none by default."""
    allowed_hosts: tuple[str, ...] = ()
    """[NOTARIUM_ALLOWED_HOSTS] Host names a request may be addressed to (its
    `Host` header, any port), besides the loopback names and the bound
    address: `notes.example.org`, `*.example.org` for sub-domains, `*` for
    any. Every other name is refused (DNS rebinding)."""
    trusted_proxies: tuple[str, ...] = ()
    """[NOTARIUM_TRUSTED_PROXIES] Addresses or networks (`10.0.0.2`,
    `172.17.0.0/16`) of reverse proxies whose X-Forwarded-For and
    X-Forwarded-Proto are believed; none by default."""
    rate_limit_per_minute: int = 1200
    """[NOTARIUM_RATE_LIMIT] Requests per minute per client address (429
    beyond; /healthz exempt); 0 = no limit. As-you-type search sends a few
    requests per second while typing."""
    activation_fields: tuple[str, ...] = ("used_in", "utilisé_dans")
    """[NOTARIUM_ACTIVATION_FIELDS] Frontmatter fields listing where a note
    was used ("activated"), first the main name then aliases (comma-separated
    in the environment). Read at query time: changing them needs no rebuild."""
    ranking: RankingConfig = field(default_factory=RankingConfig)
    """[ranking] table of the config file."""
    fusion: FusionConfig = field(default_factory=FusionConfig)
    """[fusion] table of the config file."""
    ignored_folders: tuple[IgnoredFolder, ...] = ()
    """Not a setting: the sub-folders of `spaces_root` whose names are not
    valid space names (e.g. `Zettelkasten`), found while loading; logged at
    start and listed by `notarium-search status`."""

    def space(self, name: str) -> SpaceConfig | None:
        return next((s for s in self.spaces if s.name == name), None)


_ENV_FIELDS: Mapping[str, str] = {
    "NOTARIUM_SPACES_ROOT": "spaces_root",
    "NOTARIUM_INDEX_DIR": "index_dir",
    "NOTARIUM_HOST": "host",
    "NOTARIUM_PORT": "port",
    "NOTARIUM_HEADER_TIMEOUT": "header_timeout",
    "NOTARIUM_MAX_CONNECTIONS": "max_connections",
    "NOTARIUM_LOG_LEVEL": "log_level",
    "NOTARIUM_LANGUAGE": "language",
    "NOTARIUM_MAX_FILE_BYTES": "max_file_bytes",
    "NOTARIUM_OVERSIZE": "oversize",
    "NOTARIUM_COMMIT_EVERY": "commit_every",
    "VECTOR_SEARCH": "vector_search",
    "NOTARIUM_MODEL_DIR": "model_dir",
    "NOTARIUM_EMBED_THREADS": "embed_threads",
    "NOTARIUM_EMBED_BATCH": "embed_batch_size",
    "NOTARIUM_QUERY_EMBED_TIMEOUT_MS": "query_embed_timeout_ms",
    "GRAPH_BOOST": "graph_boost",
    "NOTARIUM_ACTIVATION_FIELDS": "activation_fields",
    "NOTARIUM_WATCH": "watch",
    "NOTARIUM_WATCH_DEBOUNCE_MS": "watch_debounce_ms",
    "NOTARIUM_RECONCILE_INTERVAL": "reconcile_interval",
    "NOTARIUM_API_TOKEN": "api_token",
    "NOTARIUM_ADMIN_TOKEN": "admin_token",
    "NOTARIUM_CORS_ORIGINS": "cors_origins",
    "NOTARIUM_ALLOWED_HOSTS": "allowed_hosts",
    "NOTARIUM_TRUSTED_PROXIES": "trusted_proxies",
    "NOTARIUM_RATE_LIMIT": "rate_limit_per_minute",
}
_PATH_FIELDS = {"spaces_root", "index_dir", "model_dir"}
_FLOAT_FIELDS = {"header_timeout"}
_INT_FIELDS = {
    "port",
    "max_connections",
    "max_file_bytes",
    "commit_every",
    "embed_threads",
    "embed_batch_size",
    "query_embed_timeout_ms",
    "watch_debounce_ms",
    "reconcile_interval",
    "rate_limit_per_minute",
}
_MODEL_KEYS = {"name", "dim", "max_tokens", "pooling", "normalize", "query_prefix", "passage_prefix"}
_BOOL_FIELDS = {"vector_search", "graph_boost", "watch"}
_ORIGIN_FIELDS = {"cors_origins"}
_HOST_FIELDS = {"allowed_hosts"}
_PROXY_FIELDS = {"trusted_proxies"}
# A host name (labels of letters, digits, hyphens; `*.` first for sub-domains) or an IP address.
_HOST_NAME = re.compile(r"(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\Z")
_SECRET_FIELDS = {"api_token", "admin_token"}
MIN_TOKEN_CHARS = 16  # a shorter bearer token is guessable
_LIST_FIELDS = {"activation_fields"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def load_settings(
    config_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Build the settings from the file (if any) and the environment."""
    env = os.environ if env is None else env
    path_text = config_path or env.get("NOTARIUM_CONFIG")
    raw: dict[str, Any] = {}
    base_dir = Path.cwd()
    if path_text:
        file_path = Path(path_text)
        try:
            raw = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {file_path}: {exc}") from exc
        base_dir = file_path.resolve().parent
    values: dict[str, Any] = {}
    for key in _ENV_FIELDS.values():
        if key in raw and not _empty_path(key, raw[key]):
            values[key] = _coerce(key, raw[key], base_dir)
    for env_name, key in _ENV_FIELDS.items():
        if env_name in env and not _empty_path(key, env[env_name]):
            values[key] = _coerce(key, env[env_name], Path.cwd())
    unknown = set(raw) - set(_ENV_FIELDS.values()) - {"ranking", "fusion", "spaces", "include", "exclude", "model"}
    if unknown:
        raise ConfigError(f"unknown config keys: {', '.join(sorted(unknown))}")
    model = dict(raw.get("model", {}))
    if set(model) - _MODEL_KEYS:
        raise ConfigError(f"unknown [model] keys: {', '.join(sorted(set(model) - _MODEL_KEYS))}")
    settings = replace(
        Settings(),
        **values,
        ranking=_numbers_table("ranking", RankingConfig, raw.get("ranking", {})),
        fusion=_numbers_table("fusion", FusionConfig, raw.get("fusion", {})),
        model=model,
    )
    _check(settings)
    spaces, ignored = _spaces(settings, raw, base_dir)
    return replace(settings, spaces=spaces, ignored_folders=ignored)


def log_ignored_folders(settings: Settings) -> None:
    """One warning per sub-folder of spaces_root that is not a space (called
    once logging is set up: settings are read before it)."""
    for folder in settings.ignored_folders:
        log.warning(
            "space_folder_ignored",
            path=str(folder.path),
            reason=folder.reason,
            suggested_name=folder.suggested_name,
        )


def _empty_path(key: str, value: Any) -> bool:
    """An empty path setting (`NOTARIUM_SPACES_ROOT=`, as a shell or a compose
    file leaves it) counts as unset: read as a path it was the current folder,
    which made every folder there a space."""
    return key in _PATH_FIELDS and isinstance(value, str) and not value.strip()


def _coerce(key: str, value: Any, base_dir: Path) -> Any:
    if key in _PATH_FIELDS:
        path = Path(str(value)).expanduser()
        return Path(os.path.normpath(path if path.is_absolute() else base_dir / path))
    if key in _INT_FIELDS:
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key} must be an integer, got {value!r}") from exc
    if key in _FLOAT_FIELDS:
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{key} must be a number, got {value!r}") from exc
    if key in _ORIGIN_FIELDS:
        return tuple(item.rstrip("/") for item in _text_list(key, value, "origins"))
    if key in _HOST_FIELDS:
        return tuple(dict.fromkeys(host_pattern(item) for item in _text_list(key, value, "host names")))
    if key in _PROXY_FIELDS:
        return tuple(dict.fromkeys(_proxy(item) for item in _text_list(key, value, "addresses")))
    if key in _SECRET_FIELDS:
        token = str(value).strip()
        if token and len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"{key} must be at least {MIN_TOKEN_CHARS} characters")
        return token or None
    if key in _LIST_FIELDS:
        items = _text_list(key, value, "names")
        names = tuple(dict.fromkeys(unicodedata.normalize("NFC", i.casefold()) for i in items))
        if not names:
            raise ConfigError(f"{key} needs at least one name")
        return names
    if key in _BOOL_FIELDS:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise ConfigError(f"{key} must be a boolean (1/0, true/false), got {value!r}")
    return str(value)


def host_pattern(text: str) -> str:
    """An `allowed_hosts` entry in the form requests are matched with:
    lower case, no trailing dot, IPv6 in brackets. Raises ConfigError for a
    URL, a port or anything that is not a host name."""
    host = text.strip().lower().rstrip(".")
    if host == "*":
        return host
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        if _HOST_NAME.match(host):
            return host
        raise ConfigError(
            f"allowed_hosts: {text!r} is not a host name (write `notes.example.org`, `*.example.org` or `*`;"
            " no scheme, no port: every port is accepted)"
        ) from None
    return f"[{address}]" if address.version == 6 else str(address)


def _proxy(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise ConfigError(
            f"trusted_proxies: {text!r} is not an address or a network (e.g. 10.0.0.2 or 172.17.0.0/16)"
        ) from None


def _text_list(key: str, value: Any, what: str) -> list[str]:
    """A TOML list of strings, or a comma-separated environment value: the
    non-empty items, stripped."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{key} must be a list of {what}, got {value!r}")
    return [i.strip() for i in items if i.strip()]


def _patterns(key: str, value: Any, default: tuple[str, ...]) -> tuple[str, ...]:
    """`include` or `exclude`: a TOML list of glob patterns. A bare string is
    refused, not split: a string is a sequence, and `include = "*.md"` became
    the patterns "*", ".", "m", "d"."""
    if value is None:
        return default
    if isinstance(value, str):
        raise ConfigError(f'{key} must be a list of glob patterns, got {value!r} (write ["{value}"])')
    patterns = tuple(_text_list(key, value, "glob patterns"))
    if not patterns and key.endswith("include"):
        raise ConfigError(f"{key} needs at least one pattern: with none, no file is a note")
    return patterns


def _numbers_table(name: str, kind: type[_Table], raw: Mapping[str, Any]) -> _Table:
    known = set(kind.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ConfigError(f"unknown [{name}] keys: {', '.join(sorted(unknown))}")
    try:
        values = {k: float(v) for k, v in raw.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{name}] values must be numbers: {exc}") from exc
    if any(v < 0 or v != v for v in values.values()):
        raise ConfigError(f"[{name}] values must be >= 0")
    return kind(**values)


def _check(settings: Settings) -> None:
    if settings.language not in LANGUAGES:
        raise ConfigError(f"language must be one of {LANGUAGES}, got {settings.language!r}")
    if settings.oversize not in OVERSIZE_POLICIES:
        raise ConfigError(f"oversize must be one of {OVERSIZE_POLICIES}")
    if settings.log_level.lower() not in {"debug", "info", "warning", "error"}:
        raise ConfigError(f"log_level must be debug, info, warning or error, got {settings.log_level!r}")
    if not 0 < settings.port < 65536:
        raise ConfigError(f"port must be 1..65535, got {settings.port}")
    if not 0.5 <= settings.header_timeout <= 60 or settings.max_connections < 1:
        raise ConfigError("header_timeout must be 0.5..60 seconds and max_connections >= 1")
    if settings.max_file_bytes < 1024 or settings.commit_every < 1:
        raise ConfigError("max_file_bytes must be >= 1024 and commit_every >= 1")
    if not 1 <= settings.embed_batch_size <= 256 or settings.embed_threads < 0:
        raise ConfigError("embed_batch_size must be 1..256 and embed_threads >= 0")
    if settings.fusion.k <= 0 or settings.fusion.score_floor > 1:
        raise ConfigError("[fusion] k must be > 0 and score_floor at most 1")
    if settings.watch_debounce_ms < 0 or settings.reconcile_interval < 0 or settings.rate_limit_per_minute < 0:
        raise ConfigError("watch_debounce_ms, reconcile_interval and rate_limit_per_minute must be >= 0")
    if settings.query_embed_timeout_ms < 1:
        raise ConfigError("query_embed_timeout_ms must be >= 1")


def _spaces(
    settings: Settings, raw: Mapping[str, Any], base_dir: Path
) -> tuple[tuple[SpaceConfig, ...], tuple[IgnoredFolder, ...]]:
    include = _patterns("include", raw.get("include"), DEFAULT_INCLUDE)
    exclude = _patterns("exclude", raw.get("exclude"), DEFAULT_EXCLUDE)
    found: dict[str, SpaceConfig] = {}
    misnamed: list[Path] = []
    root = settings.spaces_root
    if root is not None:
        if not root.is_dir():
            raise ConfigError(f"spaces_root {root} is not a directory")
        for child in sorted(root.iterdir()):
            if not child.is_dir() or child.name.startswith("."):
                continue  # files, and tool state (.obsidian, .git, .trash): never spaces, nothing to say
            if valid_space_name(child.name):
                found[child.name] = SpaceConfig(child.name, child, settings.language, include, exclude)
            else:
                misnamed.append(child)
    tables = raw.get("spaces", {})
    if not isinstance(tables, dict):
        raise ConfigError("[spaces] must be a table of [spaces.NAME] tables")
    for name, table in tables.items():
        found[name] = _space_table(name, table, found.get(name), settings, base_dir, include, exclude)
    for space in found.values():
        _check_space(space)
    _check_indexes_apart(tuple(found.values()), settings.index_dir)
    declared = {space.path.resolve() for space in found.values()}
    taken = set(found)
    ignored = []
    for folder in misnamed:
        if folder.resolve() not in declared:  # a [spaces.NAME] table may give it a valid name
            ignored.append(_ignored(folder, taken))
    return tuple(found[name] for name in sorted(found)), tuple(ignored)


def _ignored(folder: Path, taken: set[str]) -> IgnoredFolder:
    """Why a sub-folder of spaces_root is not a space, and how to make it one.
    Its name is not mapped to a valid one automatically: two folders could
    map to one name, and a space's name is in its URLs and index folder, so
    it should be chosen, not guessed behind the user's back."""
    why = f"{folder.name!r} is not a valid space name ({SPACE_NAME_PATTERN})"
    ascii_name = unicodedata.normalize("NFKD", folder.name).encode("ascii", "ignore").decode().lower()
    base = re.sub(r"[^a-z0-9_-]+", "-", ascii_name).strip("-_")
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
    unknown = set(table) - {"path", "language", "include", "exclude", "collections"}
    if unknown:
        raise ConfigError(f"unknown keys in [spaces.{name}]: {', '.join(sorted(unknown))}")
    if "path" in table:
        if _empty_path("spaces_root", table["path"]):
            raise ConfigError(f"[spaces.{name}] path is empty")
        path = _coerce("spaces_root", table["path"], base_dir)
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
    )


def _collections(space: str, tables: Any) -> tuple[CollectionConfig, ...]:
    if not isinstance(tables, dict):
        raise ConfigError(f"[spaces.{space}.collections] must be a table of [spaces.{space}.collections.NAME] tables")
    found = []
    for name, table in sorted(tables.items()):
        where = f"[spaces.{space}.collections.{name}]"
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


def _check_space(space: SpaceConfig) -> None:
    if space.language not in LANGUAGES:
        raise ConfigError(f"space {space.name}: language must be one of {LANGUAGES}")
    if not space.path.is_dir():
        raise ConfigError(f"space {space.name}: {space.path} is not a directory")


def _check_indexes_apart(spaces: tuple[SpaceConfig, ...], index_dir: Path) -> None:
    """A space's index is written to `index_dir/NAME`, not to `index_dir`:
    that folder and every space's notes folder must be apart (neither inside
    the other), or indexing writes manifest.json, lexical/ and writer.lock
    among the notes (index_dir = spaces_root did), and a rebuild deletes
    there."""
    folders = [(space.name, (index_dir / space.name).resolve(), space.path.resolve()) for space in spaces]
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
