"""A note rendered for the page's preview: its Markdown (frontmatter left
out: the page shows it as properties) turned into HTML by markdown-it-py
(CommonMark, raw HTML in the note not passed through), `[[wiki-links]]` made
links inside the page, then cleaned by nh3 (ammonia): whatever a note holds,
no script, event handler or `javascript:` link reaches the page."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from notarium_search.notes.parse import body_of

_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#]*)(#[^\[\]\n|]*)?(?:\|([^\[\]\n]*))?\]\]")
# Attributes the preview keeps on ammonia's default tags: links, and the
# classes the page styles (a dangling link, a code block's language).
ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "span": {"class"}, "code": {"class"}}


def render(markdown: str, resolve: Callable[[str], str | None], space: str) -> str:
    """Sanitised HTML of a note's body. `resolve` gives the note id a wiki-link
    target names (None: dangling, shown as plain text marked `dangling`)."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(resolve, space))
    html = md.render(body_of(markdown))
    return nh3.clean(html, attributes=ATTRIBUTES, link_rel="noopener noreferrer")


def _wikilink_rule(resolve: Callable[[str], str | None], space: str) -> Callable[[StateInline, bool], bool]:
    def rule(state: StateInline, silent: bool) -> bool:
        found = _WIKILINK.match(state.src, state.pos)
        if found is None:
            return False
        if not silent:
            target, heading, alias = found[1].strip(), (found[2] or "")[1:], found[3]
            label = (alias or "").strip() or target + (f" > {heading}" if heading else "") or heading
            note_id = resolve(target) if target else None
            if note_id is not None:
                opened = state.push("link_open", "a", 1)
                opened.attrs = {"href": f"#/note/{quote(space, safe='')}/{quote(note_id, safe='')}"}
                state.push("text", "", 0).content = label
                state.push("link_close", "a", -1)
            else:
                state.push("html_inline", "", 0).content = '<span class="dangling">'
                state.push("text", "", 0).content = label
                state.push("html_inline", "", 0).content = "</span>"
        state.pos = found.end()
        return True

    return rule


def resolver(links: Mapping[str, str]) -> Callable[[str], str | None]:
    """Wiki-link target as written → note id, from the note's resolved outgoing links."""
    return lambda target: links.get(target)
