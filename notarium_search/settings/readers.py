"""Reading one setting's value: the readers `ReadWith` names in the
declarations (tokens, URLs, lists of origins, host names, proxies, field
names), paths, msgspec conversion with its error turned into a sentence,
the loose reading of a model.json or `[model]` value (`loose`), and
`ConfigError`, which they all raise. Leaf module: imports nothing from the
package (declared.py imports its readers)."""

from __future__ import annotations

import ipaddress
import math
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import msgspec


class ConfigError(ValueError):
    """The configuration is invalid; the message says which field and why."""


# A space's analyzer languages: ISO 639-1 codes of the 18 Snowball stemmers
# Tantivy ships (lexical/analysis.py maps each to its stemmer); French first.
LANGUAGES = ("fr", "en", "ar", "da", "de", "el", "es", "fi", "hu", "it", "nl", "no", "pt", "ro", "ru", "sv", "ta", "tr")
# `language = "auto"`: each note in its own language, among the space's `languages`.
AUTO_LANGUAGE = "auto"


# A host name (labels of letters, digits, hyphens; `*.` first for sub-domains) or an IP address.
_HOST_NAME = re.compile(r"(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\Z")
MIN_TOKEN_CHARS = 16  # a shorter bearer token is guessable
# A model.json or [model] switch, as text (case and spaces aside); unlike an
# environment switch, empty is not "off".
_LOOSE_TRUE = {"1", "true", "yes", "on"}
_LOOSE_FALSE = {"0", "false", "no", "off"}


def read_path(value: Any, base_dir: Path) -> Path:
    """A path setting: text, `~` expanded, relative to `base_dir` (the
    config file's folder, or the working folder for the environment)."""
    path = Path(converted(value, str, strict=True)).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base_dir / path))


def empty_path(value: Any) -> bool:
    """An empty path (`NOTARIUM_SPACES_ROOT=`, as a shell or a compose file
    leaves it) counts as unset: read as a path it was the current folder,
    which made every folder there a space."""
    return isinstance(value, str) and not value.strip()


def converted(value: Any, kind: Any, strict: bool) -> Any:
    try:
        return msgspec.convert(value, kind, strict=strict)
    except msgspec.ValidationError as exc:
        reason = str(exc).split(" - at ", 1)[0]  # "Expected `int`, got `float`"
        raise ConfigError(reason[:1].lower() + reason[1:]) from None


def loose(value: Any, kind: Any, bounds: msgspec.Meta | None, choices: tuple[str, ...]) -> Any:
    """A model.json or `[model]` value of `kind` (bool, int, float or str),
    read as model.json always was: a whole number may be written as text
    (`"384"`), a switch as `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`, a
    choice in any case (kept in lower case); a number is never a switch and
    a switch never a number. Raises ConfigError: "must be a positive
    integer, got 'wide'"."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _LOOSE_TRUE | _LOOSE_FALSE:
            return text in _LOOSE_TRUE
    elif kind is int:
        if not isinstance(value, bool) and isinstance(value, int | str):
            try:
                number = int(value)
            except ValueError:
                pass
            else:
                if _within(number, bounds):
                    return number
    elif kind is float:
        if not isinstance(value, bool) and isinstance(value, int | float) and _within(value, bounds):
            return float(value)
    elif choices:
        text = str(value).lower()
        if text in choices:
            return text
        raise ConfigError(f"must be one of {', '.join(choices)}, got {value!r}")
    elif isinstance(value, str):
        return value
    raise ConfigError(f"must be {_wanted(kind, bounds)}, got {value!r}")


def _within(number: float, bounds: msgspec.Meta | None) -> bool:
    """Whether `number` is within `bounds` (NaN never is)."""
    if math.isnan(number):
        return False
    if bounds is None:
        return True
    return (
        (bounds.gt is None or number > bounds.gt)
        and (bounds.ge is None or number >= bounds.ge)
        and (bounds.lt is None or number < bounds.lt)
        and (bounds.le is None or number <= bounds.le)
    )


def _wanted(kind: Any, bounds: msgspec.Meta | None) -> str:
    """What a loose value of `kind` must be: "a boolean", "a positive
    integer", "a number between 0 and 2"."""
    if kind is bool:
        return "a boolean"
    if kind is str:
        return "a string"
    noun = "an integer" if kind is int else "a number"
    if bounds is None:
        return noun
    if (bounds.gt, bounds.ge, bounds.lt, bounds.le) == (0, None, None, None):
        return f"a positive {noun.split()[-1]}"
    if bounds.ge is not None and bounds.le is not None and bounds.gt is None and bounds.lt is None:
        return f"{noun} between {bounds.ge:g} and {bounds.le:g}"
    limits = [
        f"{sign} {limit:g}"
        for sign, limit in ((">", bounds.gt), (">=", bounds.ge), ("<", bounds.lt), ("<=", bounds.le))
        if limit is not None
    ]
    return f"{noun} {' and '.join(limits)}"


def token(value: Any) -> str | None:
    token = converted(value, str, strict=True).strip()
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"must be at least {MIN_TOKEN_CHARS} characters")
    return token or None


def text_or_none(value: Any) -> str | None:
    return converted(value, str, strict=True).strip() or None


def url(value: Any) -> str | None:
    url = converted(value, str, strict=True).strip()
    if url and not re.match(r"https?://[^/\s]+", url):
        raise ConfigError(f"must be an http:// or https:// URL, got {url!r}")
    return url or None


def origins(value: Any) -> tuple[str, ...]:
    return tuple(item.rstrip("/") for item in text_list("cors_origins", value, "origins"))


def hosts(value: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(host_pattern(item) for item in text_list("allowed_hosts", value, "host names")))


def proxies(value: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_proxy(item) for item in text_list("trusted_proxies", value, "addresses")))


def names(value: Any) -> tuple[str, ...]:
    items = text_list("activation_fields", value, "names")
    names = tuple(dict.fromkeys(unicodedata.normalize("NFC", i.casefold()) for i in items))
    if not names:
        raise ConfigError("needs at least one name")
    return names


def language_codes(value: Any) -> tuple[str, ...]:
    """The languages a space set to "auto" reads, the first its fallback: codes of LANGUAGES."""
    items = tuple(dict.fromkeys(i.casefold() for i in text_list("languages", value, "language codes")))
    unknown = [i for i in items if i not in LANGUAGES]
    if unknown or not items:
        raise ConfigError(
            f"languages: {', '.join(unknown) or 'none given'}: each must be one of {', '.join(LANGUAGES)}"
        )
    return items


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


def text_list(key: str, value: Any, what: str) -> list[str]:
    """A TOML list of strings, or a comma-separated environment value: the
    non-empty items, stripped."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{key} must be a list of {what}, got {value!r}")
    return [i.strip() for i in items if i.strip()]
