"""Markdown body → plain text, headings, inline tags and wiki-links.

Pure functions over strings, no I/O. Regular expressions rather than a full
CommonMark parser: the index needs words, not a rendering, and notes written
in Obsidian dialects (wiki-links, `#tags`, callouts) trip strict parsers.
"""

from __future__ import annotations

import re

from notarium_search.models import WikiLink

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE_RE = re.compile(r"(`+)(.+?)\1", re.S)
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_WIKILINK_RE = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_MD_LINK_RE = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][^<>\n]*>")
_HTML_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
_OBSIDIAN_COMMENT_RE = re.compile(r"%%.*?%%", re.S)
# A tag starts after whitespace or an opening bracket, never inside a word or URL,
# and must contain a non-digit (Obsidian's rule: `#2024` is not a tag).
_TAG_RE = re.compile(r"(?:^|(?<=[\s(\[]))#((?:[^\W\d]|[_/-])[\w/-]*|\d+[^\W\d][\w/-]*)", re.M)
_LINE_PREFIX_RE = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:[-*+][ \t]+\[[ xX]\][ \t]+|[-*+][ \t]+|\d+[.)][ \t]+)?", re.M)
_CALLOUT_RE = re.compile(r"\[!\w+\][+-]?")
_EMPHASIS_RE = re.compile(r"(\*{1,3}|~~|==)(?=\S)(.+?)(?<=\S)\1", re.S)
# Underscore emphasis only at word edges, so snake_case identifiers survive.
_UNDERSCORE_EMPHASIS_RE = re.compile(r"(?<!\w)(_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)", re.S)
_RULE_RE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$|^[ \t]*\|?[ \t]*:?-{3,}.*$", re.M)
_BLANKS_RE = re.compile(r"[ \t]+")
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")


def strip_code(text: str) -> str:
    """The text without fenced code blocks or inline code spans."""
    return _INLINE_CODE_RE.sub(" ", _FENCE_RE.sub("\n", text))


def headings(text: str) -> tuple[str, ...]:
    """ATX headings outside code, in order, with inline syntax reduced."""
    return tuple(_inline_to_text(m.group(2)).strip() for m in _HEADING_RE.finditer(strip_code(text)))


def first_h1(text: str) -> str | None:
    for match in _HEADING_RE.finditer(strip_code(text)):
        if len(match.group(1)) == 1:
            return _inline_to_text(match.group(2)).strip() or None
    return None


def inline_tags(text: str) -> tuple[str, ...]:
    """`#tags` written in the body, outside code and links."""
    cleaned = _MD_LINK_RE.sub(" ", _WIKILINK_RE.sub(" ", strip_code(text)))
    cleaned = _HEADING_RE.sub(lambda m: " " + m.group(2), cleaned)
    return tuple(m.group(1).rstrip("/-") for m in _TAG_RE.finditer(cleaned))


def wikilinks(text: str) -> tuple[WikiLink, ...]:
    """Outgoing `[[target#heading|alias]]` links outside code (embeds included)."""
    links: list[WikiLink] = []
    for match in _WIKILINK_RE.finditer(strip_code(text)):
        inner, _, alias = match.group(1).partition("|")
        target, _, heading = inner.partition("#")
        target = target.strip()
        if not target and not heading:
            continue
        links.append(WikiLink(target=target, heading=heading.strip() or None, alias=alias.strip() or None))
    return tuple(links)


def to_plain_text(text: str) -> str:
    """Markdown reduced to the words a reader sees, for indexing and snippets.

    Code content is kept (people search for commands and identifiers); only
    the fences and markup around it go.
    """
    text = _OBSIDIAN_COMMENT_RE.sub(" ", _HTML_COMMENT_RE.sub(" ", text))
    text = _FENCE_RE.sub(_fence_body, text)
    text = _RULE_RE.sub("", text)
    text = _HEADING_RE.sub(lambda m: m.group(2), text)
    text = _LINE_PREFIX_RE.sub("", text)
    text = _CALLOUT_RE.sub("", text)
    text = _inline_to_text(text)
    text = text.replace("|", " ")
    text = _BLANKS_RE.sub(" ", text)
    lines = (line.strip() for line in text.split("\n"))
    return _MANY_NEWLINES_RE.sub("\n\n", "\n".join(lines)).strip()


def _fence_body(match: re.Match[str]) -> str:
    block = match.group(0)
    body = block.split("\n", 1)[1] if "\n" in block else ""
    fence = match.group(1)
    if body.rstrip().endswith(fence):
        body = body.rstrip()[: -len(fence)].rstrip("`~")
    return "\n" + body + "\n"


def _wikilink_text(match: re.Match[str]) -> str:
    inner, _, alias = match.group(1).partition("|")
    if alias.strip():
        return alias.strip()
    target, _, heading = inner.partition("#")
    return " ".join(part.strip() for part in (target, heading) if part.strip())


def _inline_to_text(text: str) -> str:
    text = _INLINE_CODE_RE.sub(lambda m: m.group(2), text)
    text = _WIKILINK_RE.sub(_wikilink_text, text)
    text = _MD_LINK_RE.sub(lambda m: m.group(1), text)
    text = _HTML_TAG_RE.sub(" ", text)
    for _ in range(2):  # nested emphasis such as ***bold italic*** or **_x_**
        text = _EMPHASIS_RE.sub(lambda m: m.group(2), text)
        text = _UNDERSCORE_EMPHASIS_RE.sub(lambda m: m.group(2), text)
    return text
