"""A note rendered for the page's preview: its Markdown (frontmatter left
out: the page shows it as properties) turned into HTML by markdown-it-py
(CommonMark, raw HTML in the note not passed through), `[[wiki-links]]` made
links inside the page, then cleaned by nh3 (ammonia): whatever a note holds,
no script, event handler or `javascript:` link reaches the page.

Only the start of a long body is rendered (`bounded`), with a notice after
it. markdown-it-py is linear but slow, and a render holds the GIL: measured on
40,000-character notes of one repeated unit (µs per character, on the 2-core
machine of issue 28), prose costs 0.04, a character it stops at (`&`, `<`,
`#`, `!`…) 2 to 3, a `*` or `_` touching a word up to 14, a `[` 14 to 40 (it
looks for the label's end, with every inline rule at each character), a line
13 to 40 (a list item's the most). An ordinary note renders at ~2 µs per
character (an 866 KB one: 1.5 s). 20,000 reference links, each used three
ways, and their definitions (1.7 MB) took 2.6 s, spread over each link and
definition (profiled: the link rule, the reference rule, normalizeLink: none
of them worse than linear); a list nested 2,000 deep is 4 MB of indentation
(1.0 s). So the render stops at MAX_PREVIEW_CHARS, or sooner at the
MAX_PREVIEW_MARKS-th line, `*` or `_` (a `[` counts twice): the worst of
these shapes then takes 0.4 s on that machine, the ordinary note 0.2 s.
markdown-it's own bound, maxNesting, stays at CommonMark's 20: lowering it to
5 saved at most 40 % on runs of `[`, and past it markdown-it drops the rest
of the block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

MAX_PREVIEW_CHARS = 100_000
MAX_PREVIEW_MARKS = 10_000  # lines, `*` and `_` rendered, each up to 40 µs; a `[` counts twice (up to 57)
_MARKS = re.compile(r"[\n\[*_]")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#]*)(#[^\[\]\n|]*)?(?:\|([^\[\]\n]*))?\]\]")
# Attributes the preview keeps on ammonia's default tags: links, and the
# classes the page styles (a dangling link, a code block's language).
ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "span": {"class"}, "code": {"class"}}


def render(body: str, resolve: Callable[[str], str | None], space: str) -> str:
    """Sanitised HTML of a note's body (its Markdown without the frontmatter:
    `NoteDetail.body`). `resolve` gives the note id a wiki-link target names
    (None: dangling, shown as plain text marked `dangling`)."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False})
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(resolve, space))
    shown = bounded(body)
    html = nh3.clean(md.render(shown), attributes=ATTRIBUTES, link_rel="noopener noreferrer")
    if len(shown) == len(body):
        return html
    return html + (
        f'<p class="preview-cut">The preview shows the first {len(shown):,} characters'
        f" of the note's {len(body):,}: open the note to read the rest.</p>"
    )


def bounded(body: str) -> str:
    """The start of the body that is rendered: at most MAX_PREVIEW_CHARS, and
    no further than MAX_PREVIEW_MARKS of its lines, `[` (two each), `*` and
    `_`; cut at the end of a line when one ends in it, so that no line is
    rendered in part."""
    head = body[:MAX_PREVIEW_CHARS]
    if sum(map(head.count, "\n[[*_")) >= MAX_PREVIEW_MARKS:
        count = 0
        for mark in _MARKS.finditer(head):
            count += 2 if mark.group() == "[" else 1
            if count >= MAX_PREVIEW_MARKS:
                head = head[: mark.start()]
                break
    if len(head) == len(body):
        return body
    line_end = head.rfind("\n")
    return head[:line_end] if line_end > 0 else head


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
