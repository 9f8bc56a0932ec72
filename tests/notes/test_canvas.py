"""JSON Canvas (Obsidian's `.canvas`) as a note format (notes/canvas.py):
a canvas as Obsidian 1.x saves it read to a note and shown as Markdown,
hostile canvases refused or read within bounds, and a canvas in a space a
real service indexes: found by a card's word, anchored at the card, edited
live under a watcher. Its links in the graph: tests/graph/test_canvas_links.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from notarium_search.bodies import search_body
from notarium_search.index.folder import index_fingerprint
from notarium_search.notes import canvas, formats
from notarium_search.notes.canvas import CANVAS, MAX_CANVAS_BYTES, MAX_EDGES, MAX_NODES
from notarium_search.notes.location import heading_path
from notarium_search.notes.parse import NotANote
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import FeedFilter, ParsedNote, WikiLink
from tests.conftest import Vault, eventually, ids

MTIME = datetime(2024, 3, 5, 9, 30, tzinfo=UTC)
NO_FILTER = FeedFilter()
ROOT = Path(__file__).parents[2]

# A canvas as Obsidian 1.x saves it: tab-indented, one node or edge per line,
# ids of 16 hex digits, groups first (they are drawn under their cards).
GROUP_JALONS = "5c1a0e2f9b7d3a41"
GROUP_REFS = "7e2d9c4b1a0f8e36"
OBJECTIFS = "a3f09c5e2b7d4e18"  # a text card in "Jalons du projet"
PROJET = "e7d2b41c09a6f835"  # a file card
REUNION = "0b9e4d7a1c3f5e62"  # a file card with a subpath
SPEC = "f41c2a9d8e0b7365"  # a link card
LECTURE = "3b8f0d6e2c9a1f47"  # a text card in "Références"
IDEES = "c92e7a05d4b1f368"  # a text card in no group
EDGE_DETAILLE = "9d3e1f0a7b2c4d58"
EDGE_SUIVI = "4a7c2e9f0d1b8e63"
EDGE_PLAIN = "d06b3f8a2e5c1974"
PLAN = (
    "{\n"
    '\t"nodes":[\n'
    f'\t\t{{"id":"{GROUP_JALONS}","type":"group","x":-600,"y":-400,"width":1460,"height":820,'
    '"label":"Jalons du projet"},\n'
    f'\t\t{{"id":"{GROUP_REFS}","type":"group","x":-600,"y":500,"width":900,"height":400,'
    '"color":"4","label":"Références"},\n'
    f'\t\t{{"id":"{SPEC}","type":"link","url":"https://jsoncanvas.org/spec/1.0/","x":-560,"y":100,'
    '"width":400,"height":280,"color":"2"},\n'
    f'\t\t{{"id":"{OBJECTIFS}","type":"text","text":"# Objectifs\\n\\nLivrer la **cartographie** des flux'
    ' avant mars. #projet/alpha\\n\\nVoir [[Budget 2024]].","x":-560,"y":-360,"width":400,"height":240},\n'
    f'\t\t{{"id":"{PROJET}","type":"file","file":"Notes/Projet.md","x":-100,"y":-360,"width":400,"height":400}},\n'
    f'\t\t{{"id":"{REUNION}","type":"file","file":"Notes/Réunion.md","subpath":"#Décisions","x":400,"y":-360,'
    '"width":400,"height":300},\n'
    f'\t\t{{"id":"{LECTURE}","type":"text","text":"Lire la spécification **JSON Canvas** #veille","x":-560,'
    '"y":540,"width":400,"height":120},\n'
    f'\t\t{{"id":"{IDEES}","type":"text","text":"Idées en vrac : archivage des courriels","x":1000,"y":-400,'
    '"width":250,"height":60}\n'
    "\t],\n"
    '\t"edges":[\n'
    f'\t\t{{"id":"{EDGE_DETAILLE}","fromNode":"{OBJECTIFS}","fromSide":"right","toNode":"{PROJET}",'
    '"toSide":"left","label":"détaille"},\n'
    f'\t\t{{"id":"{EDGE_SUIVI}","fromNode":"{OBJECTIFS}","fromSide":"top","toNode":"{REUNION}",'
    '"toSide":"top","label":"suivi en réunion"},\n'
    f'\t\t{{"id":"{EDGE_PLAIN}","fromNode":"{LECTURE}","fromSide":"right","toNode":"{IDEES}","toSide":"left"}}\n'
    "\t]\n"
    "}"
)
# The line of the file each node and edge is written on.
LINE = {
    GROUP_JALONS: 3,
    GROUP_REFS: 4,
    SPEC: 5,  # written before the cards above it: Obsidian writes cards in the order they were made
    OBJECTIFS: 6,
    PROJET: 7,
    REUNION: 8,
    LECTURE: 9,
    IDEES: 10,
    EDGE_DETAILLE: 13,
    EDGE_SUIVI: 14,
}


def read(text: str | bytes, path: str = "Projets/Plan.canvas", **kwargs: bool) -> ParsedNote:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return CANVAS.read(raw, path, MTIME, **kwargs)


def test_the_canvas_format_is_registered():
    assert CANVAS in formats.registered()
    assert formats.for_path("Projets/Plan.canvas") is CANVAS
    assert formats.for_path("PLAN.Canvas") is CANVAS
    assert "**/*.canvas" in formats.default_include()
    assert (CANVAS.name, CANVAS.suffixes, CANVAS.version) == ("canvas", (".canvas",), 1)
    assert CANVAS.max_bytes == MAX_CANVAS_BYTES == 16 * 1024 * 1024  # whole files: a cut JSON is none
    assert "canvas1" in formats.fingerprint(()).split("-")


def test_a_canvas_as_obsidian_writes_it():
    assert json.loads(PLAN)  # the fixture is JSON
    note = read(PLAN)
    assert (note.id, note.path, note.title, note.folder) == (
        "Projets/Plan.canvas",
        "Projets/Plan.canvas",
        "Plan",
        "Projets",
    )
    assert (note.created, note.updated, note.created_from, note.updated_from) == (MTIME, MTIME, "file", "file")
    assert (note.aliases, note.frontmatter, note.warnings) == ((), {}, ())
    assert note.text == (
        "Idées en vrac : archivage des courriels\n\n"  # in no group: first
        "Jalons du projet\n\n"
        "Objectifs\n\nLivrer la cartographie des flux avant mars. #projet/alpha\n\nVoir Budget 2024.\n\n"
        "Notes/Projet.md\n\n"
        "Notes/Réunion.md#Décisions\n\n"
        "https://jsoncanvas.org/spec/1.0/\n\n"  # below the file cards: y, then x
        "Références\n\n"
        "Lire la spécification JSON Canvas #veille\n\n"
        "détaille\n\n"
        "suivi en réunion"
    )
    # A group is a section headed by its label, each card one headed by its id.
    assert [(level, heading) for _, level, heading in note.sections] == [
        (1, IDEES),
        (1, "Jalons du projet"),
        (2, OBJECTIFS),
        (2, PROJET),
        (2, REUNION),
        (2, SPEC),
        (1, "Références"),
        (2, LECTURE),
        (1, EDGE_DETAILLE),
        (1, EDGE_SUIVI),
    ]
    for at, _, heading in note.sections:  # each starts where its text does
        if heading in ("Jalons du projet", "Références"):
            assert note.text.startswith(heading, at)
    assert note.headings == ("Jalons du projet", "Objectifs", "Références")
    assert note.tags == ("projet/alpha", "veille")
    assert note.links == (
        WikiLink("Budget 2024"),
        WikiLink("Notes/Projet.md"),
        WikiLink("Notes/Réunion.md", "Décisions"),
        WikiLink("Notes/Projet.md", None, "détaille"),  # the edges ending at file cards
        WikiLink("Notes/Réunion.md", "Décisions", "suivi en réunion"),
    )
    # Each card's text at the line its object is written on, at the column of its `{`.
    by_section = {heading: at for at, _, heading in note.sections}
    assert note.lines == tuple(
        (by_section[heading], LINE[key], 3)
        for key, heading in (
            (IDEES, IDEES),
            (GROUP_JALONS, "Jalons du projet"),
            (OBJECTIFS, OBJECTIFS),
            (PROJET, PROJET),
            (REUNION, REUNION),
            (SPEC, SPEC),
            (GROUP_REFS, "Références"),
            (LECTURE, LECTURE),
            (EDGE_DETAILLE, EDGE_DETAILLE),
            (EDGE_SUIVI, EDGE_SUIVI),
        )
    )


def test_a_place_in_a_card_sits_under_the_card():
    """What a hit's anchor is made of: the headings its place sits under, the card's id last."""
    note = read(PLAN)

    def under(word: str) -> tuple[str, ...]:
        return heading_path(note.sections, note.text.index(word))

    assert under("cartographie") == ("Jalons du projet", OBJECTIFS)  # under the card, not its `# Objectifs`
    assert under("Objectifs") == ("Jalons du projet", OBJECTIFS)
    assert under("jsoncanvas") == ("Jalons du projet", SPEC)
    assert under("spécification") == ("Références", LECTURE)
    assert under("courriels") == (IDEES,)
    assert under("suivi") == (EDGE_SUIVI,)


def test_cards_are_ordered_by_group_then_y_then_x_whatever_the_file_order():
    nodes = json.loads(PLAN)["nodes"]
    shuffled = json.dumps({"nodes": nodes[::-1], "edges": []})
    assert [h for _, _, h in read(shuffled).sections] == [h for _, _, h in read(PLAN).sections][:-2]


def test_a_card_in_nested_groups_belongs_to_the_smallest():
    nodes = [
        {"id": "outer", "type": "group", "x": 0, "y": 0, "width": 1000, "height": 1000, "label": "Dehors"},
        {"id": "inner", "type": "group", "x": 100, "y": 100, "width": 300, "height": 300, "label": "Dedans"},
        {"id": "a", "type": "text", "text": "alpha", "x": 150, "y": 150, "width": 100, "height": 100},
        {"id": "b", "type": "text", "text": "beta", "x": 600, "y": 600, "width": 100, "height": 100},
        {"id": "c", "type": "text", "text": "gamma", "x": 350, "y": 350, "width": 100, "height": 100},  # across
    ]
    note = read(json.dumps({"nodes": nodes}))
    assert [(level, h) for _, level, h in note.sections] == [
        (1, "Dehors"),
        (2, "c"),
        (2, "b"),
        (1, "Dedans"),
        (2, "a"),
    ]


def test_a_canvas_is_shown_as_markdown():
    assert CANVAS.shown(PLAN.encode(), "Projets/Plan.canvas", truncated=False) == (
        "Idées en vrac : archivage des courriels\n\n"
        "## Jalons du projet\n\n"
        "# Objectifs\n\nLivrer la **cartographie** des flux avant mars. #projet/alpha\n\nVoir [[Budget 2024]].\n\n"
        "![[Notes/Projet.md]]\n\n"
        "[[Notes/Réunion.md#Décisions]]\n\n"
        "<https://jsoncanvas.org/spec/1.0/>\n\n"
        "## Références\n\n"
        "Lire la spécification **JSON Canvas** #veille\n\n"
        "---\n\n"
        "- Objectifs → Notes/Projet.md: détaille\n"
        "- Objectifs → Notes/Réunion.md: suivi en réunion\n"
    )
    assert formats.shown(b"", "vide.canvas", truncated=False) == ""
    with pytest.raises(NotANote, match="not JSON"):
        CANVAS.shown(b"{", "x.canvas", truncated=False)


def test_a_canvas_is_linked_by_its_path():
    """Obsidian opens a canvas by its file: it has no link to a card."""
    assert CANVAS.link_text("Projets/Plan.canvas", "") == "Projets/Plan.canvas"
    assert formats.link_text("Projets/Plan.canvas", OBJECTIFS) == "Projets/Plan.canvas"


def test_a_canvas_on_one_line_ties_each_card_to_its_column():
    minified = json.dumps(json.loads(PLAN), separators=(",", ":"))
    note = read(minified)
    assert {line for _, line, _ in note.lines} == {1}
    columns = {minified.index(f'{{"id":"{key}"') + 1 for key in (IDEES, OBJECTIFS, EDGE_SUIVI)}
    assert columns <= {column for _, _, column in note.lines}


def test_an_empty_canvas_is_a_note_of_its_name():
    """Obsidian makes a new canvas as an empty file; `{}` has neither array (both are optional)."""
    for raw in (b"", b"\n", b"{}", b'{"nodes":[],"edges":[]}'):
        note = read(raw, "Vide.canvas")
        assert (note.title, note.text, note.sections, note.links, note.warnings) == ("Vide", "", (), (), ())


# -- hostile canvases -----------------------------------------------------

REFUSED = {
    "not UTF-8": (b'{"nodes":[{"id":"a","type":"text","text":"caf\xe9"}]}', "not UTF-8"),
    "binary": (b"\x00\x01\x02", "binary file"),
    "not JSON": (b"# Un plan\n\nen Markdown", "not JSON"),
    "cut short": (PLAN[:200].encode(), "not JSON"),
    "text after the object": (b'{"nodes":[]} {}', "not JSON"),
    "a JSON list": (b'[{"id":"a","type":"text","text":"x"}]', "holds a list, not an object"),
    "a JSON string": (b'"canvas"', "holds a string, not an object"),
    "nodes not a list": (b'{"nodes":{"a":{"id":"a"}}}', "`nodes` is an object, not a list"),
    "nested 100,000 deep": (b'{"nodes":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "nested too deep"),
    "a list nested 100,000 deep": (b"[" * 100_000, "nested too deep"),
    "an integer of 5,000 digits": (b'{"nodes":[{"id":"a","x":' + b"9" * 5000 + b"}]}", "not JSON"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_no_canvas_is_refused_with_its_reason(name: str):
    raw, reason = REFUSED[name]
    with pytest.raises(NotANote, match=reason):
        read(raw)
    with pytest.raises(NotANote, match=reason):
        CANVAS.shown(raw, "x.canvas", truncated=False)


def test_a_canvas_cut_short_is_refused_not_read():
    with pytest.raises(NotANote, match="read whole"):
        read(PLAN, truncated=True)


def test_broken_nodes_and_edges_are_ignored_or_read_as_missing():
    """Nodes that are no objects, with no id or an unknown type are left out;
    a field of the wrong type counts as missing; nothing raises."""
    nodes: list[object] = [
        1,
        "a",
        None,
        [],
        True,
        {},
        {"id": 3, "type": "text", "text": "sans identifiant"},
        {"id": "no-type", "text": "sans type"},
        {"id": "odd", "type": "image", "text": "type inconnu"},
        {"id": ["x"], "type": "text", "text": "id liste"},
        {"id": "num", "type": "text", "text": 5},
        {"id": "nofile", "type": "file"},
        {"id": "badfile", "type": "file", "file": {"path": "a.md"}},
        {"id": "nourl", "type": "link", "url": 7},
        {"id": "sub", "type": "file", "file": "Notes/A.md", "subpath": 5, "x": "1", "y": None},
        {"id": "subx", "type": "file", "file": "Notes/B.md", "subpath": "sans dièse"},
        {"id": "g", "type": "group", "label": ["liste"], "x": True, "width": -50, "height": "grand"},
        {"id": "nan", "type": "text", "text": "coordonnées folles", "x": float("nan"), "y": float("inf")},
        {"id": "big", "type": "text", "text": "très loin", "x": 10**4000, "y": -(10**4000), "width": 10**4000},
        {"id": "ok", "type": "text", "text": "valide"},
    ]
    edges: list[object] = [
        5,
        {"fromNode": "ok", "toNode": "sub", "label": "sans id"},
        {"id": "e1", "fromNode": ["ok"], "toNode": "sub", "label": 3},
        {"id": "e2", "fromNode": "ok", "toNode": "missing", "label": "vers rien"},
        {"id": "e3", "fromNode": "ok", "toNode": "sub", "label": "vers A"},
    ]
    raw = json.dumps({"nodes": nodes, "edges": edges, "extra": {"deep": [[[1]]]}}).encode()
    note = read(raw)
    assert note.warnings == ()
    assert {h for _, _, h in note.sections} == {"sub", "subx", "g", "nan", "big", "ok", "e2", "e3"}
    assert {link.target for link in note.links} == {"Notes/A.md", "Notes/B.md"}
    assert WikiLink("Notes/A.md") in note.links  # a subpath that is no string, or no `#…`, is none
    assert WikiLink("Notes/B.md") in note.links
    assert WikiLink("Notes/A.md", None, "vers A") in note.links
    assert WikiLink("Notes/A.md", None, "sans id") not in note.links
    assert "valide" in note.text
    # Coordinates taken as missing are 0: such cards lie in the empty group "g" at 0, 0.
    assert heading_path(note.sections, note.text.index("coordonnées folles")) == ("g", "nan")
    assert heading_path(note.sections, note.text.index("valide")) == ("g", "ok")
    assert heading_path(note.sections, note.text.index("très loin")) == ("big",)
    assert "sans identifiant" not in note.text
    assert "type inconnu" not in note.text
    shown = CANVAS.shown(raw, "x.canvas", truncated=False)
    assert "- valide → missing: vers rien" in shown
    edges_not_a_list = read(json.dumps({"nodes": nodes, "edges": {"e": 1}}))
    assert edges_not_a_list.warnings == ("`edges` is an object, not a list: ignored",)


def test_escapes_json_allows_and_utf_8_cannot_hold_are_replaced():
    """`\\ud800` in a JSON string is a lone surrogate: it would fail every
    encoding of the note (the index, the payload), the file retried forever."""
    raw = rb'{"nodes":[{"id":"a\ud800","type":"text","text":"mot \udc00 seul \ud83d\ude00"}]}'
    note = read(raw)
    assert note.text == "mot \ufffd seul \U0001f600"
    assert note.sections == ((0, 1, "a\ufffd"),)
    note.text.encode("utf-8")
    CANVAS.shown(raw, "x.canvas", truncated=False).encode("utf-8")


def test_texts_are_read_in_nfc():
    decomposed = "Re\u0301union"
    note = read(json.dumps({"nodes": [{"id": "a", "type": "text", "text": decomposed}]}), "Plan\u0301.canvas")
    assert note.text == "Réunion"
    assert note.title == "Pla\u0144"  # NFC, as a Markdown note's title from its file name


@pytest.mark.timeout(120)
def test_a_canvas_of_100000_nodes_reads_its_first_ones():
    nodes = [
        {"id": f"{i:016x}", "type": "text", "text": f"carte{i}", "x": i % 300, "y": i // 300, "width": 1, "height": 1}
        for i in range(100_000)
    ]
    edges = [
        {"id": f"e{i}", "fromNode": f"{i:016x}", "toNode": f"{i + 1:016x}", "label": "ensuite"} for i in range(20_000)
    ]
    raw = json.dumps({"nodes": nodes, "edges": edges}, indent="\t").encode()
    note = read(raw)
    assert note.warnings == (
        f"100000 nodes: the first {MAX_NODES} read, the rest ignored",
        f"20000 edges: the first {MAX_EDGES} read, the rest ignored",
    )
    assert len(note.sections) == MAX_NODES + MAX_EDGES
    assert "carte9999" in note.text
    assert "carte10000" not in note.text
    assert CANVAS.shown(raw, "x.canvas", truncated=False).count("ensuite") == MAX_EDGES


@pytest.mark.timeout(120)
def test_a_5_mb_text_card_is_read():
    text = "Une phrase de [[lien]] et de **gras** #tag " * 125_000  # 5.4 MB
    raw = json.dumps({"nodes": [{"id": "a", "type": "text", "text": text}]}).encode()
    note = read(raw)
    assert len(note.text) > 4_000_000
    assert note.tags == ("tag",)
    assert note.links == (WikiLink("lien"),)
    assert CANVAS.shown(raw, "x.canvas", truncated=False).startswith("Une phrase de [[lien]]")


@pytest.mark.timeout(120)
def test_cards_are_matched_with_groups_within_a_bound():
    """Each card is tested against the groups until one holds it: 2,000 groups
    that hold none of 8,000 cards were 16 million tests; past MAX_GROUP_CHECKS
    the other cards are in no group, with a warning."""
    groups = [{"id": f"g{i}", "type": "group", "x": 0, "y": 0, "width": 1, "height": 1} for i in range(2_000)]
    cards = [
        {"id": f"c{i}", "type": "text", "text": "t", "x": 5, "y": 5, "width": 1, "height": 1} for i in range(8_000)
    ]
    note = read(json.dumps({"nodes": groups + cards}))
    assert note.warnings == (
        f"7500 cards taken as in no group: past {canvas.MAX_GROUP_CHECKS} tests of a card in a group",
    )
    assert len(note.sections) == 10_000


# -- in a space a real service indexes -------------------------------------


def every_format(vault: Vault, **overrides: Any) -> Settings:
    """The vault's settings with `include` not set: every registered format's files."""
    return vault.settings(spaces=(SpaceConfig("notes", vault.root / "notes", include=()),), **overrides)


def write_plan(vault: Vault) -> None:
    vault.write("Notes/Projet.md", "---\nid: projet\n---\n# Projet\n\nLe projet en bref.\n")
    vault.write("Projets/Plan.canvas", PLAN)


def test_a_canvas_is_found_by_a_word_of_a_card_and_opens_at_the_card(vault: Vault):
    write_plan(vault)
    service = Service(every_format(vault))
    try:
        service.spaces["notes"].writing.run_reconcile()
        assert service.status()[0].skipped_notes == ()
        response = service.search("notes", "cartographie", NO_FILTER, 10)
        assert ids(response) == ["Projets/Plan.canvas"]
        (hit,) = search_body(response).results
        assert hit.title == "Plan"
        assert (hit.heading, hit.anchor, hit.line) == (["Jalons du projet", OBJECTIFS], OBJECTIFS, LINE[OBJECTIFS])
        (hit,) = search_body(service.search("notes", "courriels", NO_FILTER, 10)).results
        assert (hit.anchor, hit.line) == (IDEES, LINE[IDEES])
        assert ids(service.search("notes", "tag:veille", NO_FILTER, 10)) == ["Projets/Plan.canvas"]
        detail = service.note("notes", "Projets/Plan.canvas", content=True)
        assert detail.content is not None
        assert "## Jalons du projet" in detail.content
    finally:
        service.stop()
    fingerprint = index_fingerprint(every_format(vault).spaces[0], every_format(vault))
    assert f"canvas{CANVAS.version}" in fingerprint.split("-")


def test_an_edit_to_a_canvas_is_live_once_the_watcher_sees_it(vault: Vault):
    write_plan(vault)
    service = Service(every_format(vault, watch_debounce_ms=100))
    service.start()
    space = service.spaces["notes"]
    try:
        assert space.writing.wait_ready(30)
        eventually(lambda: space.status().watch == "watching")
        assert ids(service.search("notes", "cartographie", NO_FILTER, 10)) == ["Projets/Plan.canvas"]
        vault.write("Projets/Plan.canvas", PLAN.replace("cartographie", "orthophotographie"))
        eventually(lambda: ids(service.search("notes", "orthophotographie", NO_FILTER, 10)) == ["Projets/Plan.canvas"])
        assert ids(service.search("notes", "cartographie", NO_FILTER, 10)) == []  # no stale card
        vault.write("Projets/Second.canvas", json.dumps({"nodes": [{"id": "n", "type": "text", "text": "Hippocampe"}]}))
        eventually(lambda: ids(service.search("notes", "hippocampe", NO_FILTER, 10)) == ["Projets/Second.canvas"])
    finally:
        service.stop()


def test_a_canvas_that_is_no_canvas_is_skipped_with_its_reason(vault: Vault):
    vault.write("a.md", "Une note.\n")
    vault.write("cassé.canvas", '{"nodes": [')
    vault.write("liste.canvas", "[]")
    big = '{"nodes":[{"id":"a","type":"text","text":"' + "mot " * (MAX_CANVAS_BYTES // 4) + '"}]}'
    vault.write("énorme.canvas", big)  # past max_file_bytes (2 MiB) too: never cut there
    service = Service(every_format(vault))
    try:
        service.spaces["notes"].writing.run_reconcile()
        reasons = {s.path: s.reason for s in service.status()[0].skipped_notes}
        assert set(reasons) == {"cassé.canvas", "liste.canvas", "énorme.canvas"}
        assert reasons["cassé.canvas"].startswith("not JSON")
        assert reasons["liste.canvas"] == "not a JSON Canvas: the file holds a list, not an object"
        why = f"larger than {MAX_CANVAS_BYTES} bytes, the most a canvas file is read at ({len(big)})"
        assert reasons["énorme.canvas"] == why
    finally:
        service.stop()


def test_docs_say_what_is_read_of_a_canvas():
    notes = (ROOT / "docs" / "notes.md").read_text(encoding="utf-8")
    section = notes.split("## Canvases (.canvas)")[1].split("\n## ")[0]
    assert f"{MAX_NODES:,} nodes" in section
    assert f"{MAX_EDGES:,} edges" in section
    assert f"{MAX_CANVAS_BYTES // 2**20} MiB" in section
    for said in ("`anchor`", "`line`", "card's id", "backlink", "notes/canvas.py"):
        assert said in section, said
