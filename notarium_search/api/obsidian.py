"""The Obsidian syntax the preview renders that neither markdown-it-py nor
mdit-py-plugins parses: callouts and `==highlights==`.

Callouts: `> [!type] Title` opening a blockquote, `[!type]-` folded and
`[!type]+` foldable and open, as Obsidian writes them (markdown-it-py's own
`alerts` knows five GitHub types, no title and no folding). A callout is

    <div class="callout" data-callout="type" role="note">
      <p class="callout-title">Title</p><div class="callout-content">…</div></div>

or, foldable, `<details class="callout" data-callout="type" [open]>` with a
`<summary class="callout-title">`: the browser folds it, with no script, and
it is announced as a disclosure. The type is kept lowercased, only when it is
letters, digits, `-` and `_` (else the blockquote stays one); the title is
Markdown (a link, emphasis), the type capitalised when there is none.

Both rules are linear: the callout rule looks at the first line of each
blockquote once and rebuilds the token list in one pass (inserting into it
at each callout was quadratic in their number); `==` goes through
markdown-it's delimiter list, as `~~` does (markdown-it-mark, ported).
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.state_inline import Delimiter
from markdown_it.token import Token

MAX_CALLOUT_TYPE = 64  # characters of `[!type]`: Obsidian's are words
_EQUALS = 0x3D


def callout_plugin(md: MarkdownIt) -> None:
    # After the blocks, before their inline content is parsed: the title is parsed as Markdown.
    md.core.ruler.after("block", "callout", _callouts)


def _callouts(state: StateCore) -> None:
    tokens = state.tokens
    if not any(token.type == "blockquote_open" for token in tokens):
        return
    out: list[Token] = []
    closers: list[list[Token] | None] = []  # per open blockquote: what ends its callout (None: a blockquote)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.type == "blockquote_close":
            closer = closers.pop()
            out += [token] if closer is None else closer
            continue
        callout = _callout(tokens, index - 1) if token.type == "blockquote_open" else None
        if callout is None:
            if token.type == "blockquote_open":
                closers.append(None)
            out.append(token)
            continue
        kind, fold, title, rest = callout
        tag = "details" if fold else "div"
        opened = Token("callout_open", tag, 1, attrs={"class": "callout", "data-callout": kind}, block=True)
        if fold == "+":
            opened.attrs["open"] = ""
        elif not fold:
            opened.attrs["role"] = "note"
        heading = Token("inline", "", 0, content=title or kind.capitalize(), children=[])
        out += [
            opened,
            Token("callout_title_open", "summary" if fold else "p", 1, attrs={"class": "callout-title"}, block=True),
            heading,
            Token("callout_title_close", "summary" if fold else "p", -1, block=True),
            Token("callout_content_open", "div", 1, attrs={"class": "callout-content"}, block=True),
        ]
        paragraph = tokens[index : index + 3]  # its first paragraph: the marker line, then the text after it
        index += 3
        if rest:
            paragraph[1].content = rest
            out += paragraph
        closers.append(
            [Token("callout_content_close", "div", -1, block=True), Token("callout_close", tag, -1, block=True)]
        )
    state.tokens = out


def _callout(tokens: list[Token], index: int) -> tuple[str, str, str, str] | None:
    """(type, fold mark, title, the paragraph's other lines) when the blockquote
    at `index` opens with `[!type]`; None for a blockquote."""
    if index + 3 >= len(tokens) or tokens[index + 1].type != "paragraph_open":
        return None
    content = tokens[index + 2].content
    if not content.startswith("[!"):
        return None
    line_end = content.find("\n")
    line_end = len(content) if line_end == -1 else line_end
    close = content.find("]", 2, min(line_end, 2 + MAX_CALLOUT_TYPE + 1))
    kind = content[2:close]
    if close == -1 or not kind or not kind.replace("-", "a").replace("_", "a").isalnum() or not kind.isascii():
        return None
    after = close + 1
    fold = content[after] if after < line_end and content[after] in "+-" else ""
    title = content[after + len(fold) : line_end].strip()
    return kind.lower(), fold, title, content[line_end + 1 :]


def mark_plugin(md: MarkdownIt) -> None:
    """`==text==` → <mark>: markdown-it-mark's rule, as markdown-it's `~~` is written."""
    md.inline.ruler.before("emphasis", "mark", _mark_delimiters)
    md.inline.ruler2.before("emphasis", "mark", _mark_pairs)


def _mark_delimiters(state: StateInline, silent: bool) -> bool:
    """Each `==` of a run as a text token on the delimiter list (an odd run's
    first `=` stays text), for markdown-it's `balance_pairs` to pair them."""
    if silent or state.src[state.pos] != "=":
        return False
    scanned = state.scanDelims(state.pos, True)
    length = scanned.length
    if length < 2:
        return False
    if length % 2:
        state.push("text", "", 0).content = "="
        length -= 1
    for _ in range(length // 2):
        state.push("text", "", 0).content = "=="
        state.delimiters.append(Delimiter(_EQUALS, 0, len(state.tokens) - 1, -1, scanned.can_open, scanned.can_close))
    state.pos += scanned.length
    return True


def _mark_pairs(state: StateInline) -> None:
    _pair(state, state.delimiters)
    for meta in state.tokens_meta:
        if meta and "delimiters" in meta:
            _pair(state, meta["delimiters"])


def _pair(state: StateInline, delimiters: list[Delimiter]) -> None:
    lone: list[int] = []  # a lone `=` before a closer: moved after it, as `~` is
    for delimiter in delimiters:
        if delimiter.marker != _EQUALS or delimiter.end == -1:
            continue
        closer = delimiters[delimiter.end]
        opener, closing = state.tokens[delimiter.token], state.tokens[closer.token]
        opener.type, opener.nesting = "mark_open", 1
        closing.type, closing.nesting = "mark_close", -1
        for token in (opener, closing):
            token.tag, token.markup, token.content = "mark", "==", ""
        before = state.tokens[closer.token - 1]
        if before.type == "text" and before.content == "=":
            lone.append(closer.token - 1)
    while lone:
        at = lone.pop()
        end = at + 1
        while end < len(state.tokens) and state.tokens[end].type == "mark_close":
            end += 1
        end -= 1
        if at != end:
            state.tokens[at], state.tokens[end] = state.tokens[end], state.tokens[at]
