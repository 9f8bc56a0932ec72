r"""Markdown body → plain text, headings, inline tags and wiki-links.

Pure functions over strings, no I/O. Regular expressions rather than a full
CommonMark parser: the index needs words, not a rendering, and notes written
in Obsidian dialects (wiki-links, `#tags`, callouts) trip strict parsers.

Code is set aside first (fenced blocks and inline spans, found in linear
time) and put back verbatim at the end, so no prose rule ever rewrites it.

Everything here runs in time linear in the note (issue 28: one note whose
parse never ends stops its space's indexing for good). The rule: no pattern
may rescan the same stretch of text from each of many starting points, as
`[^\]\n]*` did from every `[` of a run (20,000 `[`: 3.6 s, 4x the text 16x
the time), `<!--.*?-->` from every unclosed `<!--`, a lazy `.+?` before
`[ \t#]*$`, or two `[ \t]*` around an optional `\|`. So emphasis markers are
dropped where they touch a word instead of being paired (pairing rescans to
the end of the text from every unclosed opener); a link's label holds no `[`
in the pattern, and the earlier `[` that would have opened it is found after
(`_md_links`); comments close at the next closer found by `str.find`, or never
(`_without_comments`); a heading's trailing `#`s are cut by `rstrip`. The
tests of tests/notes/test_pathological.py run a million characters of each
such shape through it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator

import msgspec

from notarium_search.notes.guarded_pattern import GuardedPattern
from notarium_search.types import WikiLink

# Private-use characters frame the placeholders of set-aside code.
_INLINE_OPEN, _INLINE_CLOSE, _BLOCK_OPEN, _BLOCK_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
_SENTINELS_RE = GuardedPattern("[\ue000-\ue003]", "\ue000", "\ue001", "\ue002", "\ue003")
_PLACEHOLDER_RE = GuardedPattern("[\ue000\ue002](\\d+)[\ue001\ue003]", "\ue000", "\ue002")

_FENCE_RE = GuardedPattern(
    r"^ {0,3}(`{3,}|~{3,})[^\n]*\n?(.*?)(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", "```", "~~~", flags=re.M | re.S
)
_BACKTICKS_RE = re.compile(r"`+")
_PARAGRAPH_BREAK_RE = re.compile(r"\n(?=\n)")
# An ATX heading's line; its text is cut from the rest by `_heading_raw` (the
# pattern read `(.+?)[ \t#]*$`: from each length of `.+?` the rest of the line
# again, 35 s for `# # # … x` at 80,000 characters).
_HEADING_RE = GuardedPattern(r"^ {0,3}(#{1,6})([ \t]+)([^\n]*)", "#", flags=re.M)
_WIKILINK_RE = GuardedPattern(r"!?\[\[([^\[\]\n]+?)\]\]", "[[")
# `[label](destination)`, the label without `[`: `_md_links` widens a match to
# the earliest `[` that opens the same label (`[^\]\n]*` from every `[` of a
# run rescanned it to the end of the line: 3.6 s at 20,000 `[`).
_MD_LINK_RE = GuardedPattern(r"!?\[([^\[\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)", "](")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto):[^<>\s]+)>")
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>")
# Comments (`<!-- … -->`, Obsidian's `%% … %%`) are cut by `_without_comments`,
# not by `<!--.*?-->`: from each of 20,000 unclosed `<!--` that pattern read the
# rest of the text (0.6 s; 10.5 s at 80,000).
_COMMENTS = (("<!--", "-->"), ("%%", "%%"))
# A tag starts after whitespace or an opening bracket, never inside a word or
# URL, with a letter or `_` (Obsidian's rule: `#2024` is not a tag, `#2024a` is).
_TAG_RE = re.compile(r"(?:^|(?<=[\s(\[]))#((?:[^\W\d]|\d+[^\W\d])[\w/-]*)", re.M)
_LINE_PREFIX_RE = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:[-*+][ \t]+\[[ xX]\][ \t]+|[-*+][ \t]+|\d+[.)][ \t]+)?", re.M)
_CALLOUT_RE = GuardedPattern(r"\[!\w+\][+-]?", "[!")
# Block starts that decide whether an indented line is code (_without_indented_code).
_LIST_MARKER_RE = re.compile(r"([-+*]|\d{1,9}[.)])([ \t]+|$)")
_ATX_RE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_BREAK_RE = re.compile(r" {0,3}(?:(?:[-*_][ \t]*){3,}|=+[ \t]*)$")
# Emphasis markers touching a word on one side: `**gras**`, `~~barré~~`, `==x==`,
# `_souligné_` (underscores only at word edges, so snake_case survives).
# Whether a run is a marker is decided by `_marker`.
_MARKER_RE = GuardedPattern(r"\*{1,3}|~~|==|_{1,3}", "*", "~~", "==", "_")
# A thematic break, or a table's rule (`| --- |`, `:---`). The blanks before a
# table rule's pipe and after it are one `[ \t]*` each, the second only after
# a pipe: `[ \t]*\|?[ \t]*` split a long blank line both ways at every length
# (5 s for a line of 20,000 spaces, which a note of `%%%%…` also leaves).
_RULE_RE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$|^[ \t]*(?:\|[ \t]*)?:?-{3,}.*$", re.M)
_BLANKS_RE = GuardedPattern(r"[ \t]{2,}|\t", "  ", "\t")
_MANY_NEWLINES_RE = GuardedPattern(r"\n{3,}", "\n\n\n")


class MarkdownParts(msgspec.Struct, frozen=True):
    """What the index needs from a body, from a single pass over it."""

    headings: tuple[str, ...]
    first_h1: str | None
    tags: tuple[str, ...]
    links: tuple[WikiLink, ...]
    plain_text: str
    sections: tuple[tuple[int, int, str], ...] = ()  # (offset in plain_text, level, heading)
    code_blocks: tuple[tuple[int, int], ...] = ()  # [start, end) of fenced code in plain_text


def analyse(text: str) -> MarkdownParts:
    masked, code = _set_code_aside(text)
    found = [(len(m.group(1)), _heading_text(raw, code)) for m, raw in _headings(masked)]
    plain, code_blocks = _plain_text(masked, code)
    return MarkdownParts(
        headings=tuple(h for _, h in found),
        first_h1=next((h for level, h in found if level == 1 and h), None),
        tags=_inline_tags(masked),
        links=_wikilinks(masked),
        plain_text=plain,
        sections=_sections(plain, found),
        code_blocks=code_blocks,
    )


def strip_code(text: str) -> str:
    """The text without fenced code blocks or inline code spans."""
    masked, _ = _set_code_aside(text)
    return _PLACEHOLDER_RE.sub(lambda m: "\n" if m.group(0)[0] == _BLOCK_OPEN else " ", masked)


def headings(text: str) -> tuple[str, ...]:
    """ATX headings outside code blocks, in order, with inline syntax reduced."""
    return analyse(text).headings


def first_h1(text: str) -> str | None:
    return analyse(text).first_h1


def inline_tags(text: str) -> tuple[str, ...]:
    """`#tags` written in the body, outside code and links."""
    return _inline_tags(_set_code_aside(text)[0])


def wikilinks(text: str) -> tuple[WikiLink, ...]:
    """Outgoing `[[target#heading|alias]]` links outside code (embeds included)."""
    return _wikilinks(_set_code_aside(text)[0])


def to_plain_text(text: str) -> str:
    """Markdown reduced to the words a reader sees, for indexing and snippets.

    Code content is kept verbatim (people search for commands and
    identifiers); only the fences and markup around it go.
    """
    masked, code = _set_code_aside(text)
    return _plain_text(masked, code)[0]


# -- code set aside -------------------------------------------------------


def _set_code_aside(text: str) -> tuple[str, list[str]]:
    """Replace fenced blocks and inline code spans by numbered placeholders."""
    code: list[str] = []
    text = _SENTINELS_RE.sub(" ", text)

    def block(match: re.Match[str]) -> str:
        code.append(_normalise_space(match.group(2)))
        return f"\n{_BLOCK_OPEN}{len(code) - 1}{_BLOCK_CLOSE}\n"

    text = _FENCE_RE.sub(block, text)
    return _set_inline_code_aside(text, code), code


def _set_inline_code_aside(text: str, code: list[str]) -> str:
    """CommonMark code spans: a run of N backticks closes at the next run of
    exactly N. Linear: each run's next same-length run is found in one pass,
    and whether a paragraph break lies between a run and that one by a binary
    search over the breaks (copying the text between them to look read, for
    runs of every length with breaks between, much of the text per run:
    0.02 s at a million characters, 0.16 s at four)."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text)]
    if len(runs) < 2:
        return text
    breaks = [m.start() for m in _PARAGRAPH_BREAK_RE.finditer(text)]  # every "\n\n", overlapping ones too
    next_same: list[int | None] = [None] * len(runs)
    last_seen: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        next_same[i] = last_seen.get(length)
        last_seen[length] = i
    parts: list[str] = []
    pos = 0
    i = 0
    while i < len(runs):
        j = next_same[i]
        if j is None:
            i += 1
            continue
        start, inner_start = runs[i]
        inner_end, end = runs[j]
        at = bisect_left(breaks, inner_start)
        if at < len(breaks) and breaks[at] + 2 <= inner_end:  # a code span never crosses a paragraph break
            i += 1
            continue
        code.append(text[inner_start:inner_end].strip().replace("\n", " "))
        parts.append(text[pos:start] + f"{_INLINE_OPEN}{len(code) - 1}{_INLINE_CLOSE}")
        pos = end
        i = j + 1
    parts.append(text[pos:])
    return "".join(parts)


