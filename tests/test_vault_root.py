"""One vault, one command (issue 31, item 7): `NOTARIUM_SPACES_ROOT` pointed
at a vault served one space per valid sub-folder and dropped the rest (7 of
a real vault's 14 notes, those directly in it, and every `Daily`-like
folder), saying nothing in /status. A root that holds notes directly or
`.obsidian/` is now one space; `NOTARIUM_VAULT` says so explicitly; what of a
folder of vaults is in no space is listed in /status with why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.settings import ConfigError, Settings, load_settings
from tests.api.test_server import STARTUP_SECONDS, served
from tests.conftest import TEST_CLIENT_HOST, Vault
from tests.test_unreadable_space import unprivileged

# A vault as Obsidian makes one, shaped like the one of the issue: 14 notes,
# 7 of them directly in it, the others in folders of which two have names
# that are no valid space names.
REAL_VAULT = {
    **{f"racine-{i}.md": f"Note {i} rangée à la racine du coffre.\n" for i in range(1, 7)},
    "Accueil.md": "# Accueil\n\nLe tableau de bord du coffre, avec le mot kaléidoscope.\n",
    "Daily/2024-05-01.md": "Journal : réunion sur la résilience.\n",
    "Daily/2024-05-02.md": "Journal : lecture du règlement.\n",
    "Daily/2024-05-03.md": "Journal : rien de neuf.\n",
    "projets/dora.md": "---\ntags: [dora]\n---\nLe registre DORA.\n",
    "projets/archive/ancien.md": "Un vieux projet.\n",
    "Zettelkasten/z1.md": "Un zettel sur l'interopérabilité.\n",
    "Zettelkasten/z2.md": "Un zettel sur les protocoles.\n",
    ".obsidian/app.json": "{}",
    ".obsidian/snippets/style.md": "Pas une note : l'état d'Obsidian.\n",
    ".trash/jetee.md": "Une note jetée.\n",
}


def write_tree(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder of `folder` with its size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def env_for(root: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"NOTARIUM_SPACES_ROOT": str(root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index"), **extra}


def test_a_vault_given_as_the_spaces_root_is_served_whole(vault: Vault, tmp_path: Path):
    """Through the real `serve`: every note of the vault searchable, /status and
    the start's log saying the folder is one space and why."""
    coffre = vault.root / "Mon Coffre"
    write_tree(coffre, REAL_VAULT)
    before = tree(coffre)
    with served(vault, tmp_path, NOTARIUM_SPACES_ROOT=str(coffre)) as server, server.client() as client:
        status = client.get("/status").json()
        assert [(s["space"], s["path"], s["notes"]) for s in status["spaces"]] == [("mon-coffre", str(coffre), 14)]
        root = status["root"]
        assert (root["path"], root["served_as"], root["space"]) == (str(coffre), "one_space", "mon-coffre")
        assert ".obsidian/ (an Obsidian vault) and 7 notes directly in it" in root["reason"]
        assert "projets included" in root["reason"]  # the one sub-folder that was a space before
        assert status["ignored_folders"] == []

        def found(query: str) -> list[str]:
            answer = client.get("/spaces/mon-coffre/search", params={"q": query})
            assert answer.status_code == 200, answer.text
            return [hit["path"] for hit in answer.json()["results"]]

        assert found("kaleidoscope") == ["Accueil.md"]  # directly in the vault: was dropped
        assert found("resilience") == ["Daily/2024-05-01.md"]  # in a folder named `Daily`: was ignored
        assert found("interoperabilite") == ["Zettelkasten/z1.md"]
        assert found("jetee") == []  # .trash and .obsidian stay out, as in any space
    (said,) = [r for r in server.records() if r["event"] == "spaces_root_read"]
    assert (said["served_as"], said["space"], said["level"]) == ("one_space", "mon-coffre", "info")
    assert said["reason"] == root["reason"]
    assert tree(coffre) == before  # nothing written in the notes folder


def status_of(settings: Settings) -> dict[str, Any]:
    service = Service(settings)
    try:
        with TestClient(create_app(settings, service, start_indexing=False)) as client:
            body: dict[str, Any] = client.get("/status").json()
            return body
    finally:
        service.stop()


