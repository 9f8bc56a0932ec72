"""The note-format seam (notes/formats.py): Markdown registered like any
format, a format of the tests only made by docs/architecture.md's recipe,
files no format reads, and each format's version in the index fingerprint."""

from __future__ import annotations

import json
import logging
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from notarium_search.index.folder import index_fingerprint
from notarium_search.lexical.schema import fingerprint as lexical_fingerprint
from notarium_search.notes import formats, parse
from notarium_search.notes.canvas import CANVAS
from notarium_search.notes.parse import MARKDOWN, PARSER_VERSION, NotANote, decode_note
from notarium_search.notes.pdf import PDF
from notarium_search.notes.scan import scan_space, stat_paths
from notarium_search.service import Service
from notarium_search.settings import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Settings, SpaceConfig, load_settings
from notarium_search.types import FeedFilter, ParsedNote
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()
BUILT_INS = (MARKDOWN, PDF, CANVAS)
ROOT = Path(__file__).parents[2]


@dataclass
class PlainText:
    """A note format of the tests only, made by the recipe: a `.txt` file is
    a note, its first line its title (from version 2: in capitals)."""

    version: int = 1
    name: str = "plain_text"
    suffixes: tuple[str, ...] = (".txt",)
    max_bytes: int | None = None

    def shown(self, raw: bytes, path: str, *, truncated: bool = False) -> str:
        return decode_note(raw, truncated=truncated)

    def link_text(self, path: str, heading: str) -> str:
        return path + (f"#{heading}" if heading else "")

    def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool = False) -> ParsedNote:
        text = decode_note(raw, truncated=truncated)  # refuses binary and non-UTF-8 files (NotANote)
        title = text.partition("\n")[0].strip() or posixpath.splitext(posixpath.basename(path))[0]
        if self.version >= 2:
            title = title.upper()
        return ParsedNote(
            id=path,
            path=path,
            title=title,
            tags=(),
            folder=posixpath.dirname(path),
            created=mtime,
            updated=mtime,
            headings=(),
            links=(),
            text=text,
        )


@pytest.fixture
def plain_text() -> Iterator[PlainText]:
    fmt = PlainText()
    formats.register(fmt)
    try:
        yield fmt
    finally:
        formats.unregister(fmt)


def loaded(vault: Vault, extra: str = "") -> Settings:
    """The settings a configuration file gives: `include` is not set unless `extra` sets it."""
    config = vault.root.parent / "notarium.toml"
    config.write_text(f'spaces_root = "{vault.root}"\nindex_dir = "{vault.index_dir}"\n{extra}', encoding="utf-8")
    return load_settings(config, env={})


def indexed(vault: Vault, settings: Settings) -> Service:
    """A service whose spaces, those of `settings`, are fully indexed."""
    return vault.service(spaces=settings.spaces)


def test_the_built_in_formats_are_registered():
    assert formats.registered() == BUILT_INS
    assert formats.for_path("dossier/note.md") is MARKDOWN
    assert formats.for_path("NOTE.MD") is MARKDOWN  # as before: an `include` matching it read it as Markdown
    assert formats.for_path("plan.canvas") is CANVAS
    assert formats.for_path("Articles/Étude.PDF") is PDF
    assert formats.for_path("README") is None
    # What `include` means when not set is what settings and docs/notes.md say it is.
    assert formats.default_include() == DEFAULT_INCLUDE == ("**/*.md", "**/*.pdf", "**/*.canvas")


def test_register_refuses_a_format_it_could_not_tell_apart(plain_text: PlainText):
    with pytest.raises(ValueError, match=r"\.md files are read by markdown"):
        formats.register(PlainText(name="other", suffixes=(".md",)))
    with pytest.raises(ValueError, match="already registered"):
        formats.register(PlainText(suffixes=(".text",)))
    for suffixes in ((".TXT2",), ("txt",), (".tar.gz",), (".*",), ()):
        with pytest.raises(ValueError, match="suffix"):
            formats.register(PlainText(name="other", suffixes=suffixes))
    with pytest.raises(ValueError, match="version"):
        formats.register(PlainText(name="other", suffixes=(".text",), version=-1))
    assert formats.registered() == (*BUILT_INS, plain_text)  # nothing half-registered


