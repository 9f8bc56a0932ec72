"""The link that opens a hit in its editor (index/editor_link.py, the
`open_url` setting): encoding, the automatic Obsidian link, refused templates."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.index.editor_link import OBSIDIAN, render, template_for
from notarium_search.settings import ConfigError, SpaceConfig, load_settings
from tests.conftest import Vault

AWKWARD = "projets/DORA & co/réunion #3 ?.md"


def test_every_field_is_encoded_for_where_it_goes(tmp_path: Path):
    root = tmp_path / "Mon coffre"
    link = render("obsidian://open?vault={vault}&file={path}", root, AWKWARD)
    query = parse_qs(urlsplit(link).query)
    assert query == {"vault": ["Mon coffre"], "file": [AWKWARD]}  # `&`, `#`, `?`, spaces, accents intact
    assert "%2F" in link  # Obsidian asks for slashes encoded
    editor = render("vscode://file{abs_path}:{line}", root, AWKWARD, "Réunion & suites", 17)
    assert editor.startswith("vscode://file/")
    assert editor.endswith(":17")
    assert unquote(editor.removeprefix("vscode://file").removesuffix(":17")) == (root / AWKWARD).as_posix()
    assert render("x://?h={heading}", root, AWKWARD, "Réunion & suites") == "x://?h=R%C3%A9union%20%26%20suites"
    assert not {"#", "?", " "} & set(editor)


def test_the_obsidian_link_opens_at_the_heading_of_the_match(tmp_path: Path):
    # help.obsidian.md/uri: `file=Note%23Heading` opens the note at that heading;
    # the `.md` may be left out, and is, so that `#` ends the file name.
    root = tmp_path / "coffre"
    at_heading = parse_qs(urlsplit(render(OBSIDIAN, root, AWKWARD, "Réunion & suites #2", 9)).query)
    assert at_heading == {"vault": ["coffre"], "file": ["projets/DORA & co/réunion #3 ?#Réunion & suites #2"]}
    before_any = parse_qs(urlsplit(render(OBSIDIAN, root, "a b.md")).query)
    assert before_any == {"vault": ["coffre"], "file": ["a b"]}
    assert "%2F" in render(OBSIDIAN, root, AWKWARD)
    assert "#" not in render(OBSIDIAN, root, AWKWARD, "H")


def test_an_obsidian_vault_gets_an_obsidian_link_by_default(tmp_path: Path):
    vault = tmp_path / "coffre"
    (vault / ".obsidian").mkdir(parents=True)
    assert template_for(SpaceConfig("coffre", vault)) == OBSIDIAN
    assert template_for(SpaceConfig("coffre", vault, open_url="none")) is None
    assert template_for(SpaceConfig("plain", tmp_path)) is None  # not a vault: no guess
    assert template_for(SpaceConfig("plain", tmp_path, open_url="x://{path}")) == "x://{path}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "obsidian://open?file={file}",
            "unknown field {file} (known: vault, path, abs_path, heading, path_heading, line)",
        ),
        ("x://{path", "expected '}' before end of string"),
    ],
)
def test_a_template_with_an_unknown_field_is_refused_at_start(tmp_path: Path, template: str, message: str):
    (tmp_path / "notes").mkdir()
    config = tmp_path / "notarium.toml"
    config.write_text(f'spaces_root = "{tmp_path}"\n[spaces.notes]\nopen_url = "{template}"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape("[spaces.notes] open_url: ") + ".*" + re.escape(message)):
        load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "i")})
    with pytest.raises(ConfigError, match=r"open_url \(NOTARIUM_OPEN_URL\)"):
        load_settings(env={"NOTARIUM_SPACES_ROOT": str(tmp_path), "NOTARIUM_OPEN_URL": template})


def test_hits_carry_their_link_when_the_space_has_one(vault: Vault):
    vault.write(AWKWARD, "---\nid: dora\n---\nLe registre DORA.\n")
    (vault.root / "notes" / ".obsidian").mkdir()
    service = vault.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        (hit,) = client.get("/spaces/notes/search", params={"q": "registre"}).json()["results"]
    assert parse_qs(urlsplit(hit["open_url"]).query) == {"vault": ["notes"], "file": [AWKWARD.removesuffix(".md")]}
    service.stop()
    (vault.root.parent / "other").mkdir()
    plain = Vault(vault.root.parent / "other")
    plain.write("a.md", "Le registre.\n")
    service = plain.service()
    with TestClient(create_app(service.settings, service, start_indexing=False)) as client:
        (hit,) = client.get("/spaces/notes/search", params={"q": "registre"}).json()["results"]
    assert hit["open_url"] is None
    service.stop()


def test_a_hit_link_points_at_the_line_and_section_of_its_match(vault: Vault):
    from msgspec.structs import replace

    from notarium_search.service import Service
    from notarium_search.types import FeedFilter

    vault.write("a.md", "---\nid: a\n---\n# Projets\n\n## DORA\n\nLe registre des tiers.\n")
    plain = vault.settings()
    settings = replace(plain, spaces=tuple(replace(s, open_url="x://{path}:{line}?h={heading}") for s in plain.spaces))
    service = Service(settings)
    service.spaces["notes"].writing.run_reconcile()
    (hit,) = service.search("notes", "registre", FeedFilter(), 10).results
    service.stop()
    assert hit.open_url == "x://a.md:8?h=DORA"
