"""The link that opens a note in the editor it lives in: a space's `open_url`
template (docs/configuration.md) filled for one note.

Each field is percent-encoded for where it goes: {vault} and {path} as query
values (every reserved character, `/` included: Obsidian asks for `%2F`),
{abs_path} as a path, with its leading `/` (`vscode://file{abs_path}:{line}`);
{heading} (the match's section, "" before the first heading) as a query
value; {path_heading} is Obsidian's link text for the note at that section
(the path without `.md` then `#` and the heading; a PDF's `paper.pdf#page=3`:
notes/formats.py, `link_text`), which its URI's `file` accepts,
as a query value; {line} is the match's line in the file (1 when unknown). Spaces, accents,
`#`, `&` and `?` in a file name never break the link. Pure: no I/O but the
one look for `.obsidian/` when the space's template is automatic.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from notarium_search.notes import formats
from notarium_search.settings import SpaceConfig

# Obsidian's URI documentation (help.obsidian.md/uri, "Open a heading or
# block"): `file=Note%23Heading` opens the note at that heading.
OBSIDIAN = "obsidian://open?vault={vault}&file={path_heading}"
NONE = "none"


def template_for(config: SpaceConfig) -> str | None:
    """The space's template: its own, else an Obsidian link when its folder is
    an Obsidian vault (holds `.obsidian/`), else none."""
    if config.open_url == NONE:
        return None
    if config.open_url:
        return config.open_url
    return OBSIDIAN if (config.path / ".obsidian").is_dir() else None


def render(template: str, root: Path, path: str, heading: str = "", line: int = 1) -> str:
    """The template filled for the note at `path` (POSIX, relative to the space
    folder `root`), at the section `heading` and the file line `line` of its match."""
    absolute = (root / path).as_posix()
    link_text = formats.link_text(path, heading)
    return template.format(
        vault=quote(root.name, safe=""),
        path=quote(path, safe=""),
        abs_path=quote(absolute, safe="/"),
        heading=quote(heading, safe=""),
        path_heading=quote(link_text, safe=""),
        line=line,
    )