def test_the_fingerprint_names_each_format_markdown_as_before_the_registry(vault: Vault):
    """Markdown's part is the string index/indexer.py wrote before the registry
    ("parser12"); the PDF and canvas formats (issue 32) add theirs, so a space
    indexed before them is rebuilt once, its PDFs and canvases read. Whether
    `include` is unset, the default, or a set of Markdown patterns, it is the same."""
    vault.write("a.md", "texte")
    settings = Settings()
    expected = (
        f"{lexical_fingerprint(('fr', 'en'))}-parser{PARSER_VERSION}-canvas1-pdf1"
        f"-max{settings.max_file_bytes}-{settings.oversize}-collections-none"
    )
    assert index_fingerprint(SpaceConfig("notes", vault.root / "notes"), settings) == expected
    (default,) = loaded(vault).spaces
    assert default.include == ()  # not set: the registered formats'
    assert index_fingerprint(default, settings) == expected
    (explicit,) = loaded(vault, 'include = ["*.md", "projets/**/*.MD"]\n').spaces
    assert index_fingerprint(explicit, settings) == expected


def test_an_include_that_may_match_other_files_rebuilds_once():
    """Such files were read as Markdown before the registry, and are skipped now:
    an index holding them is rebuilt, not left to differ from a clean build."""
    markdown = formats.fingerprint(("*.md",))
    assert formats.fingerprint(("**/*",)) == f"{markdown}-unformatted_skipped"
    assert formats.fingerprint(("*.md", "notes/*.txt")) == f"{markdown}-unformatted_skipped"
    assert formats.fingerprint(()) == markdown


def test_default_include_scans_every_registered_format(vault: Vault, plain_text: PlainText):
    for rel_path in ("a.md", "b.txt", "sous/c.txt", "d.canvas", "e", "f.xyz"):
        vault.write(rel_path, "texte")
    notes = vault.root / "notes"
    scanned = ["a.md", "b.txt", "d.canvas", "sous/c.txt"]
    assert [f.path for f in scan_space(notes, (), DEFAULT_EXCLUDE).files] == scanned
    found, missing = stat_paths(notes, ["b.txt", "f.xyz", "gone.txt"], (), DEFAULT_EXCLUDE) or ([], [])
    assert ([f.path for f in found], missing) == (["b.txt"], ["gone.txt"])
    # An include written in the file is as it was: only what it matches.
    assert [f.path for f in scan_space(notes, DEFAULT_INCLUDE, DEFAULT_EXCLUDE).files] == ["a.md", "d.canvas"]


def test_a_format_registered_in_the_tests_is_indexed_and_searched(vault: Vault, plain_text: PlainText):
    """docs/architecture.md's recipe, followed: the format's files are scanned
    (include not set), read by it, indexed and searched beside the Markdown
    notes; and its version changed rebuilds the space."""
    vault.write("a.md", "---\nid: a\n---\nUne note en Markdown sur la marée.\n")
    vault.write("journal/b.txt", "Carnet de bord\nLa marée monte au port.\n")
    vault.write("binaire.txt", b"\x00\x01")
    settings = loaded(vault)
    service = indexed(vault, settings)
    try:
        results = service.search("notes", "marée", NO_FILTER, 10).results
        assert sorted(ids(service.search("notes", "marée", NO_FILTER, 10))) == ["a", "journal/b.txt"]
        assert {h.note.id: h.note.title for h in results}["journal/b.txt"] == "Carnet de bord"
        status = service.status()[0]
        assert status.notes == 2
        assert [(s.path, s.reason) for s in status.skipped_notes] == [("binaire.txt", "binary file (NUL byte)")]
        fingerprint = index_fingerprint(settings.spaces[0], settings)
        tokens = ["parser" + str(PARSER_VERSION), "canvas1", "pdf1", "plain_text1"]
        parts = fingerprint.split("-")
        assert parts[parts.index(tokens[0]) :][:4] == tokens
    finally:
        service.stop()

    plain_text.version = 2  # what `read` returns changed: the version says so
    assert index_fingerprint(settings.spaces[0], settings) != fingerprint
    service = indexed(vault, settings)
    try:
        lexical = service.status()[0].lexical
        assert (lexical.total, lexical.indexed) == (3, 3)  # rebuilt: every file read again, Markdown too
        results = service.search("notes", "port", NO_FILTER, 10).results
        assert [(h.note.id, h.note.title) for h in results] == [("journal/b.txt", "CARNET DE BORD")]
    finally:
        service.stop()