def test_status_lists_what_of_a_folder_of_vaults_is_in_no_space(tmp_path: Path):
    root = tmp_path / "vaults"
    write_tree(root, {"carnet/a.md": "a", "Zettelkasten/z.md": "z", "notes.txt": "no note", ".git/HEAD": "x"})
    (root / "Archives").symlink_to(tmp_path / "disque-absent")  # a disk not mounted
    settings = load_settings(env=env_for(root, tmp_path, NOTARIUM_ALLOWED_HOSTS=TEST_CLIENT_HOST))
    assert [s.name for s in settings.spaces] == ["carnet"]  # a folder of vaults reads as before
    body = status_of(settings)
    assert [s["space"] for s in body["spaces"]] == ["carnet"]
    assert body["root"] == {
        "path": str(root),
        "served_as": "sub_folders",
        "space": None,
        "reason": "its sub-folders are spaces: it holds no note directly and no .obsidian/",
    }
    assert body["ignored_folders"] == [
        {
            "path": str(root / "Archives"),
            "reason": f"a symbolic link to {tmp_path / 'disque-absent'}, which is not there",
            "suggested_name": None,
        },
        {
            "path": str(root / "Zettelkasten"),
            "reason": "'Zettelkasten' is not a valid space name ([a-z0-9][a-z0-9_-]*): declare it as"
            f' [spaces.zettelkasten] with path = "{root / "Zettelkasten"}"',
            "suggested_name": "zettelkasten",
        },
    ]


@pytest.mark.parametrize(
    ("files", "held"),
    [
        ({"a.md": "a", "Daily/d.md": "d"}, "holds 1 note directly in it (a.md)"),
        ({".obsidian/app.json": "{}", "Daily/d.md": "d"}, "holds .obsidian/ (an Obsidian vault)"),
        ({"A.MD": "a", "b.md": "b", "c.md": "c", "d.md": "d"}, "holds 4 notes directly in it (A.MD, b.md, c.md, …)"),
    ],
)
def test_notes_directly_in_the_root_or_obsidian_make_it_one_space(tmp_path: Path, files: dict[str, str], held: str):
    root = tmp_path / "Mes Notes (2024)"
    write_tree(root, {**files, "carnet/c.md": "c"})
    settings = load_settings(env=env_for(root, tmp_path))
    (space,) = settings.spaces
    assert (space.name, space.path) == ("mes-notes-2024", root)
    assert settings.root_reading is not None
    assert settings.root_reading.space == "mes-notes-2024"
    assert held in settings.root_reading.reason
    assert settings.ignored_folders == ()  # `Daily` is part of the space, not an ignored folder


@pytest.mark.parametrize("files", [{".brouillon.md": "x"}, {".git/HEAD": "x", ".trash/t.md": "t"}, {"a.txt": "x"}])
def test_hidden_files_and_tool_folders_do_not_make_a_vault(tmp_path: Path, files: dict[str, str]):
    root = tmp_path / "vaults"
    write_tree(root, {**files, "carnet/a.md": "a", "lab/b.md": "b"})
    settings = load_settings(env=env_for(root, tmp_path))
    assert [s.name for s in settings.spaces] == ["carnet", "lab"]
    assert settings.root_reading is not None
    assert settings.root_reading.space is None


def test_a_name_that_cannot_be_made_valid_falls_back_to_vault(tmp_path: Path):
    root = tmp_path / "日記"
    write_tree(root, {"a.md": "a"})
    assert [s.name for s in load_settings(env=env_for(root, tmp_path)).spaces] == ["vault"]


def test_tables_that_name_its_sub_folders_keep_them_spaces(tmp_path: Path):
    """Explicit configuration wins: a [spaces.NAME] table naming a sub-folder
    (the sample configuration's [spaces.lab]) keeps the sub-folders spaces,
    and the notes directly in the root are listed as in no space."""
    root = tmp_path / "vaults"
    write_tree(root, {"README.md": "r", "carnet/a.md": "a", "lab/b.md": "b"})
    config = tmp_path / "c.toml"
    config.write_text(f'spaces_root = "{root}"\n[spaces.lab]\nlanguage = "en"\n')
    settings = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")})
    assert [(s.name, s.language) for s in settings.spaces] == [("carnet", "auto"), ("lab", "en")]
    assert settings.root_reading is not None
    assert settings.root_reading.reason == "its sub-folders are spaces: [spaces.lab] names its sub-folder lab"
    (ignored,) = settings.ignored_folders
    assert ignored.path == root
    assert ignored.reason.startswith("1 note directly in it (README.md) in no space:")
    # A table's path to a sub-folder says the same.
    config.write_text(f'spaces_root = "{root}"\n[spaces.labo]\npath = "{root / "lab"}"\n')
    settings = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")})
    assert [s.name for s in settings.spaces] == ["carnet", "lab", "labo"]
    assert [f.path for f in settings.ignored_folders] == [root]
    # A table whose path is the root serves those notes: nothing left out then.
    config.write_text(f'spaces_root = "{root}"\n[spaces.tout]\npath = "{root}"\n')
    settings = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")})
    assert [s.name for s in settings.spaces] == ["carnet", "lab", "tout"]
    assert settings.ignored_folders == ()