def _normalise_space(text: str) -> str:
    """Per-line trimming and collapsed blanks: layout, not content."""
    text = _BLANKS_RE.sub(" ", text)
    lines = (line.strip() for line in text.split("\n"))
    return _MANY_NEWLINES_RE.sub("\n\n", "\n".join(lines)).strip()


def _put_code_back(text: str, code: list[str]) -> str:
    return _PLACEHOLDER_RE.sub(lambda m: code[int(m.group(1))], text)


# -- prose ----------------------------------------------------------------


def _headings(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """Each heading line of the text, with its raw text (`_heading_raw`)."""
    for match in _HEADING_RE.finditer(text):
        raw = _heading_raw(match)
        if raw is not None:
            yield match, raw


def _sub_headings(text: str, replace: Callable[[str], str]) -> str:
    """The text with each heading line replaced by `replace` of its raw text."""

    def line(match: re.Match[str]) -> str:
        raw = _heading_raw(match)
        return match.group(0) if raw is None else replace(raw)

    return _HEADING_RE.sub(line, text)


def _heading_raw(match: re.Match[str]) -> str | None:
    r"""A heading's text as `^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$` read it, in
    linear time: the rest of the line without its trailing blanks and `#`s,
    but at least one character (`# #` is the heading "#"); on a line of blanks
    after the `#`s, the last blank; None where that pattern found no heading
    (`# ` and nothing after it)."""
    rest = match.group(3)
    if rest:
        return rest[: max(1, len(rest.rstrip(" \t#")))]
    blanks = match.group(2)
    return blanks[-1] if len(blanks) > 1 else None


def _without_comments(text: str) -> str:
    """The text with each HTML comment, then each Obsidian `%% … %%` comment,
    replaced by a space, as `<!--.*?-->` and `%%.*?%%` (dot matching newlines)
    did: a comment closes at the first closer after its opener; an opener with
    no closer after it is text, and so is every opener after it (the search
    stops there, where the pattern read the rest of the text again from each)."""
    for opener, closer in _COMMENTS:
        parts: list[str] = []
        pos = 0
        while (start := text.find(opener, pos)) != -1:
            end = text.find(closer, start + len(opener))
            if end == -1:
                break
            parts += (text[pos:start], " ")
            pos = end + len(closer)
        if parts:
            text = "".join([*parts, text[pos:]])
    return text


def _md_links(text: str, replace: Callable[[str], str]) -> str:
    r"""The text with each `[label](destination)` (and image) replaced by
    `replace` of its label, as `!?\[([^\]\n]*)\]\(…\)` found them: a label
    may hold `[`. `_MD_LINK_RE` finds the link from the last `[` before the
    `]`; the pattern matched from the earliest `[` that reaches the same `]`
    (none between, nor a line break), after the previous link. Finding that
    one `[` once per link, backwards from it, keeps this linear."""
    parts: list[str] = []
    pos = 0
    for match in _MD_LINK_RE.finditer(text):
        bracket = match.start(1) - 1
        floor = max(pos, text.rfind("]", pos, bracket) + 1, text.rfind("\n", pos, bracket) + 1)
        opening = text.find("[", floor, bracket)
        opening = bracket if opening == -1 else opening
        start = opening - 1 if opening > pos and text[opening - 1] == "!" else opening
        parts += (text[pos:start], replace(text[opening + 1 : match.end(1)]))
        pos = match.end()
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def _heading_text(raw: str, code: list[str]) -> str:
    return _put_code_back(_inline_to_text(raw), code).strip()


def _inline_tags(masked: str) -> tuple[str, ...]:
    if "#" not in masked:
        return ()
    # Code first, as CommonMark finds blocks before inline syntax: a `%%` in
    # code must not open a comment that swallows the prose after it.
    cleaned = _without_comments(_without_indented_code(masked))
    cleaned = _md_links(_WIKILINK_RE.sub(" ", cleaned), lambda label: " ")
    cleaned = _sub_headings(cleaned, lambda raw: " " + raw)
    tags = (m.group(1).rstrip("/-") for m in _TAG_RE.finditer(cleaned))
    return tuple(t for t in tags if t)


def _link_parts(inner: str) -> tuple[str, str, str]:
    """(target, heading, alias) of a wiki-link's inside, each stripped. Inside
    a table the alias pipe is written `\\|` (Obsidian's escape, else the pipe
    would split the cell): the backslash belongs to the syntax, not the target."""
    inner, pipe, alias = inner.partition("|")
    target, _, heading = (inner.removesuffix("\\") if pipe else inner).partition("#")
    return target.strip(), heading.strip(), alias.strip()


def _without_indented_code(text: str) -> str:
    """The text with its indented code blocks blanked, so that `    #include`
    in a C example is not a tag. Their text stays in the plain text: people
    search for code.

    CommonMark's rule for the common cases: a line indented by 4 columns or
    more (a tab reaches the next multiple of 4) is code when no paragraph is
    open, i.e. at the start, after a blank line, a heading, a thematic break
    or a fenced block; code goes on through blank lines to the next indented
    line. Right after paragraph text an indented line continues the paragraph
    (code cannot interrupt a paragraph). In a list item the 4 columns count
    from the item's content column (`- ` → 2, `10. ` → 4), so a paragraph
    indented under an item is prose; the list ends at a less indented line
    after a blank line. Not handled: code inside block quotes, HTML blocks."""
    if "    " not in text and "\t" not in text:
        return text
    lines = text.split("\n")
    paragraph_open = False
    after_blank = False
    list_column: int | None = None  # content column of the current list item
    for i, line in enumerate(lines):
        content = line.lstrip(" \t")
        if not content:
            paragraph_open, after_blank = False, True
            continue
        indent = _column(line[: len(line) - len(content)], 0)
        ended = after_blank and list_column is not None and indent < list_column
        if ended and not _LIST_MARKER_RE.match(content):
            list_column = None
        after_blank = False
        if indent >= (list_column or 0) + 4 and not paragraph_open:
            lines[i] = ""
            continue
        marker = _LIST_MARKER_RE.match(content)
        if _BREAK_RE.match(line) or _ATX_RE.match(line) or content.startswith(_BLOCK_OPEN):
            paragraph_open = False
        elif marker:
            start = indent + marker.end(1)
            gap = _column(marker.group(2), start) - start
            list_column = start + (gap if 1 <= gap <= 4 else 1)
            paragraph_open = True
        else:
            paragraph_open = True
    return "\n".join(lines)


def _column(blanks: str, column: int) -> int:
    """The column reached after `blanks` from `column`: a tab stops at the next multiple of 4."""
    for char in blanks:
        column += 4 - column % 4 if char == "\t" else 1
    return column


def _wikilinks(masked: str) -> tuple[WikiLink, ...]:
    links: list[WikiLink] = []
    for match in _WIKILINK_RE.finditer(masked):
        target, heading, alias = _link_parts(match.group(1))
        if not target and not heading:
            continue
        links.append(WikiLink(target=target, heading=heading or None, alias=alias or None))
    return tuple(links)


def _plain_text(masked: str, code: list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The plain text, and where each non-empty fenced code block sits in it."""
    text = _without_comments(masked)
    text = _RULE_RE.sub("", text)
    # A heading's line is its text, whatever it starts with: "### 1. Lire"
    # is the section "1. Lire", not a list item (its "1. " was dropped, and
    # the heading had no section to open at). So the list and quote markers
    # are dropped first, on the lines as written.
    text = _LINE_PREFIX_RE.sub("", text)
    text = _sub_headings(text, lambda raw: raw)
    text = _CALLOUT_RE.sub("", text)
    text = _inline_to_text(text)
    # An empty code block would leave blank lines behind: drop it first.
    text = _PLACEHOLDER_RE.sub(lambda m: m.group(0) if code[int(m.group(1))] else "", text.replace("|", " "))
    text = _normalise_space(text)
    parts: list[str] = []
    blocks: list[tuple[int, int]] = []
    length = pos = 0
    for match in _PLACEHOLDER_RE.finditer(text):
        parts.append(text[pos : match.start()])
        length += match.start() - pos
        content = code[int(match.group(1))]
        if match.group(0)[0] == _BLOCK_OPEN:
            blocks.append((length, length + len(content)))
        parts.append(content)
        length += len(content)
        pos = match.end()
    parts.append(text[pos:])
    return "".join(parts), tuple(blocks)


def _sections(plain: str, found: list[tuple[int, str]]) -> tuple[tuple[int, int, str], ...]:
    """(offset in the plain text, level, heading) of each heading, in order:
    a heading is a line of its own in the plain text, the first such line
    after the previous heading's; a heading the plain text does not hold as a
    line (`# a|b` is the line "a b") has no section.

    The lines that are some heading are listed once, with their offsets, and
    each heading takes the first after the previous one by a binary search.
    A search of the text for each heading read the rest of the text for each
    heading it did not find there (1.5 s for 13,000 `# a|b` after 80,000
    characters, 4x the note 12x the time), and took a line that merely
    started with the heading's words for the heading."""
    wanted = {heading for _, heading in found if heading}
    if not wanted:
        return ()
    lines: dict[str, list[int]] = {}
    at = 0
    for line in plain.split("\n"):
        if line in wanted:
            lines.setdefault(line, []).append(at)
        at += len(line) + 1
    sections = []
    pos = 0
    for level, heading in found:
        offsets = lines.get(heading, ())
        i = bisect_left(offsets, pos)
        if i < len(offsets):
            sections.append((offsets[i], level, heading))
            pos = offsets[i] + len(heading)
    return tuple(sections)


def _wikilink_text(match: re.Match[str]) -> str:
    target, heading, alias = _link_parts(match.group(1))
    text = alias or " ".join(part for part in (target, heading) if part)
    # `[[a]][[b]]` shows two links, not the word "ab"; text touching a link
    # (`[[chat]]s`, `[[a]].`) is one word with it, as the reader sees it.
    following = match.string[match.end() : match.end() + 3]
    return text + " " if following.startswith(("[[", "![[")) else text


def _inline_to_text(text: str) -> str:
    text = _WIKILINK_RE.sub(_wikilink_text, text)
    text = _md_links(text, lambda label: label)
    text = _AUTOLINK_RE.sub(lambda m: m.group(1), text)
    text = _HTML_TAG_RE.sub(" ", text)
    return _MARKER_RE.sub(_marker, text)


def _marker(match: re.Match[str]) -> str:
    """Drop an emphasis run that touches a word; keep `a * b`, `x == y`, snake_case."""
    text, start, end = match.string, match.start(), match.end()
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if match.group()[0] == "_":
        opens = not (before.isalnum() or before == "_") and not after.isspace()
        closes = not before.isspace() and not (after.isalnum() or after == "_")
        return "" if opens or closes else match.group()
    return "" if not (before.isspace() and after.isspace()) else match.group()
