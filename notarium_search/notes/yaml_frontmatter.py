"""The YAML of a note's frontmatter: split from the body, loaded with YAML
1.2's core schema, and YAML's own timestamps read (notes/parse.py).

Apart from parse.py because PyYAML and python-frontmatter take ~20 ms to
import: parse.py imports this module when a note is first read, so a process
that reads no note — a search from the shell, which opens the index and the
format registry but parses nothing — does not pay for them (issue 34).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from yaml.constructor import SafeConstructor

# libyaml's parser when PyYAML has it: about 4x faster than the pure-Python one
# on frontmatter, which dominated indexing time.
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreSchemaLoader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader resolving plain scalars the way YAML 1.2's core schema does,
    as Obsidian shows them, and leaving timestamps as strings.

    PyYAML follows YAML 1.1, which rewrites what people wrote: `yes`/`no`/`on`/
    `off`/`y`/`n` become booleans (`title: No` → False, `tags: [no, fr]` →
    "false"), and `0012`, `0x1F`, `1_000`, `1:30` become octal, hex, grouped
    and sexagesimal integers (`id: 0012` → 10). Timestamps stay strings because
    PyYAML raises on impossible dates and returns naive datetimes; both are
    handled in `to_datetime`. Explicit tags (`!!bool yes`) still apply."""


_BOOL, _INT, _FLOAT = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_REPLACED_TAGS = {_BOOL, _INT, _FLOAT, _TIMESTAMP}
_CoreSchemaLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _REPLACED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CoreSchemaLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
# Plain decimal only: a leading zero is an identifier (`0012`), not octal.
_CoreSchemaLoader.add_implicit_resolver(_INT, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
# PyYAML's float forms minus underscores and sexagesimal; no new forms (`1e5`
# stays text, as before, so no id or title that was text becomes a number).
_CoreSchemaLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+.0123456789"),
)
# Only its splitting on `---` lines is used: loading is ours, to see non-mappings.
_HANDLER = YAMLHandler()
# Reads timestamps only YAML's grammar accepts (`to_datetime`). Its
# construct_yaml_timestamp reads nothing but its node: one instance serves all threads.
_TIMESTAMPS = SafeConstructor()


def split(text: str) -> tuple[str, str]:
    """The frontmatter's YAML and the body after it; ValueError when an
    opening `---` has no closing one."""
    raw_meta, body = _HANDLER.split(text)
    return raw_meta, body


def load(raw_meta: str) -> Any:
    """The frontmatter's YAML read with the core schema; raises what PyYAML raises."""
    return yaml.load(raw_meta, Loader=_CoreSchemaLoader)  # noqa: S506 - a SafeLoader subclass


def timestamp(text: str) -> date | None:
    """`text` as YAML reads a timestamp, or None when YAML's grammar does not
    call it one or it names no real moment (2024-02-30, an hour of 25)."""
    if not SafeConstructor.timestamp_regexp.match(text):
        return None
    try:
        value: date = _TIMESTAMPS.construct_yaml_timestamp(yaml.ScalarNode(_TIMESTAMP, text))
    except ValueError:  # 2024-02-30, an hour of 25, an offset of 24 hours or more
        return None
    return value