def test_a_table_of_the_vaults_name_configures_it_and_a_second_folder_is_refused(tmp_path: Path):
    root = tmp_path / "Coffre"
    write_tree(root, {"a.md": "a"})
    config = tmp_path / "c.toml"
    config.write_text(f'spaces_root = "{root}"\n[spaces.coffre]\nlanguage = "en"\n')
    (space,) = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")}).spaces
    assert (space.name, space.path, space.language) == ("coffre", root, "en")
    (tmp_path / "ailleurs").mkdir()
    config.write_text(f'spaces_root = "{root}"\n[spaces.coffre]\npath = "{tmp_path / "ailleurs"}"\n')
    with pytest.raises(ConfigError, match=r"\[spaces.coffre\] path .*ailleurs and .*Coffre, from spaces_root"):
        load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")})


def test_an_index_folder_inside_the_vault_is_refused_saying_why(tmp_path: Path):
    """Never write into the notes folder: an index folder inside a root that
    is now one space is refused, naming the reason the root is one space."""
    root = tmp_path / "Coffre"
    write_tree(root, {"a.md": "a", "carnet/b.md": "b"})
    with pytest.raises(ConfigError, match=r"must not be inside .* \(spaces_root .*Coffre is one space: it holds 1 "):
        load_settings(env={"NOTARIUM_SPACES_ROOT": str(root), "NOTARIUM_INDEX_DIR": str(root / ".index")})


def test_the_vault_setting_serves_one_folder_whole(tmp_path: Path):
    coffre = tmp_path / "Coffre"
    write_tree(coffre, {"carnet/a.md": "a", "lab/b.md": "b"})  # as a root, two spaces; as a vault, one
    index = {"NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    settings = load_settings(env={"NOTARIUM_VAULT": str(coffre), **index})
    assert [(s.name, s.path) for s in settings.spaces] == [("coffre", coffre)]
    assert (settings.root_reading, settings.ignored_folders) == (None, ())
    config = tmp_path / "c.toml"
    config.write_text('vault = "Coffre"\n')  # relative to the file, as every path there
    assert [(s.name, s.path) for s in load_settings(config, env=index).spaces] == [("coffre", coffre)]
    # The same folder as spaces_root (the Docker image sets it to /notes): one space.
    settings = load_settings(env={"NOTARIUM_VAULT": str(coffre), "NOTARIUM_SPACES_ROOT": str(coffre), **index})
    assert [s.name for s in settings.spaces] == ["coffre"]
    assert settings.root_reading is not None
    assert settings.root_reading.reason == "vault (NOTARIUM_VAULT) names this folder: served as one space, coffre"
    # Another folder as spaces_root: its spaces beside the vault; one name for two folders is refused.
    vaults = tmp_path / "vaults"
    write_tree(vaults, {"perso/a.md": "a"})
    settings = load_settings(env={"NOTARIUM_VAULT": str(coffre), "NOTARIUM_SPACES_ROOT": str(vaults), **index})
    assert [s.name for s in settings.spaces] == ["coffre", "perso"]
    write_tree(vaults, {"coffre/a.md": "a"})
    with pytest.raises(ConfigError, match=r"Coffre and .*vaults/coffre would both be space coffre"):
        load_settings(env={"NOTARIUM_VAULT": str(coffre), "NOTARIUM_SPACES_ROOT": str(vaults), **index})
    with pytest.raises(ConfigError, match="is not a directory"):
        load_settings(env={"NOTARIUM_VAULT": str(coffre / "carnet" / "a.md"), **index})
    assert load_settings(env={"NOTARIUM_VAULT": "", **index}).spaces == ()  # empty is unset


def test_a_root_that_cannot_be_looked_into_is_said_so(tmp_path: Path):
    """Entries whose kind cannot be known (the root may be listed, not searched)
    are listed with the system's reason; a root that cannot be listed stops
    the command with one sentence, not a traceback. Run without root's
    override of permissions (tests/test_unreadable_space.py), as the service's
    user would."""
    root = tmp_path / "vaults"
    write_tree(root, {"carnet/a.md": "a"})

    def status(mode: int) -> subprocess.CompletedProcess[str]:
        root.chmod(mode)
        env = {**os.environ, **env_for(root, tmp_path)}
        env.pop("NOTARIUM_CONFIG", None)
        command = [*unprivileged(), sys.executable, "-m", "notarium_search", "status", "--json"]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=STARTUP_SECONDS, check=False)

    try:
        looked = status(0o444)  # it may be listed, what is in it not reached
        assert looked.returncode == 0, looked.stderr
        report = json.loads(looked.stdout)
        assert report["spaces"] == []
        assert report["ignored_folders"] == [
            {"path": str(root / "carnet"), "reason": "cannot be looked at: Permission denied", "suggested_name": None}
        ]
        listed = status(0)
        assert listed.returncode == 2
        assert listed.stderr == (
            f"notarium-search: configuration error: spaces_root {root} cannot be listed: Permission denied\n"
        )
    finally:
        root.chmod(0o755)
