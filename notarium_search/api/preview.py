"""A note rendered for the page's preview: its Markdown (frontmatter left
out: the page shows it as properties) turned into HTML by markdown-it-py
(CommonMark, raw HTML in the note not passed through; GFM tables, task lists
and strikethrough; footnotes and heading ids by mdit-py-plugins; callouts and
`==highlights==` by api/obsidian.py), `[[wiki-links]]` and `![[embeds]]` made
links inside the page, the query's words marked (api/preview_hits.py), then
cleaned by nh3 (ammonia): whatever a note holds, no script, event handler,
style or `javascript:` link reaches the page.

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

GFM and Obsidian syntax (issue 31) brought shapes of their own, measured on
that machine loaded by other work: a `==` or `~~` costs about a third of a
line (100,000 characters of `==a `: 0.9 s), so each counts as a mark; a table
cell about a line, and a row has as many as its header, so tables stop at
MAX_TABLE_CELLS per note (`_table`). Two plugin rules were not linear and are
wrapped: the footnote reference (`_footnote_ref`) and the heading ids'
de-duplication (`_slugs`). The worst shape is now 8,000 headings (an id
each): 0.85 to 1.2 s there, where 9,000 list items took 0.6 to 0.7 s in the
same runs and took that before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from urllib.parse import quote

import nh3
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_block.table import table
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.anchors.index import slugify
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.footnote.index import footnote_ref

from notarium_search.api.obsidian import callout_plugin, mark_plugin
from notarium_search.api.preview_hits import Highlight, hits_plugin

MAX_PREVIEW_CHARS = 100_000
MAX_PREVIEW_MARKS = 10_000  # lines, `*`, `_`, `==`, `~~` rendered, each up to 40 µs; a `[` counts twice (up to 57)
MAX_PREVIEW_HITS = 1_000  # query words marked in a note (a hit's snippets look for 64)
MAX_PREVIEW_HIT_WORDS = 10_000  # words checked against the query, each stemmed once (~10 µs): 0.1 s at worst
MAX_TABLE_CELLS = 10_000  # table cells rendered per note, each about a line's cost (`_table`)
MAX_LABEL = 999  # characters of a footnote's label, as CommonMark bounds a link's
_MARKS = re.compile(r"[\n\[*_]|==|~~")
_LABEL_END = re.compile(r"[\] \n]")
_CELLS_LEFT = "notarium_table_cells_left"  # in markdown-it's env: the render's cell budget left
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#]*)(#[^\[\]\n|]*)?(?:\|([^\[\]\n]*))?\]\]")
MAX_SLUG = 80  # characters of a heading's id (a 100,000-character heading is one)
ID_PREFIX = "md-"  # on every id the preview makes: a heading "note-content" is not the page's #note-content
# What the preview keeps after ammonia's defaults: links; the classes the page
# styles (a dangling link, an embed, a code block's language, callouts, task
# lists, footnotes, the query's words); ids the page scrolls to (headings,
# footnotes); a table column's alignment as `align` (markdown-it writes a
# `style`, which no element keeps).
TAGS = nh3.ALLOWED_TAGS | {"input", "section"}
ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title", "class", "id"},
    "span": {"class"},
    "code": {"class"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
    "ul": {"class"},
    "ol": {"class", "start"},
    "li": {"class", "id"},
    "input": {"class", "checked"},
    "div": {"class", "data-callout"},
    "details": {"class", "data-callout", "open"},
    "summary": {"class"},
    "p": {"class"},
    "mark": {"class"},
    "sup": {"class"},
    "section": {"class"},
    "hr": {"class"},
}
ALIGN = {"left", "center", "right"}
# A task's checkbox is a disabled checkbox whatever the HTML says: it shows, it does not edit.
ATTRIBUTE_VALUES = {"th": {"align": ALIGN}, "td": {"align": ALIGN}, "div": {"role": {"note"}}}
SET_ATTRIBUTES = {"input": {"type": "checkbox", "disabled": ""}}


def render(body: str, resolve: Callable[[str], str | None], space: str, highlight: Highlight | None = None) -> str:
    """Sanitised HTML of a note's body (its Markdown without the frontmatter:
    `NoteDetail.body`). `resolve` gives the note id a wiki-link target names
    (None: dangling, shown as plain text marked `dangling`); `highlight`, the
    ranges of a text where the query's words are (preview_hits.py)."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "tasklists": True})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wikilink", _wikilink_rule(resolve, space))
    md.use(footnote_plugin).use(callout_plugin).use(mark_plugin)
    md.inline.ruler.at("footnote_ref", _footnote_ref)
    md.block.ruler.at("table", _table, {"alt": ["paragraph", "reference"]})
    md.use(anchors_plugin, max_level=6, slug_func=_slugs())
    md.core.ruler.push("align", _align)
    if highlight is not None:
        md.use(hits_plugin, highlight)
    shown = bounded(body)
    html = nh3.clean(
        md.render(shown, {"docId": ID_PREFIX.rstrip("-")}),
        tags=TAGS,
        attributes=ATTRIBUTES,
        tag_attribute_values=ATTRIBUTE_VALUES,
        set_tag_attribute_values=SET_ATTRIBUTES,
        link_rel="noopener noreferrer",
    )
    if len(shown) == len(body):
        return html
    return html + (
        f'<p class="preview-cut">The preview shows the first {len(shown):,} characters'
        f" of the note's {len(body):,}: open the note to read the rest.</p>"
    )


