"""Configuration: file + environment, validation, and docs that list every field."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import msgspec.structs
import pytest

from notarium_search.lexical.query import LANGUAGE_BOOSTS
from notarium_search.settings import (
    SPACE_NAME_RE,
    CollectionConfig,
    ConfigError,
    FusionConfig,
    RankingConfig,
    Settings,
    env_names,
    load_settings,
    log_ignored_folders,
    model_keys,
    valid_space_name,
)

ROOT = Path(__file__).resolve().parents[1]


def make_root(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "spaces"
    for name in names:
        (root / name).mkdir(parents=True)
    return root


def test_spaces_root_and_env_overrides(tmp_path: Path):
    root = make_root(tmp_path, "carnet", "lab", "Not-Valid", ".hidden")
    config = tmp_path / "c.toml"
    config.write_text(
        f'spaces_root = "{root}"\nindex_dir = "idx"\nport = 9000\nvector_search = true\n'
        '[ranking]\ntitle_boost = 0.75\n[spaces.lab]\nlanguage = "en"\n'
    )
    settings = load_settings(config, env={"NOTARIUM_PORT": "9100", "GRAPH_BOOST": "1", "VECTOR_SEARCH": "off"})
    assert [s.name for s in settings.spaces] == ["carnet", "lab"]
    assert settings.space_config("lab").language == "en"  # type: ignore[union-attr]
    assert settings.space_config("carnet").language == "auto"  # type: ignore[union-attr]  # the default
    assert settings.index_dir == tmp_path / "idx"  # relative to the config file
    assert settings.port == 9100  # environment wins over the file
    assert (settings.vector_search, settings.graph_boost) == (False, True)
    assert settings.ranking.title_boost == 0.75


def test_space_names_are_checked_whole():
    assert valid_space_name("carnet-2024_b")
    for name in ("abc\n", "Abc", "-abc", "", "abc/def", "abc\n\n"):
        assert not valid_space_name(name), repr(name)
        assert not SPACE_NAME_RE.match(name), repr(name)  # the compiled pattern alone is anchored too


def test_a_folder_whose_name_ends_in_a_newline_is_not_a_space(tmp_path: Path):
    root = make_root(tmp_path, "carnet", "carnet\n")
    settings = load_settings(env={"NOTARIUM_SPACES_ROOT": str(root), "NOTARIUM_INDEX_DIR": str(tmp_path / "idx")})
    assert [s.name for s in settings.spaces] == ["carnet"]


def test_an_empty_path_setting_is_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`NOTARIUM_SPACES_ROOT=` once meant the current folder: every folder
    there (the index folder too) became a space."""
    make_root(tmp_path, "carnet")
    (tmp_path / "stray").mkdir()
    monkeypatch.chdir(tmp_path)
    settings = load_settings(env={"NOTARIUM_SPACES_ROOT": "", "NOTARIUM_INDEX_DIR": " ", "NOTARIUM_MODEL_DIR": ""})
    assert (settings.spaces_root, settings.spaces, settings.model_dir) == (None, (), None)
    assert settings.index_dir == Settings().index_dir
    # Unset, not "none": the file's value stands.
    config = tmp_path / "c.toml"
    config.write_text(f'spaces_root = "{tmp_path / "spaces"}"\nindex_dir = "idx"\n')
    settings = load_settings(config, env={"NOTARIUM_SPACES_ROOT": ""})
    assert [s.name for s in settings.spaces] == ["carnet"]
    config.write_text('[spaces.s]\npath = ""\n')
    with pytest.raises(ConfigError, match=r"\[spaces.s\] path is empty"):
        load_settings(config, env={})


