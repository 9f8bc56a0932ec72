"""The query's words marked in a rendered note (`?render=1&q=…`): each
occurrence wrapped in `<mark class="hit">`, found as search finds them.

The words are found in the text the note shows, not in its Markdown nor in
the HTML: every text the renderer escapes (prose, headings, link labels,
table cells, callout titles, footnotes, inline code and code blocks: search
indexes code too) is joined into one string, a line break between two, and
`highlight` (the service's `highlights`: the space's analyzer, stems and
accents folded, the last word as a prefix) is asked once where the words
are in it. Each range goes back to its token, and the token is rendered
escaped with its marks: a mark never falls inside a tag or an attribute, and
a word split by markup (`**inter**opérabilité`) is not marked. One pass over
the tokens and one over the ranges, both in order: linear in the note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml, unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from notarium_search.types import TextRange

Highlight = Callable[[str], Sequence[TextRange]]
_HITS = "hits"  # token.meta key: the ranges of its content to mark
_BLOCK_CODE = ("fence", "code_block")
_INLINE_TEXT = ("text", "code_inline")


def hits_plugin(md: MarkdownIt, highlight: Highlight) -> None:
    # Last: after footnotes moved to the end, callout titles parsed, headings given ids.
    md.core.ruler.push("hits", lambda state: _find(state, highlight))
    assert isinstance(md.renderer, RendererHTML)  # the default renderer, whose rules are wrapped
    for kind in (*_BLOCK_CODE, *_INLINE_TEXT):
        md.add_render_rule(kind, _marked(md.renderer.rules[kind]))


def _find(state: StateCore, highlight: Highlight) -> None:
    shown: list[Token] = []
    for token in state.tokens:
        if token.type in _BLOCK_CODE:
            shown.append(token)
        elif token.type == "inline" and token.children:
            shown += [child for child in token.children if child.type in _INLINE_TEXT]
    if not shown:
        return
    ranges = highlight("\n".join(token.content for token in shown))
    index, start = 0, 0  # the token holding offset `start` of the joined text
    for found in ranges:
        while index < len(shown) and found.start >= start + len(shown[index].content) + 1:
            start += len(shown[index].content) + 1
            index += 1
        if index == len(shown):
            break
        token = shown[index]
        end = min(found.end, start + len(token.content))
        if end > found.start:
            token.meta.setdefault(_HITS, []).append((found.start - start, end - start))


def _marked(default: Callable[..., str]) -> Callable[..., str]:
    """The token's render rule, its content escaped with its hits marked."""

    def rule(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        token = tokens[idx]
        hits = token.meta.get(_HITS) if token.meta else None
        if not hits:
            return default(tokens, idx, options, env)
        text = _with_marks(token.content, hits)
        if token.type == "text":
            return text
        if token.type == "code_inline":
            return f"<code>{text}</code>"
        info = unescapeAll(token.info).strip() if token.type == "fence" else ""
        language = info.split(maxsplit=1)[0] if info else ""
        kind = f' class="{escapeHtml(options.langPrefix + language)}"' if language else ""
        return f"<pre><code{kind}>{text}</code></pre>\n"

    return rule


def _with_marks(content: str, hits: Sequence[tuple[int, int]]) -> str:
    parts, done = [], 0
    for start, end in hits:
        parts += [escapeHtml(content[done:start]), '<mark class="hit">', escapeHtml(content[start:end]), "</mark>"]
        done = end
    parts.append(escapeHtml(content[done:]))
    return "".join(parts)