def bounded(body: str) -> str:
    """The start of the body that is rendered: at most MAX_PREVIEW_CHARS, and
    no further than MAX_PREVIEW_MARKS of its lines, `[` (two each), `*`, `_`,
    `==` and `~~`; cut at the end of a line when one ends in it, so that no line is
    rendered in part."""
    head = body[:MAX_PREVIEW_CHARS]
    if sum(map(head.count, ("\n", "[", "[", "*", "_", "==", "~~"))) >= MAX_PREVIEW_MARKS:
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
            embed = found[0].startswith("!")  # `![[x]]`: shown as a link to it, not inlined
            if note_id is not None:
                opened = state.push("link_open", "a", 1)
                opened.attrs = {"href": f"#/note/{quote(space, safe='')}/{quote(note_id, safe='')}"}
                if embed:
                    opened.attrs["class"] = "embed"
                state.push("text", "", 0).content = label
                state.push("link_close", "a", -1)
            else:
                kind = "dangling embed" if embed else "dangling"
                state.push("html_inline", "", 0).content = f'<span class="{kind}">'
                state.push("text", "", 0).content = label
                state.push("html_inline", "", 0).content = "</span>"
        state.pos = found.end()
        return True

    return rule


def _footnote_ref(state: StateInline, silent: bool) -> bool:
    """mdit-py-plugins' `[^label]`, tried only where a `]` ends a label of at
    most MAX_LABEL characters: the plugin looks for it to the end of the line
    from every `[^` (4,900 `[^` on a line: 29 s), and asks for its data at
    every character the text rule stops at."""
    if not state.src.startswith("[^", state.pos):
        return False
    end = _LABEL_END.search(state.src, state.pos + 2, min(state.posMax, state.pos + 2 + MAX_LABEL + 1))
    return end is not None and end.group() == "]" and footnote_ref(state, silent)


def _table(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """markdown-it's table, within MAX_TABLE_CELLS cells per note: a row has
    as many cells as the header, missing ones made empty (each a few tokens),
    so 66 rows of one character under a header of 1,000 columns were 65,000
    cells (3 s). Rows past the budget are text after the table."""
    header = state.src[state.bMarks[start] + state.tShift[start] : state.eMarks[start]]
    columns = header.count("|") + 1  # at least the header's cells
    left: int = state.env.get(_CELLS_LEFT, MAX_TABLE_CELLS)
    rows = left // columns
    if rows < 2:  # not even the header and its delimiter row
        return False
    if not table(state, start, min(end, start + rows), silent):
        return False
    if not silent:
        state.env[_CELLS_LEFT] = left - (state.line - start) * columns
    return True


def _slugs() -> Callable[[str], str]:
    """A heading's id: ID_PREFIX and the anchors plugin's slug (GitHub's), cut
    to MAX_SLUG characters, made unique here with `-1`, `-2`… The plugin's own
    de-duplication tries every suffix from `-1` for each heading: 10,000 equal
    headings took 50 s; here each base remembers its next suffix."""
    used: set[str] = set()
    following: dict[str, int] = {}

    def slug(title: str) -> str:
        base = ID_PREFIX + slugify(title[: MAX_SLUG * 2])[:MAX_SLUG]
        suffix = following.get(base, 0)
        unique = f"{base}-{suffix}" if suffix else base
        while unique in used:
            suffix += 1
            unique = f"{base}-{suffix}"
        following[base] = suffix + 1
        used.add(unique)
        return unique

    return slug


def _align(state: StateCore) -> None:
    """A table column's alignment as the `align` attribute (browsers honour
    it) instead of markdown-it's `style="text-align:…"`, which is not kept."""
    for token in state.tokens:
        style = token.attrs.get("style") if token.type in ("th_open", "td_open") else None
        if isinstance(style, str):
            token.attrs = {"align": style.removeprefix("text-align:")}


def resolver(links: Mapping[str, str]) -> Callable[[str], str | None]:
    """Wiki-link target as written → note id, from the note's resolved outgoing links."""
    return lambda target: links.get(target)