def test_folders_that_are_not_spaces_are_listed_and_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """Obsidian vaults are often capitalised: ignored, never silently."""
    # A folder of vaults: no note directly in it and no .obsidian/ (either makes
    # it one vault: tests/test_vault_root.py).
    root = make_root(tmp_path, "carnet", "notes", "Zettelkasten", "Mes Notes (2024)", "Notes", "日記", ".git")
    (root / "README.txt").write_text("pas un dossier")
    env = {"NOTARIUM_SPACES_ROOT": str(root), "NOTARIUM_INDEX_DIR": str(tmp_path / "idx")}
    settings = load_settings(env=env)
    assert [s.name for s in settings.spaces] == ["carnet", "notes"]
    ignored = {f.path.name: f for f in settings.ignored_folders}
    assert set(ignored) == {"Zettelkasten", "Mes Notes (2024)", "Notes", "日記"}  # not .git, not a file
    suggested = {name: f.suggested_name for name, f in ignored.items()}
    assert suggested == {
        "Zettelkasten": "zettelkasten",
        "Mes Notes (2024)": "mes-notes-2024",
        "Notes": "notes-2",
        "日記": None,
    }
    zettel = ignored["Zettelkasten"].reason
    assert "'Zettelkasten' is not a valid space name" in zettel
    assert f'[spaces.zettelkasten] with path = "{root / "Zettelkasten"}"' in zettel

    caplog.clear()
    log_ignored_folders(settings)
    logged = [r.msg for r in caplog.records if isinstance(r.msg, dict) and r.msg["event"] == "space_folder_ignored"]
    assert {(e["path"], e["suggested_name"], e["level"]) for e in logged} == {
        (str(f.path), f.suggested_name, "warning") for f in settings.ignored_folders
    }
    assert all("is not a valid space name" in e["reason"] for e in logged)

    # Declared under a valid name, the folder is a space and no longer ignored.
    config = tmp_path / "c.toml"
    config.write_text(f'[spaces.zettelkasten]\npath = "{root / "Zettelkasten"}"\n')
    settings = load_settings(config, env=env)
    assert [s.name for s in settings.spaces] == ["carnet", "notes", "zettelkasten"]
    assert "Zettelkasten" not in {f.path.name for f in settings.ignored_folders}


def test_explicit_space_outside_root(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = tmp_path / "c.toml"
    config.write_text(f'index_dir = "{tmp_path / "idx"}"\n[spaces.perso]\npath = "{elsewhere}"\nexclude = ["x/**"]\n')
    (space,) = load_settings(config, env={}).spaces
    assert (space.name, space.path, space.exclude) == ("perso", elsewhere, ("x/**",))


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        # Errors name what the user wrote: the variable, or the key, file and line.
        ("", {"NOTARIUM_PORT": "http"}, "^NOTARIUM_PORT='http': expected `int`, got `str`$"),
        ("", {"NOTARIUM_PORT": "18802.9"}, "^NOTARIUM_PORT='18802.9': expected `int`"),
        ("", {"NOTARIUM_PORT": "0"}, "^NOTARIUM_PORT='0': expected `int` >= 1$"),
        ("", {"VECTOR_SEARCH": "maybe"}, r"^VECTOR_SEARCH='maybe': must be a boolean \(1/0, true/false"),
        ("", {"NOTARIUM_LANGUAGE": "xx"}, "^NOTARIUM_LANGUAGE='xx': must be one of auto, fr, en, ar, da, de, el, es"),
        ("", {"NOTARIUM_OVERSIZE": "explode"}, "^NOTARIUM_OVERSIZE='explode': must be one of truncate, skip$"),
        ("", {"NOTARIUM_HEADER_TIMEOUT": "90"}, "^NOTARIUM_HEADER_TIMEOUT='90': expected `float` <= 60"),
        ("", {"NOTARIUM_BODY_TIMEOUT": "0"}, "^NOTARIUM_BODY_TIMEOUT='0': expected `float` >= 0.5"),
        ("body_timeout = 301\n", {}, r"^body_timeout = 301 in .*c\.toml \(line 1\): expected `float` <= 300"),
        # Loose TOML values were accepted: 18802.9 became 18802, true became 1.
        ("port = 18802.9\n", {}, r"^port = 18802\.9 in .*c\.toml \(line 1\): expected `int`, got `float`$"),
        (
            'host = "h"\ncommit_every = true\n',
            {},
            r"^commit_every = true in .*c\.toml \(line 2\): expected `int`, got `bool`$",
        ),
        ("vector_search = 1\n", {}, r"^vector_search = 1 in .*c\.toml \(line 1\): expected `bool`, got `int`$"),
        ("spaces_root = 3\n", {}, r"^spaces_root = 3 in .*c\.toml \(line 1\): expected `str`, got `int`$"),
        ("[fusion]\nk = true\n", {}, r"^\[fusion\] k = true in .*c\.toml \(line 2\): expected `float`, got `bool`$"),
        ('colour = "blue"\n', {}, "unknown config keys: colour"),
        ("[ranking]\nboost = 1\n", {}, "unknown \\[ranking\\] keys"),
        ('[spaces."Bad Name"]\npath = "."\n', {}, "must match"),
        ('[spaces."abc\\n"]\npath = "."\n', {}, "must match"),  # `$` let a final newline through
        ("[spaces.orphan]\n", {}, "needs a path"),
        ("spaces_root = 3 = 4\n", {}, "cannot read config file"),
        ('spaces_root = "/does/not/exist"\n', {}, "is not a directory"),
        ("[fusion]\nk = 0\n", {}, r"\[fusion\] k = 0 in .*\(line 2\): expected `float` > 0"),
        ("[fusion]\nscore_floor = 1.5\n", {}, r"\[fusion\] score_floor = 1\.5 .*expected `float` <= 1"),
        ("[fusion]\nlexical_weight = -1\n", {}, r"\[fusion\] lexical_weight = -1 .*expected `float` >= 0"),
        ('[fusion]\nk = "big"\n', {}, r'\[fusion\] k = "big" .*expected `float`, got `str`'),
        ("[ranking]\nform_max_share = 5\n", {}, r"\[ranking\] form_max_share = 5 .*expected `float` <= 1"),
        ("", {"NOTARIUM_ACTIVATION_FIELDS": " , "}, "needs at least one name"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections.a]\npattern = "(["\n', {}, "not a valid regular expression"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections.a]\nchunking = "page"\n', {}, "chunking one of"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections.a]\nfolder = "../x"\n', {}, "inside the space"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections.a]\ncolour = 1\n', {}, "unknown keys"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections."A B"]\n', {}, "must match"),
        ('[spaces.s]\npath = "."\n[spaces.s.collections."a\\n"]\n', {}, "must match"),
        ('include = "*.md"\n', {}, "include must be a list of glob patterns"),  # not "*", ".", "m", "d"
        ("include = [1]\n", {}, "include must be a list of glob patterns"),
        ("include = []\n", {}, "include needs at least one pattern"),
        ("exclude = [true]\n", {}, "exclude must be a list of glob patterns"),
        ('[spaces.s]\npath = "."\nexclude = "drafts/**"\n', {}, "\\[spaces.s\\] exclude must be a list"),
        ('[spaces.s]\npath = "."\ninclude = [["*.md"]]\n', {}, "\\[spaces.s\\] include must be a list"),
    ],
)
def test_invalid_configuration_is_a_clear_error(tmp_path: Path, toml: str, env: dict[str, str], message: str):
    config = tmp_path / "c.toml"
    config.write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_settings(config, env=env)


