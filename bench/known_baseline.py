"""The notes of a folder as the known-item benchmark sees them, and the
Omnisearch-like baseline that answers over them (bench/minisearch).

`read_notes(root)` reads every Markdown file once: its path, file name,
raw content, frontmatter aliases and ATX headings with their offsets — what
Obsidian's metadata cache hands Omnisearch, and what the benchmark types as
queries. `MiniSearchBaseline` runs `node bench/minisearch/omnisearch.mjs`
(MiniSearch 7.1.0 with Omnisearch 1.29.2's default index, query and
weights) over those notes and answers queries one at a time.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

MINISEARCH_DIR = Path(__file__).resolve().parent / "minisearch"
SCRIPT = MINISEARCH_DIR / "omnisearch.mjs"
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class NoteFile:
    path: str  # relative POSIX path, with .md
    basename: str  # file name without .md
    content: str  # the raw file, frontmatter included
    aliases: tuple[str, ...]
    headings: tuple[tuple[int, str, int], ...]  # (level, text, offset of its line in content)

    def section_at(self, offset: int) -> str | None:
        """The heading whose section holds `offset` (None: before any heading)."""
        found = None
        for _level, text, at in self.headings:
            if at > offset:
                break
            found = text
        return found


def _aliases(meta: object) -> tuple[str, ...]:
    if not isinstance(meta, dict):
        return ()
    value = meta.get("aliases", meta.get("alias"))
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
    if not isinstance(value, list):
        return ()
    return tuple(str(v).strip() for v in value if v is not None and str(v).strip())


def parse_note(path: str, content: str) -> NoteFile:
    meta: object = None
    body_at = 0
    match = _FRONTMATTER.match(content)
    if match:
        try:
            meta = yaml.safe_load(match.group(1))
        except yaml.YAMLError:
            meta = None
        body_at = match.end()
    headings: list[tuple[int, str, int]] = []
    fenced = False
    offset = body_at
    for line in content[body_at:].splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (found := _HEADING.match(line.rstrip("\r\n"))):
            headings.append((len(found.group(1)), found.group(2).strip(), offset))
        offset += len(line)
    basename = path.rsplit("/", 1)[-1].removesuffix(".md")
    return NoteFile(path, basename, content, _aliases(meta), tuple(headings))


def read_notes(root: Path) -> list[NoteFile]:
    """Every .md file under `root` (hidden folders aside), sorted by path."""
    notes = []
    for file in sorted(root.rglob("*.md")):
        rel = file.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        notes.append(parse_note(rel, file.read_text(encoding="utf-8", errors="replace")))
    return notes


def available() -> str | None:
    """Why the baseline cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (MINISEARCH_DIR / "node_modules" / "minisearch").is_dir():
        return f"MiniSearch is not installed: npm ci --prefix {MINISEARCH_DIR}"
    return None


class MiniSearchBaseline:
    """One node process holding one collection's index."""

    def __init__(self, notes: list[NoteFile]) -> None:
        self.notes = {note.path: note for note in notes}
        node = shutil.which("node") or "node"
        self.process = subprocess.Popen(
            [node, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            cwd=MINISEARCH_DIR,
        )
        docs = [
            {
                "path": n.path,
                "basename": n.basename,
                "content": n.content,
                "aliases": list(n.aliases),
                **{f"headings{level}": [t for lv, t, _ in n.headings if lv == level] for level in (1, 2, 3)},
            }
            for n in notes
        ]
        ready = self._ask({"notes": docs})
        if ready.get("ready") != len(docs):
            raise RuntimeError(f"the MiniSearch baseline did not load the notes: {ready}")

    def _ask(self, message: dict[str, object]) -> dict[str, object]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(message, ensure_ascii=False) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the MiniSearch baseline exited")
        answer: dict[str, object] = json.loads(line)
        return answer

    def rank(self, query: str) -> tuple[list[str], str | None]:
        """Paths best first, and the heading of the section the first note opens
        at (Omnisearch opens a note at its first match: `getMatches`)."""
        answer = self._ask({"q": query})
        paths = [str(p) for p in answer["paths"]]  # type: ignore[attr-defined]
        opened = answer.get("open", -1)
        heading = None
        if paths and isinstance(opened, int) and opened >= 0:
            heading = self.notes[paths[0]].section_at(opened)
        return paths, heading

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