def test_a_file_no_format_reads_is_skipped_not_read_as_markdown(vault: Vault, caplog: pytest.LogCaptureFixture):
    """`include = ["**/*.xyz"]` with no format for it: the JSON is not
    indexed as Markdown; status says why, and it is not read again until it changes."""
    vault.write("a.md", "---\nid: a\n---\nUne note.\n")
    vault.write("plan.xyz", json.dumps({"nodes": [{"id": "1", "type": "text", "text": "Cartographie"}]}))
    settings = loaded(vault, 'include = ["**/*.md", "**/*.xyz"]\n')
    with caplog.at_level(logging.WARNING):
        service = indexed(vault, settings)
    try:
        assert ids(service.search("notes", "cartographie", NO_FILTER, 10)) == []
        why = "no note format reads .xyz files (formats read: .md, .pdf, .canvas)"
        assert [(s.path, s.reason) for s in service.status()[0].skipped_notes] == [("plan.xyz", why)]
        logged = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg.get("event") == "note_skipped"]
        assert [(e["path"], e["reason"]) for e in logged] == [("plan.xyz", why)]
    finally:
        service.stop()
    service = indexed(vault, settings)
    try:
        assert service.status()[0].lexical.total == 0  # not read again
    finally:
        service.stop()


def test_a_format_refuses_a_file_with_its_reason(vault: Vault):
    """`NotANote` from `read` is a skip with its message, as Markdown's binary files are."""

    class Refusing(PlainText):
        def read(self, raw: bytes, path: str, mtime: datetime, *, truncated: bool = False) -> ParsedNote:
            raise NotANote("not a journal")

    fmt = formats.register(Refusing(name="refusing", suffixes=(".log",)))
    try:
        vault.write("x.log", "texte")
        service = vault.service(spaces=(SpaceConfig("notes", vault.root / "notes", include=()),))
        try:
            assert [(s.path, s.reason) for s in service.status()[0].skipped_notes] == [("x.log", "not a journal")]
        finally:
            service.stop()
    finally:
        formats.unregister(fmt)


def test_the_recipe_in_docs_architecture_names_what_exists():
    """The recipe is the one PlainText above follows; what it names is there."""
    recipe = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Recipe: a note format")[1]
    named = re.findall(r"`(?:(formats|parse)\.)?(\w+)", recipe)
    modules = {"formats": formats, "parse": parse}
    for module, name in named:  # `formats.for_path`, `parse.NotANote`: there
        assert not module or hasattr(modules[module], name), f"{module}.{name}"
    names = {name for _, name in named}
    for name in ("NoteFormat", "register", "unregister", "NotANote", "decode_note", "PARSER_VERSION"):
        assert name in names, name
    for field in ("name", "suffixes", "version", "read"):
        assert f"`{field}`" in recipe, field
        assert hasattr(formats.NoteFormat, field), field
    assert "notes/formats.py" in recipe
    assert "tests/notes/test_formats.py" in recipe