def test_example_config_loads(tmp_path: Path):
    root = make_root(tmp_path, "notes")
    env = {"NOTARIUM_SPACES_ROOT": str(root), "NOTARIUM_INDEX_DIR": str(tmp_path / "index")}
    settings = load_settings(ROOT / "config" / "notarium.example.toml", env=env)
    assert [s.name for s in settings.spaces] == ["notes"]
    assert settings.ranking == RankingConfig()  # the example shows the defaults
    assert settings.fusion == FusionConfig()
    assert (settings.host, settings.port) == (Settings().host, Settings().port)


def test_sample_config_loads():
    settings = load_settings(ROOT / "config" / "sample.toml", env={})
    assert {s.name: s.language for s in settings.spaces} == {"carnet": "auto", "lab": "en"}


def test_configuration_doc_lists_every_field() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    # One row per declared setting: its TOML key, then its environment variable.
    for env_name, key in env_names().items():
        assert re.search(rf"^\| `{key}` \| `{env_name}` \|", doc, re.M), (key, env_name)
    assert "`NOTARIUM_CONFIG`" in doc
    for kind in (RankingConfig, FusionConfig, CollectionConfig):
        for field in msgspec.structs.fields(kind):
            if field.name != "name":  # a collection's name is its table's
                assert f"`{field.name}`" in doc, field.name
    for key in ("include", "exclude", "language", "path"):
        assert f"`{key}`" in doc, key


def test_configuration_doc_lists_the_model_keys(tmp_path: Path):
    """The [model] section names every declared key (docs/models.md describes
    each: tests/test_model_settings.py), the labels among them, and its example loads."""
    section = doc_section("## Model (`[model]`)")
    listed = re.search(r"Its keys are `model.json`'s — (.*?) —", section)
    assert listed, "the [model] section lists its keys"
    assert re.findall(r"`([a-z_]+)`", listed[1]) == list(model_keys())
    labels = re.search(r"any of these values but (.*?) \(labels\)", section)
    assert labels, "the [model] section says which keys change no vector"
    assert re.findall(r"`([a-z_]+)`", labels[1]) == [name for name, key in model_keys().items() if key.label_only]
    example = re.search(r"```toml\n(\[model\]\n.*?)```", section, re.S)
    assert example, "the [model] section shows an example"
    config = tmp_path / "c.toml"
    config.write_text(example[1])
    assert set(load_settings(config, env={}).model) <= set(model_keys())


