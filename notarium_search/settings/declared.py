"""Every setting, declared once: the records (msgspec Structs) the service reads, each
field with its type, default, environment variable (`Env`), bounds (`Meta`,
checked by msgspec), choices (`Choices`) or reader (`ReadWith`; the readers
are in `readers.py`). `notarium_search.settings.load_settings` reads them.
The `[model]` table's keys are the fields of `ModelConfig`, declared the
same way (with `Default`, `Required` and `LabelOnly`).
Imports nothing from the package but `readers.py`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from notarium_search.settings.readers import (
    AUTO_LANGUAGE as AUTO_LANGUAGE,
)
from notarium_search.settings.readers import (
    LANGUAGES as LANGUAGES,
)
from notarium_search.settings.readers import (
    hosts,
    language_codes,
    names,
    origins,
    proxies,
    text_or_none,
    token,
    url,
)

SPACE_NAME_PATTERN = "[a-z0-9][a-z0-9_-]*"
# Anchored with \Z, not $: `$` also matches before a final newline, so
# "abc\n" passed. With \Z even a plain `.match` checks the whole name.
SPACE_NAME_RE = re.compile(rf"{SPACE_NAME_PATTERN}\Z")
# The languages a space may be analysed in (settings/readers.py, a leaf).
LANGUAGE_SETTINGS = (AUTO_LANGUAGE, *LANGUAGES)
DEFAULT_LANGUAGES = ("fr", "en")
OVERSIZE_POLICIES = ("truncate", "skip")
CHUNKING_MODES = ("paragraph", "section")  # fragment modes of collections (semantic/chunking.py)
# Paragraphs, and a page never shared by two fragments: a PDF's (notes/pdf.py),
# so that a semantic hit says its page. A format's mode, not a collection's.
PAGE_CHUNKING = "page"

POOLINGS = ("mean", "cls")  # how a model's token vectors become one ([model] pooling)
# Position-embedding limit of the BERT / XLM-R family every supported model
# belongs to; used when neither model.json nor the overrides say, and the
# most a download writes: bge-m3 accepts 8,192, but attention cost grows with
# the square of the length and notes are embedded passage by passage.
DEFAULT_MAX_TOKENS = 512

# Folders that are tool state, not notes: Obsidian settings, VCS, trash.
DEFAULT_EXCLUDE = (".obsidian/**", ".git/**", ".trash/**", "node_modules/**")
DEFAULT_INCLUDE = ("**/*.md", "**/*.pdf", "**/*.canvas")


class Env(msgspec.Struct, frozen=True):
    """The environment variable that sets a setting (its TOML key is the field's name)."""

    name: str


@dataclass(frozen=True, slots=True)
class Choices:
    """The values a text setting may take (compared in lower case)."""

    values: tuple[str, ...]

    def __init__(self, *values: str) -> None:
        object.__setattr__(self, "values", values)


class ReadWith(msgspec.Struct, frozen=True):
    """A setting read by a function of its own (lists, tokens, host names): it
    takes the TOML value or the environment text, and raises ConfigError."""

    read: Callable[[Any], Any]


class Default(msgspec.Struct, frozen=True):
    """The default of a `[model]` key declared before a required one, where
    a field's default cannot stand (`ModelConfig` is built positionally);
    a key declared after the last required one takes a plain default."""

    value: object


class Required(msgspec.Struct, frozen=True):
    """A `[model]` key without a default: model.json or the `[model]` table
    must give it."""


class LabelOnly(msgspec.Struct, frozen=True):
    """A `[model]` key that changes no vector (a name, a floor on scores): it
    stays out of the vectors' fingerprint, so changing it re-embeds nothing."""


def valid_space_name(name: str) -> bool:
    """Whether `name` can name a space or a collection (the whole of it)."""
    return SPACE_NAME_RE.fullmatch(name) is not None


class RankingConfig(msgspec.Struct, frozen=True):
    """Lexical ranking knobs. Defaults were measured on piaf-fr and cranfield
    (see docs/ranking.md); change them only with a measurement."""

    title_boost: float = 0.25
    """Extra weight of a term found in the title field, on top of the combined
    text field that already contains the title. 0 disables."""
    file_name_boost: float = 0.25
    """Extra weight of a term found in the note's file name, when the file
    name is not its title (a title from the frontmatter or the first heading):
    as the title's, so that either name finds the note alike."""
    name_words_boost: float = 1.0
    """Extra weight when every word of the query (two at least, stop words
    and the word being typed aside) is in the note's title, file name or an
    alias, in any order. 0 disables."""
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
    exact_form_boost: float | None = None
    """Extra weight of a query word found as written (case and accents aside),
    on top of its stem: "élections" then ranks a note saying "élections"
    above one saying only "élection". None: the space language's measured
    default (fr 0.5, en 0: lexical/query.py LANGUAGE_BOOSTS). 0 disables."""
    proximity_boost: float | None = None
    """Extra weight when two consecutive query words occur within two words
    of each other in the note. None: the space language's measured default
    (fr 0.25, en 0). 0 disables."""
    form_max_share: Annotated[float, Meta(ge=0, le=1)] = 0.05
    """A query word held as written by more than this share of the notes
    (and by more than 1,000 notes) gets no exact-form clause, and two such
    words in a row no proximity clause: the clauses that cost a French query
    most and move its ranking least. 1 gives every word both."""


class FusionConfig(msgspec.Struct, frozen=True):
    """How channel rankings become one (Reciprocal Rank Fusion, see
    docs/ranking.md for the measurements behind the defaults)."""

    # k, lexical_weight and score_floor were re-tuned together once French
    # queries gained the exact-form and proximity clauses (docs/ranking.md,
    # "Fusion re-tuned"): over the same channel lists, nDCG@10 piaf-fr / cranfield
    # 0.8587 / 0.4106 at k 60, weight 1, floor 0.2; 0.8602 / 0.4122 here, and
    # better on each half of both collections' questions.
    k: Annotated[float, Meta(gt=0)] = 100.0
    """RRF constant: a note at rank r of a channel scores weight / (k + r).
    Larger k flattens the difference between the top ranks of a channel."""
    lexical_weight: float = 0.9
    """Weight of the lexical (BM25) channel."""
    semantic_weight: float = 1.0
    """Weight of the semantic (embedding) channel."""
    graph_weight: float = 0.1
    """Weight of the wiki-link graph channel (GRAPH_BOOST). At 1, a note the
    graph alone brings (a neighbour of a good hit) outranked the text
    channels' third hit, and took the place of the answer. bench/graph_hubs.py,
    all 3,835 questions, with the lexical channel as it is since the French
    boosts and the fusion above: nDCG@10 0.8189 at 0.25, 0.8232 at 0.15,
    0.8246 at 0.1 against 0.8243 for the lexical channel alone
    (docs/relevance.md)."""
    score_floor: Annotated[float, Meta(ge=0, le=1)] = 0.1
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


class CollectionConfig(msgspec.Struct, frozen=True):
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


# The fields an `open_url` template may use (index/editor_link.py fills them).
OPEN_URL_FIELDS = ("vault", "path", "abs_path", "heading", "path_heading", "line")


class ModelConfig(msgspec.Struct, frozen=True):
    """How to use one model pack, and the keys of the `[model]` table: each
    field is a key of the pack's model.json and of the configuration's
    `[model]` table (which wins, key by key), declared once here: its type,
    bounds (`Meta`), choices (`Choices`), reader (`ReadWith`), default
    (`Default`, or the field's own), whether it is `Required`, and whether it
    is `LabelOnly` (out of the vectors' fingerprint). semantic/model_config.py
    reads a pack's values through these declarations; docs/models.md lists
    every key (tests/test_model_settings.py keeps the two in step).

    An unknown `[model]` key stops the service at start, like any unknown
    key; the values are checked when the model loads, together with
    model.json's (which may be missing or wrong the same way), so a wrong one
    makes the semantic channel unavailable with its reason while lexical
    search goes on. No key has an environment variable (the pack is
    `model_dir`, the name sent to a server `embed_model`). A key without a
    default that is not `Required` is filled by its use (`name`)."""

    name: Annotated[str, ReadWith(str), LabelOnly()]
    """A label for messages and status; default: the pack folder's name (with
    `embed_url` and no pack, the model name sent to the server)."""
    dim: Annotated[int, Meta(gt=0), Required()]
    """Length of one embedding; checked against the model's real output."""
    max_tokens: Annotated[int, Meta(gt=0), Default(DEFAULT_MAX_TOKENS)]
    """Longer texts are truncated to this many tokens (special tokens included)."""
    pooling: Annotated[str, Choices(*POOLINGS), Required()]
    """"mean" (attention-masked mean of last_hidden_state) or "cls" (first token)."""
    normalize: Annotated[bool, Default(True)]
    """L2-normalise each vector, so that a dot product is a cosine."""
    query_prefix: Annotated[str, Default("")]
    """Prepended to queries (E5 models need "query: ")."""
    passage_prefix: Annotated[str, Default("")]
    """Prepended to passages (E5 models need "passage: ")."""
    relevance_margin: Annotated[float | None, Meta(ge=0, le=2), LabelOnly()] = None
    """How much more similar than unrelated text (the reference passages) a
    fragment must be to a query to count on its own (semantic/calibration.py);
    unset: the margin measured for the model, else None: every nearest
    fragment counts."""


class SpaceConfig(msgspec.Struct, frozen=True):
    """One space: a named folder of notes."""

    name: str
    path: Path
    language: str = AUTO_LANGUAGE
    """Analyzer language: "auto" (each note in its own language, among
    `languages`), or one Snowball language for every note by its ISO 639-1
    code ("fr", "en", "de", "es", "it"…: LANGUAGES)."""
    include: tuple[str, ...] = DEFAULT_INCLUDE
    """Glob patterns (relative POSIX paths) a note must match."""
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    """Glob patterns to skip; hidden files and folders are always skipped."""
    collections: tuple[CollectionConfig, ...] = ()
    """Named parts of the space; a note may belong to several."""
    open_url: str = ""
    """How a hit opens in an editor: a template of OPEN_URL_FIELDS ("" automatic, "none" never)."""
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    """With "auto": the languages a note may be read in, the first for a note
    too short to tell or in none of them."""

    @property
    def analyzed(self) -> tuple[str, ...]:
        """The languages the space's notes are analysed in, the fallback first."""
        return self.languages if self.language == AUTO_LANGUAGE else (self.language,)


class IgnoredFolder(msgspec.Struct, frozen=True):
    """A sub-folder of `spaces_root` that is not a space, and why (or the
    root itself, when notes directly in it belong to no space)."""

    path: Path
    reason: str
    suggested_name: str | None
    """A valid space name made from the folder's name (None: none could be)."""


class RootReading(msgspec.Struct, frozen=True):
    """How `spaces_root` was read (settings/root.py), and why in a sentence:
    as the one space `space` (a vault), or (None) a folder of spaces."""

    path: Path
    space: str | None
    reason: str

    @property
    def served_as(self) -> str:
        return "sub_folders" if self.space is None else "one_space"


# Read by semantic/__init__.py too: a process whose model is another's never
# imports onnxruntime (20 MiB a worker).
MODEL_SOCKET_ENV = "NOTARIUM_MODEL_SOCKET"


class Settings(msgspec.Struct, frozen=True):
    """Service settings. Each field is declared once: its type, default, the
    environment variable that sets it (`Env`), its bounds (`Meta`, checked by
    msgspec) or choices; `load_settings` reads the TOML key of the same name and
    the variable from these declarations, and tests/test_settings.py checks
    docs/configuration.md against them."""

    spaces: tuple[SpaceConfig, ...] = ()
    """Configured spaces: `vault`, `spaces_root` (one space or its
    sub-folders) plus `[spaces.NAME]` tables of the config file."""
    spaces_root: Annotated[Path | None, Env("NOTARIUM_SPACES_ROOT")] = None
    """A folder of spaces, each sub-folder whose name is a valid space name;
    or, when it holds notes directly or `.obsidian/` (a vault), one space."""
    vault: Annotated[Path | None, Env("NOTARIUM_VAULT")] = None
    """One folder served as one space, whatever it holds (its sub-folders
    included), named after the folder."""
    index_dir: Annotated[Path, Env("NOTARIUM_INDEX_DIR")] = Path(".notarium-index")
    """Where indexes live, one sub-folder per space.
    Never inside a notes folder."""
    host: Annotated[str, Env("NOTARIUM_HOST")] = "127.0.0.1"
    """Address the HTTP server binds."""
    port: Annotated[int, Env("NOTARIUM_PORT"), Meta(ge=1, le=65535)] = 8377
    """Port the HTTP server binds."""
    header_timeout: Annotated[float, Env("NOTARIUM_HEADER_TIMEOUT"), Meta(ge=0.5, le=60)] = 3.0
    """Seconds a client may take to send a request's
    headers (a new connection's first request, and each next one on a kept-alive
    connection); past it the connection is closed. Also the longest a graceful
    stop waits for such a client. 0.5 to 60."""
    body_timeout: Annotated[float, Env("NOTARIUM_BODY_TIMEOUT"), Meta(ge=0.5, le=300)] = 10.0
    """Seconds a client may take to send a request's body,
    counted from the end of its headers; past it the request is answered 408
    and the connection closed (a body sent a byte a second held its connection
    for good). 0.5 to 300."""
    max_connections: Annotated[int, Env("NOTARIUM_MAX_CONNECTIONS"), Meta(ge=1)] = 2048
    """Connections held open at once; more wait in the
    system's queue until one ends (never refused). Cut to what the file
    descriptor limit leaves after a reserve for the indexes."""
    workers: Annotated[int, Env("NOTARIUM_WORKERS"), Meta(ge=0, le=64)] = 0
    """Worker processes serving HTTP; 0: one per core available (within a
    container's CPU quota), at most 8. One of them
    writes each space's indexes, the others read them and follow its commits
    (docs/operations.md, "Workers"); with VECTOR_SEARCH and a local pack,
    one model process embeds for all of them."""
    log_level: Annotated[str, Env("NOTARIUM_LOG_LEVEL"), Choices("debug", "info", "warning", "error")] = "info"
    """debug, info, warning or error."""
    language: Annotated[str, Env("NOTARIUM_LANGUAGE"), Choices(*LANGUAGE_SETTINGS)] = AUTO_LANGUAGE
    """Default analyzer language of spaces: "auto" (each note in its own
    language, among `languages`) or one language's ISO 639-1 code."""
    languages: Annotated[tuple[str, ...], Env("NOTARIUM_LANGUAGES"), ReadWith(language_codes)] = DEFAULT_LANGUAGES
    """The languages "auto" chooses among, the first for a note too short to
    tell (18 Snowball languages: fr, en, de, es, it, pt, nl…)."""
    open_url: Annotated[str, Env("NOTARIUM_OPEN_URL")] = ""
    """Default template of the link that opens a hit in an editor, for spaces
    whose table gives none: fields {vault}, {path}, {abs_path}, {heading}, {line}; "" gives an
    Obsidian link when the space folder holds .obsidian/, "none" no link."""
    max_file_bytes: Annotated[int, Env("NOTARIUM_MAX_FILE_BYTES"), Meta(ge=1024)] = 2 * 1024 * 1024
    """Notes larger than this are truncated or
    skipped (see `oversize`)."""
    oversize: Annotated[str, Env("NOTARIUM_OVERSIZE"), Choices(*OVERSIZE_POLICIES)] = "truncate"
    """"truncate" (index the first max_file_bytes) or
    "skip"."""
    commit_every: Annotated[int, Env("NOTARIUM_COMMIT_EVERY"), Meta(ge=1)] = 20000
    """At most this many notes between two commits
    while a space builds (commits also come after 2 s, then at doubling
    intervals), so search answers from what is indexed so far."""
    parse_processes: Annotated[int, Env("NOTARIUM_PARSE_PROCESSES"), Meta(ge=0, le=64)] = 0
    """Processes that parse notes while a pass reads 512 files or more (a
    first index, a rebuild); 0 = one per core, 1 = the writer parses alone.
    They exist during that pass only (~50 MiB each)."""
    vector_search: Annotated[bool, Env("VECTOR_SEARCH")] = False
    """Enable the semantic channel (needs `model_dir`)."""
    model_dir: Annotated[Path | None, Env("NOTARIUM_MODEL_DIR")] = None
    """Local folder of the embedding model (model.onnx,
    tokenizer.json, model.json). Nothing is ever downloaded implicitly."""
    embed_threads: Annotated[int, Env("NOTARIUM_EMBED_THREADS"), Meta(ge=0)] = 0
    """Threads for bulk embedding; 0 = all cores."""
    embed_batch_size: Annotated[int, Env("NOTARIUM_EMBED_BATCH"), Meta(ge=1, le=256)] = 16
    """Fragments per model call (64 costs 1.6 GB RSS for no gain)."""
    query_embed_timeout_ms: Annotated[int, Env("NOTARIUM_QUERY_EMBED_TIMEOUT_MS"), Meta(ge=1)] = 300
    """Deadline of a query's embedding; past it
    the query is answered by the other channels and `degraded` says why."""
    embed_url: Annotated[str | None, Env("NOTARIUM_EMBED_URL"), ReadWith(url)] = None
    """OpenAI-compatible embeddings endpoint of an
    inference server (`http://gpu:8080/v1/embeddings`) that embeds the notes
    instead of the local model."""
    embed_model: Annotated[str | None, Env("NOTARIUM_EMBED_MODEL"), ReadWith(text_or_none)] = None
    """Model name sent to `embed_url` (its
    requests' `model`); default: the [model] table's `name`."""
    embed_token: Annotated[str | None, Env("NOTARIUM_EMBED_TOKEN"), ReadWith(text_or_none)] = None
    """Sent to `embed_url` as `Authorization:
    Bearer <token>`; best set in the environment."""
    embed_url_batch: Annotated[int, Env("NOTARIUM_EMBED_URL_BATCH"), Meta(ge=1, le=2048)] = 32
    """Fragments per request to `embed_url`."""
    embed_url_concurrency: Annotated[int, Env("NOTARIUM_EMBED_URL_CONCURRENCY"), Meta(ge=1, le=64)] = 4
    """Requests to `embed_url` in flight at
    once while a space builds."""
    embed_url_timeout: Annotated[float, Env("NOTARIUM_EMBED_URL_TIMEOUT"), Meta(gt=0, le=3600)] = 60.0
    """Seconds a request to `embed_url` may take
    before it is tried again."""
    model: Mapping[str, object] = msgspec.field(default_factory=dict)
    """[model] table: overrides of the pack's model.json, or all of it when
    the pack has none; its keys are the fields of `ModelConfig` (any other
    is refused), its values as written until the model loads and checks
    them with model.json's (semantic/model_config.py)."""
    graph_boost: Annotated[bool, Env("GRAPH_BOOST")] = False
    """Enable the wiki-link graph channel (not yet available)."""
    watch: Annotated[bool, Env("NOTARIUM_WATCH")] = True
    """Follow every space's files as they change (creates,
    edits, deletes, renames): searches see a change within about a second."""
    watch_debounce_ms: Annotated[int, Env("NOTARIUM_WATCH_DEBOUNCE_MS"), Meta(ge=0)] = 300
    """Quiet time after a change before it is
    applied, so that a burst (a `git pull`, a sync client, an editor's
    write-then-rename) is applied once."""
    reconcile_interval: Annotated[int, Env("NOTARIUM_RECONCILE_INTERVAL"), Meta(ge=0)] = 60
    """Seconds between two full comparisons of a
    space's files with its index when watching is off or impossible (network
    filesystems, inotify limits); 0 = never."""
    api_token: Annotated[str | None, Env("NOTARIUM_API_TOKEN"), ReadWith(token)] = None
    """When set, every request but /healthz needs
    `Authorization: Bearer <token>` (this one or the admin token)."""
    admin_token: Annotated[str | None, Env("NOTARIUM_ADMIN_TOKEN"), ReadWith(token)] = None
    """When set, POST /spaces/{space}/reindex needs it
    (the API token is then read-only)."""
    cors_origins: Annotated[tuple[str, ...], Env("NOTARIUM_CORS_ORIGINS"), ReadWith(origins)] = ()
    """Origins allowed to call the API from a browser
    (comma-separated in the environment); none by default."""
    allowed_hosts: Annotated[tuple[str, ...], Env("NOTARIUM_ALLOWED_HOSTS"), ReadWith(hosts)] = ()
    """Host names a request may be addressed to (its
    `Host` header, any port), besides the loopback names and the bound
    address: `notes.example.org`, `*.example.org` for sub-domains, `*` for
    any. Every other name is refused (DNS rebinding)."""
    trusted_proxies: Annotated[tuple[str, ...], Env("NOTARIUM_TRUSTED_PROXIES"), ReadWith(proxies)] = ()
    """Addresses or networks (`10.0.0.2`,
    `172.17.0.0/16`) of reverse proxies whose X-Forwarded-For and
    X-Forwarded-Proto are believed; none by default."""
    rate_limit_per_minute: Annotated[int, Env("NOTARIUM_RATE_LIMIT"), Meta(ge=0)] = 1200
    """Requests per minute per client address (429
    beyond; /healthz exempt); 0 = no limit. As-you-type search sends a few
    requests per second while typing."""
    activation_fields: Annotated[tuple[str, ...], Env("NOTARIUM_ACTIVATION_FIELDS"), ReadWith(names)] = (
        "used_in",
        "utilisé_dans",
    )
    """Frontmatter fields listing where a note
    was used ("activated"), first the main name then aliases (comma-separated
    in the environment). Read at query time: changing them needs no rebuild."""
    ranking: RankingConfig = msgspec.field(default_factory=RankingConfig)
    """[ranking] table of the config file."""
    fusion: FusionConfig = msgspec.field(default_factory=FusionConfig)
    """[fusion] table of the config file."""
    ignored_folders: tuple[IgnoredFolder, ...] = ()
    """Not a setting: what of `spaces_root` is in no space, and why (a name
    that is no valid space name, e.g. `Zettelkasten`, an entry that cannot be
    looked at); logged at start, in `notarium-search status` and /status."""
    root_reading: RootReading | None = None
    """Not a setting: how `spaces_root` was read; logged at start, in /status."""
    model_socket: Annotated[Path | None, Env(MODEL_SOCKET_ENV)] = None
    """The Unix socket of a model process that embeds for
    this one (semantic/model_server.py): set by `serve` for its workers when
    several search with VECTOR_SEARCH and a local pack; not to be set by hand."""
    sockets_dir: Path | None = None
    """Not a setting: the folder (mode 0700) of a `serve`'s sockets between its
    processes, made by `serve` when it has several workers: each space
    writer's link graph listens there for the other workers (graph/remote.py)."""

    def space_config(self, name: str) -> SpaceConfig | None:
        return next((s for s in self.spaces if s.name == name), None)