SECTIONS: dict[type, tuple[str, str]] = {
    RankingConfig: ("## Ranking (`[ranking]`)", "ranking"),
    FusionConfig: ("## Fusion (`[fusion]`)", "fusion"),
}


def doc_section(heading: str) -> str:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    start = doc.index(heading)
    end = doc.find("\n## ", start + len(heading))
    return doc[start : end if end != -1 else len(doc)]


@pytest.mark.parametrize("kind", [RankingConfig, FusionConfig])
def test_configuration_doc_states_the_defaults(kind: type):
    """The `default` column of [ranking] and [fusion], in their own sections, is
    the declared default (per language: LANGUAGE_BOOSTS'): re-tuning one
    (docs/ranking.md) must not leave the reference stale."""
    section = doc_section(SECTIONS[kind][0])
    for field in msgspec.structs.fields(kind):
        row = re.search(rf"^\| `{field.name}` \| ([^|]+) \|", section, re.M)
        assert row, field.name
        cell = row[1].strip()
        if field.default is None:  # measured per language: the row gives each language's value
            stated = re.fullmatch(r"by language: `([\d.]+)` in French, `([\d.]+)` in English", cell)
            assert stated, (field.name, cell)
            attribute = field.name.removesuffix("_boost")
            measured = (getattr(LANGUAGE_BOOSTS["fr"], attribute), getattr(LANGUAGE_BOOSTS["en"], attribute))
            assert (float(stated[1]), float(stated[2])) == measured, (field.name, cell)
        else:
            assert re.fullmatch(r"`[^`]+`", cell), (field.name, cell)
            assert float(cell.strip("`")) == field.default, (field.name, cell, field.default)


@pytest.mark.parametrize("kind", [RankingConfig, FusionConfig])
def test_example_config_lists_every_ranking_and_fusion_key(kind: type):
    """Every key is in the example, set to its default (test_example_config_loads)
    or, for the per-language ones, shown commented out."""
    example = (ROOT / "config" / "notarium.example.toml").read_text()
    table = tomllib.loads(example)[SECTIONS[kind][1]]
    for field in msgspec.structs.fields(kind):
        if field.default is None:
            assert re.search(rf"^# {field.name} = ", example, re.M), field.name
        else:
            assert field.name in table, field.name


def test_fusion_collections_and_activation_fields_load(tmp_path: Path):
    (tmp_path / "notes").mkdir()
    config = tmp_path / "c.toml"
    config.write_text(
        'activation_fields = ["Publié_dans", "used_in"]\n[fusion]\nk = 20\nsemantic_weight = 0.5\n'
        '[spaces.s]\npath = "notes"\n[spaces.s.collections.livres]\nfolder = "/livres/"\nchunking = "section"\n'
        "root_only = true\n"
    )
    settings = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "index")})
    assert settings.fusion == FusionConfig(k=20, semantic_weight=0.5)
    assert settings.activation_fields == ("publié_dans", "used_in")
    (space,) = settings.spaces
    assert space.collections == (CollectionConfig("livres", folder="livres", root_only=True, chunking="section"),)
    env = {"NOTARIUM_INDEX_DIR": str(tmp_path / "index"), "NOTARIUM_ACTIVATION_FIELDS": "cité_dans, used_in"}
    assert load_settings(config, env=env).activation_fields == ("cité_dans", "used_in")


def test_a_space_folder_not_there_yet_is_not_a_configuration_error(tmp_path: Path):
    """A share mounted after the service starts: the space is served as a
    folder gone away is (reported, tried again), not a service that refuses
    to start. A path that is there but is a file is still a mistake."""
    (tmp_path / "file.md").write_text("x")
    config = tmp_path / "c.toml"
    config.write_text(f'[spaces.share]\npath = "{tmp_path / "share"}"\n')
    (space,) = load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "idx")}).spaces
    assert space.path == tmp_path / "share"
    config.write_text(f'[spaces.file]\npath = "{tmp_path / "file.md"}"\n')
    with pytest.raises(ConfigError, match="is not a directory"):
        load_settings(config, env={"NOTARIUM_INDEX_DIR": str(tmp_path / "idx")})
