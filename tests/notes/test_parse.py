"""Tests for `notarium_search.notes.parse`: bytes → text → `ParsedNote`.

Pure functions only: no files, no mocks.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import frontmatter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notarium_search.notes.parse import (
    BINARY_SNIFF_BYTES,
    MAX_ID_LENGTH,
    NotANote,
    decode_note,
    parse_note,
    to_datetime,
)
from notarium_search.types import ParsedNote, WikiLink

MTIME = datetime(2020, 6, 15, 12, 0, tzinfo=UTC)
BOM = b"\xef\xbb\xbf"


def parse(text: str, rel_path: str = "notes/ma-note.md") -> ParsedNote:
    return parse_note(text, rel_path, MTIME)


def fm(body: str = "Corps de la note.\n", **fields: str) -> str:
    """A note whose frontmatter lines are given verbatim (values are raw YAML)."""
    lines = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"---\n{lines}---\n{body}"


def assert_aware(note: ParsedNote) -> None:
    assert note.created.tzinfo is not None
    assert note.created.utcoffset() is not None
    assert note.updated.tzinfo is not None
    assert note.updated.utcoffset() is not None


# --------------------------------------------------------------------------- decode_note


class TestDecodeNote:
    def test_plain_utf8(self):
        assert decode_note("Été à Noël — c’est ça".encode()) == "Été à Noël — c’est ça"

    def test_bom_is_stripped(self):
        text = decode_note(BOM + b"# Titre\n")
        assert text == "# Titre\n"
        assert not text.startswith("\ufeff")

    def test_only_one_bom_is_stripped(self):
        # A second BOM is content (U+FEFF), not an encoding marker.
        assert decode_note(BOM + BOM + b"x") == "\ufeffx"

    def test_frontmatter_of_bom_file_is_parsed(self):
        raw = BOM + b"---\ntitle: Avec BOM\ntags: [alpha, beta]\n---\nCorps.\n"
        # The trap: python-frontmatter alone sees no frontmatter behind a BOM.
        assert frontmatter.loads(raw.decode("utf-8")).metadata == {}
        note = parse(decode_note(raw))
        assert note.title == "Avec BOM"
        assert note.tags == ("alpha", "beta")
        assert note.text == "Corps."
        assert note.warnings == ()

    def test_bom_and_crlf_frontmatter(self):
        raw = BOM + b"---\r\ntitle: Windows\r\ntags: a, b\r\n---\r\nLigne 1\r\nLigne 2\r\n"
        note = parse(decode_note(raw))
        assert note.title == "Windows"
        assert note.tags == ("a", "b")
        assert "Ligne 1" in note.text
        assert "Ligne 2" in note.text
        assert "title" not in note.text

    def test_latin1_is_not_a_note(self):
        with pytest.raises(NotANote, match=r"not UTF-8.*offset 3") as excinfo:
            decode_note(b"caf\xe9")
        assert str(excinfo.value)  # the message is the reason shown to the user

    def test_invalid_byte_in_the_middle_is_rejected_even_when_truncated(self):
        with pytest.raises(NotANote, match="not UTF-8"):
            decode_note(b"caf\xe9 au lait et encore du texte", truncated=True)

    def test_not_a_note_is_a_value_error(self):
        assert issubclass(NotANote, ValueError)

    def test_nul_byte_means_binary(self):
        with pytest.raises(NotANote, match="binary"):
            decode_note(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

    def test_nul_byte_wins_over_invalid_utf8(self):
        with pytest.raises(NotANote, match="binary"):
            decode_note(b"\xff\xfe\x00a")

    def test_nul_after_sniff_window_is_not_binary(self):
        raw = b"a" * BINARY_SNIFF_BYTES + b"\x00"
        assert decode_note(raw) == "a" * BINARY_SNIFF_BYTES + "\x00"

    def test_nul_at_end_of_sniff_window_is_binary(self):
        with pytest.raises(NotANote, match="binary"):
            decode_note(b"a" * (BINARY_SNIFF_BYTES - 1) + b"\x00")

    @pytest.mark.parametrize(
        ("full", "cut", "expected"),
        [
            ("café", 1, "caf"),  # é = 2 bytes, 1 kept
            ("日本語", 1, "日本"),  # 3-byte char, 2 kept
            ("日本語", 2, "日本"),  # 3-byte char, 1 kept
            ("note 🙂", 1, "note "),  # 4-byte char, 3 kept
            ("note 🙂", 2, "note "),
            ("note 🙂", 3, "note "),
        ],
    )
    def test_truncated_mid_character_decodes(self, full, cut, expected):
        raw = full.encode()[:-cut]
        assert decode_note(raw, truncated=True) == expected
        with pytest.raises(NotANote):
            decode_note(raw)  # the same bytes, not declared truncated, are an error

    def test_truncated_on_character_boundary_is_unchanged(self):
        assert decode_note("café".encode(), truncated=True) == "café"

    def test_truncated_bom_file_mid_character_decodes(self):
        raw = BOM + "Résumé".encode()[:-1]
        assert decode_note(raw, truncated=True) == "Résum"

    def test_invalid_byte_offset_counts_the_bom(self):
        raw = BOM + b"ab\xffcd"  # the bad byte is at file offset 5
        with pytest.raises(NotANote, match="offset 5"):
            decode_note(raw)


# --------------------------------------------------------------------------- basic fields


class TestBasicFields:
    def test_plain_note_without_frontmatter(self):
        note = parse("Juste du texte.\n", "dossier/sous/fichier.md")
        assert note.id == "dossier/sous/fichier.md"
        assert note.path == "dossier/sous/fichier.md"
        assert note.folder == "dossier/sous"
        assert note.title == "fichier"
        assert note.text == "Juste du texte."
        assert note.created == MTIME
        assert note.updated == MTIME
        assert note.tags == ()
        assert note.aliases == ()
        assert note.warnings == ()

    def test_root_note_has_empty_folder(self):
        assert parse("x", "racine.md").folder == ""

    def test_headings_and_links_are_filled_from_body(self):
        note = parse(fm("# Titre\n\nVoir [[Autre note|ici]].\n\n## Section\n", title="T"))
        assert note.headings == ("Titre", "Section")
        assert note.links == (WikiLink(target="Autre note", alias="ici"),)

    def test_frontmatter_is_not_in_text(self):
        note = parse(fm("Le corps.\n", title="Secret", tags="[a]"))
        assert note.text == "Le corps."
        assert "Secret" not in note.text


class TestId:
    def test_string_id(self):
        assert parse(fm(id="abc-123")).id == "abc-123"

    def test_int_id(self):
        assert parse(fm(id="42")).id == "42"

    def test_id_is_stripped(self):
        assert parse(fm(id='"  z1  "')).id == "z1"

    def test_default_id_is_posix_relative_path(self):
        assert parse("x", "a/b/c.md").id == "a/b/c.md"

    @pytest.mark.parametrize(
        "raw_id",
        [
            "true",  # a bool is not an id
            '""',
            '"   "',
            '"a\\nb"',  # not printable
            "[1, 2]",
            "{k: v}",
            "3.5",
            "null",
        ],
    )
    def test_unusable_id_falls_back_to_path(self, raw_id):
        assert parse(fm(id=raw_id), "n/x.md").id == "n/x.md"

    def test_too_long_id_falls_back_to_path(self):
        assert parse(fm(id="a" * (MAX_ID_LENGTH + 1)), "n/x.md").id == "n/x.md"
        assert parse(fm(id="a" * MAX_ID_LENGTH), "n/x.md").id == "a" * MAX_ID_LENGTH


class TestTitle:
    def test_title_from_frontmatter(self):
        assert parse(fm("# Titre du corps\n", title="Titre FM")).title == "Titre FM"

    def test_title_key_case_insensitive(self):
        note = parse("---\nTitle: Majuscule\nTAGS: [Alpha]\nId: K1\n---\nx\n")
        assert note.title == "Majuscule"
        assert note.tags == ("alpha",)
        assert note.id == "K1"

    def test_title_from_first_h1(self):
        note = parse("Intro\n\n## Pas celui-ci\n\n# Le **vrai** titre\n\n# Second H1\n")
        assert note.title == "Le vrai titre"

    def test_h1_in_code_block_is_not_the_title(self):
        note = parse("```bash\n# commentaire\n```\n\n# Vrai titre\n")
        assert note.title == "Vrai titre"

    def test_title_falls_back_to_file_stem(self):
        assert parse("## seulement un H2\n", "dossier/Réunion du lundi.md").title == "Réunion du lundi"

    def test_empty_frontmatter_title_falls_back_to_h1(self):
        assert parse(fm("# Depuis le corps\n", title="''")).title == "Depuis le corps"

    def test_non_string_title_is_stringified(self):
        assert parse(fm(title="2024")).title == "2024"

    def test_list_title_uses_first_item(self):
        assert parse(fm(title="[Premier, Second]")).title == "Premier"

    def test_title_is_stripped_and_capped(self):
        assert parse(fm(title='"  espaces  "')).title == "espaces"
        assert len(parse(fm(title="x" * 5000)).title) == 1000

    def test_title_keeps_accents_and_apostrophes(self):
        assert parse(fm(title='"L\'été à Noël — c’est ça"')).title == "L'été à Noël — c’est ça"


class TestAliases:
    def test_aliases_list(self):
        assert parse(fm(aliases="[Alpha, Béta]")).aliases == ("Alpha", "Béta")

    def test_aliases_comma_string(self):
        assert parse(fm(aliases="Alpha, Béta ,  Gamma")).aliases == ("Alpha", "Béta", "Gamma")

    def test_alias_singular_key(self):
        assert parse(fm(alias="Seul")).aliases == ("Seul",)

    def test_aliases_deduplicated_and_blank_dropped(self):
        assert parse(fm(aliases="[a, null, a, ' b ', '']")).aliases == ("a", "b")

    def test_no_aliases(self):
        assert parse(fm(aliases="")).aliases == ()


class TestUnicodeNormalisation:
    """Notes saved decomposed (NFD: macOS tools, some sync tools) must index
    like composed ones: Tantivy's tokenizer splits `interope\u0301rabilite\u0301`
    at the combining accent, so the text is NFC before anything reads it."""

    def test_nfd_note_comes_out_nfc(self):
        text = unicodedata.normalize(
            "NFD",
            "---\ntitle: Interopérabilité\naliases: [Été]\ntags: [réunion]\nsource: Société\n---\n"
            "# Première partie\n\nL'interopérabilité #équipe et [[Café|ça]].\n",
        )
        assert text != unicodedata.normalize("NFC", text)
        note = parse(text)
        assert note.title == "Interopérabilité"
        assert note.aliases == ("Été",)
        assert note.tags == ("réunion", "équipe")
        assert note.headings == ("Première partie",)
        assert note.links == (WikiLink(target="Café", alias="ça"),)
        assert note.frontmatter["source"] == "Société"
        assert "L'interopérabilité" in note.text
        for value in (note.title, note.text, *note.tags, *note.aliases, *note.headings):
            assert unicodedata.is_normalized("NFC", value)

    def test_path_and_path_id_are_kept_as_given(self):
        # Paths map back to files: the decomposed name on disk stays as it is.
        path = unicodedata.normalize("NFD", "dossier/Réunion d'été.md")
        note = parse("Corps.\n", path)
        assert note.path == path
        assert note.id == path
        assert note.folder == "dossier"
        assert note.title == "Réunion d'été"  # shown to people: NFC
        assert unicodedata.is_normalized("NFC", note.title)


# --------------------------------------------------------------------------- tags


class TestFrontmatterTags:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("a, b", ("a", "b")),  # one YAML string, two tags
            ('[x, "#y"]', ("x", "y")),
            ("single", ("single",)),
            ("projet/dora", ("projet/dora",)),
            ("[projet/dora/, '#Projet/Alpha']", ("projet/dora", "projet/alpha")),
            ("'#a #b'", ("a", "b")),
            ("a b,c", ("a", "b", "c")),
            ("[A, a, B]", ("a", "b")),  # lowercased and deduplicated
            ("\n  - un\n  - deux", ("un", "deux")),  # block list
            ("[]", ()),
            ("", ()),
            ("[ok, null, {k: v}]", ("ok",)),
        ],
    )
    def test_tag_shapes(self, raw, expected):
        note = parse(fm("Rien.\n", tags=raw))
        assert note.tags == expected
        assert note.warnings == ()

    def test_tag_alias_key(self):
        assert parse(fm(tag="unique")).tags == ("unique",)

    def test_tags_key_wins_over_tag_key(self):
        assert parse(fm(tags="[a]", tag="b")).tags == ("a",)

    def test_frontmatter_and_inline_tags_merge_without_duplicates(self):
        note = parse(fm("Texte #Alpha et #gamma.\n", tags="[alpha, beta]"))
        assert note.tags == ("alpha", "beta", "gamma")

    def test_nested_list_item_does_not_become_a_bracketed_tag(self):
        tags = parse(fm(tags="[[n], ok]")).tags
        assert "ok" in tags
        assert not any("[" in t or "'" in t for t in tags)


class TestInlineTags:
    def test_inline_tags_found_and_lowercased(self):
        assert parse("Un #Projet et #projet/Dora ici.\n").tags == ("projet", "projet/dora")

    def test_tags_in_code_are_ignored(self):
        body = "Vrai #dehors\n\n```python\nx = 1  # commentaire #dedans\n```\n\nEt `#inline` aussi.\n"
        assert parse(body).tags == ("dehors",)

    def test_numeric_tag_is_not_a_tag(self):
        assert parse("Ticket #2024 et #42\n").tags == ()

    def test_tag_with_digits_and_letters_is_a_tag(self):
        assert parse("Année #2024a et #y2k\n").tags == ("2024a", "y2k")

    def test_url_fragment_is_not_a_tag(self):
        body = "Voir http://x.y/#frag et https://ex.com/page#section et [lien](http://a.b/#ancre)\n"
        assert parse(body).tags == ()

    def test_hash_inside_word_is_not_a_tag(self):
        assert parse("C# et F#, issue-#12, a#b\n").tags == ()

    def test_heading_markers_are_not_tags(self):
        note = parse("# Title\n\n## Sous-titre\n\nTexte.\n")
        assert note.tags == ()
        assert note.title == "Title"

    def test_tag_in_heading_text_is_a_tag(self):
        assert parse("## Réunion #compte-rendu\n").tags == ("compte-rendu",)

    def test_tag_at_line_start_without_space_is_a_tag(self):
        assert parse("#important\nTexte.\n").tags == ("important",)

    def test_trailing_slash_or_dash_is_dropped(self):
        assert parse("Fin #projet/ et #idee-\n").tags == ("projet", "idee")

    def test_no_empty_tag_from_dashes(self):
        assert "" not in parse("Liste #- et #/ et\n#---\n").tags

    def test_tag_in_wikilink_heading_is_not_a_tag(self):
        assert parse("Voir [[Note#Section]] et [[Autre#Titre|alias]].\n").tags == ()


class TestYamlCoreSchema:
    """YAML 1.1 turns `yes`, `0012` or `0x1F` into booleans and numbers; Obsidian
    shows them as written. The loader resolves scalars as YAML 1.2's core schema
    does instead: booleans only true/false, integers only plain decimal."""

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("0012", "0012"),  # octal in YAML 1.1: 10
            ("012345", "012345"),  # 5349
            ("0x1F", "0x1F"),
            ("0o17", "0o17"),
            ("0b101", "0b101"),
            ("1_000", "1_000"),
            ("1:30", "1:30"),  # sexagesimal: 90
            ("42", "42"),
            ("-7", "-7"),
        ],
    )
    def test_id_is_the_text_written(self, raw, expected):
        assert parse(fm(id=raw), "n/x.md").id == expected

    @pytest.mark.parametrize("raw", ["yes", "No", "on", "OFF", "y", "n", "Y", "0x1F", "0012", "1:30", "1_000.5"])
    def test_title_is_the_text_written(self, raw):
        assert parse(fm(title=raw)).title == raw

    def test_tags_and_aliases_are_the_text_written(self):
        note = parse(fm(tags="[no, on, fr, Yes, 0012]", aliases="[Off, y]"))
        assert note.tags == ("no", "on", "fr", "yes", "0012")
        assert note.aliases == ("Off", "y")

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("true", True),
            ("True", True),
            ("TRUE", True),
            ("false", False),
            ("False", False),
            ("FALSE", False),
            ("yes", "yes"),
            ("no", "no"),
            ("on", "on"),
            ("off", "off"),
            ("y", "y"),
            ("n", "n"),
            ("0", 0),
            ("42", 42),
            ("-42", -42),
            ("+42", 42),
            ("0012", "0012"),
            ("0x1F", "0x1F"),
            ("0o17", "0o17"),
            ("1_000", "1_000"),
            ("1:30", "1:30"),
            ("1.5", 1.5),
            ("-0.25", -0.25),
            (".5", 0.5),
            ("1.5e+3", 1500.0),
            ("1_000.5", "1_000.5"),
            ("1:30.5", "1:30.5"),
            ("null", None),
            ("~", None),
            ("2024-01-05", "2024-01-05"),  # dates stay text: to_datetime reads them
            ("'yes'", "yes"),
            ("!!bool yes", True),  # an explicit tag is the writer's choice
        ],
    )
    def test_scalar_resolution(self, raw, expected):
        value = parse(fm(field=raw)).frontmatter["field"]
        assert value == expected
        assert type(value) is type(expected)

    def test_yes_no_keys_stay_text(self):
        # YAML 1.1 reads the key `on:` as True; activation entries use `on` for their date.
        note = parse("---\non: 2024-05-02\nyes: 1\n---\nx\n")
        assert note.frontmatter == {"on": "2024-05-02", "yes": 1}


# --------------------------------------------------------------------------- frontmatter traps


class TestMalformedFrontmatter:
    @pytest.mark.parametrize(
        ("yaml_block", "word"),
        [
            ("title: [unclosed\ntags: a", "unclosed"),  # unclosed bracket
            ("title: x\n  bad: indent", "indent"),  # bad indentation
            ("title:\tx\n\tfoo: tabulation", "tabulation"),  # tab characters
            ('title: "unterminated', "unterminated"),
            ("liste: [\n", "liste"),
            ("title: !!python/object:os.system rm", "title"),  # unsafe tag refused by the safe loader
            ("? [a, b]\n: cléinhachable", "cléinhachable"),  # unhashable key
            ("created: !!timestamp 2024-02-30", "created"),  # explicit tag: PyYAML itself raises
        ],
    )
    def test_malformed_yaml_keeps_whole_text_as_body(self, yaml_block, word):
        note = parse(f"---\n{yaml_block}\n---\nLe corps survit.\n", "n/cassé.md")
        assert len(note.warnings) == 1
        assert "malformed frontmatter" in note.warnings[0]
        assert "Le corps survit." in note.text
        assert word in note.text  # the broken frontmatter is indexed as text
        assert note.title == "cassé"
        assert note.id == "n/cassé.md"
        assert note.created == note.updated == MTIME
        assert note.tags == ()

    def test_malformed_yaml_title_falls_back_to_body_h1(self):
        note = parse("---\ntitle: [oops\n---\n# Titre du corps\n")
        assert note.title == "Titre du corps"

    def test_empty_frontmatter(self):
        note = parse("---\n---\nCorps.\n", "x/vide.md")
        assert note.text == "Corps."
        assert note.title == "vide"
        assert note.warnings == ()

    def test_comment_only_frontmatter(self):
        note = parse("---\n# juste un commentaire\n---\nCorps.\n", "x/vide.md")
        assert note.text == "Corps."
        assert note.title == "vide"
        assert note.warnings == ()

    def test_unclosed_frontmatter_is_body(self):
        note = parse("---\ntitle: Jamais fermé\nsuite du texte\n", "x/ouvert.md")
        assert note.title == "ouvert"  # not read as frontmatter
        assert "Jamais fermé" in note.text
        assert "suite du texte" in note.text

    @pytest.mark.parametrize("text", ["---", "---\n", "----\n", "---\n\n"])
    def test_dashes_only(self, text):
        note = parse(text, "d.md")
        assert note.title == "d"
        assert note.text == ""

    def test_list_frontmatter_does_not_crash(self):
        note = parse("---\n- un\n- deux\n---\nCorps.\n", "x/liste.md")
        assert "Corps." in note.text
        assert note.title == "liste"
        assert note.tags == ()
        assert note.id == "x/liste.md"

    def test_scalar_frontmatter_does_not_crash(self):
        note = parse("---\n42\n---\nCorps.\n", "x/scalaire.md")
        assert "Corps." in note.text
        assert note.title == "scalaire"

    def test_list_frontmatter_is_indexed_as_body_with_warning(self):
        note = parse("---\n- pomme\n- poire\n---\nCorps.\n")
        assert any("not a mapping" in w for w in note.warnings)
        assert "pomme" in note.text

    def test_leading_thematic_break_does_not_lose_text(self):
        note = parse("---\nParagraphe important entre deux règles\n---\nSuite.\n")
        assert "Paragraphe important" in note.text
        assert note.warnings != ()


# --------------------------------------------------------------------------- dates


class TestDates:
    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            ("2024-01-05", datetime(2024, 1, 5, tzinfo=UTC)),  # YAML date
            ("!!timestamp 2024-01-05", datetime(2024, 1, 5, tzinfo=UTC)),  # real `date` object from YAML
            ("2024-01-05 10:30:00", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),  # naive → UTC
            ("2024-01-05T10:30:00", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),
            ("!!timestamp 2024-01-05 10:30:00", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),  # naive datetime object
            ("2024-01-05 10:30", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),
            ("2024-01-05T10:30:00Z", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),
            ("'2024-01-05T10:30:00Z'", datetime(2024, 1, 5, 10, 30, tzinfo=UTC)),
            ("05/01/2024", datetime(2024, 1, 5, tzinfo=UTC)),  # French dd/mm/yyyy
            ("'31/12/2023 23:59'", datetime(2023, 12, 31, 23, 59, tzinfo=UTC)),
            ("2024/01/05", datetime(2024, 1, 5, tzinfo=UTC)),
            ("1704412800", datetime(2024, 1, 5, tzinfo=UTC)),  # epoch seconds
            ("1704412800000", datetime(2024, 1, 5, tzinfo=UTC)),  # epoch milliseconds
            ("'1704412800'", datetime(2024, 1, 5, tzinfo=UTC)),
            ("1704412800.5", datetime(2024, 1, 5, 0, 0, 0, 500000, tzinfo=UTC)),
            ("20240105", datetime(2024, 1, 5, tzinfo=UTC)),  # compact ISO, read as int by YAML
            ("'20240105'", datetime(2024, 1, 5, tzinfo=UTC)),
        ],
    )
    def test_created_shapes(self, raw, expected):
        note = parse(fm(created=raw))
        assert note.created == expected
        assert note.created.utcoffset() == timedelta(0)
        assert note.updated == MTIME  # `created` alone does not set `updated`
        assert note.warnings == ()
        assert_aware(note)

    @pytest.mark.parametrize(
        ("raw", "offset", "expected"),
        [
            # The YAML spec's own examples: fromisoformat refuses a spaced or one-digit offset.
            ("2001-12-14 21:59:43.10 -5", -5, datetime(2001, 12, 15, 2, 59, 43, 100000, tzinfo=UTC)),
            ("2001-12-14T21:59:43.10-5", -5, datetime(2001, 12, 15, 2, 59, 43, 100000, tzinfo=UTC)),
            ("2001-12-14 21:59:43.10 +05:30", 5.5, datetime(2001, 12, 14, 16, 29, 43, 100000, tzinfo=UTC)),
            ("'2001-12-14 21:59:43.10 -5'", -5, datetime(2001, 12, 15, 2, 59, 43, 100000, tzinfo=UTC)),
            ("2001-12-14 21:59:43.10 Z", 0, datetime(2001, 12, 14, 21, 59, 43, 100000, tzinfo=UTC)),
            ("2001-12-14t21:59:43.10-05:00", -5, datetime(2001, 12, 15, 2, 59, 43, 100000, tzinfo=UTC)),
            ("2024-1-5", 0, datetime(2024, 1, 5, tzinfo=UTC)),  # one-digit month and day
        ],
    )
    def test_yaml_timestamp_shapes(self, raw, offset, expected):
        note = parse(fm(created=raw))
        assert note.warnings == ()
        assert note.created == expected
        assert note.created.utcoffset() == timedelta(hours=offset)

    @pytest.mark.parametrize("raw", ["2001-12-14 21:59:43 +25", "2024-02-30 10:00:00 -5", "2001-12-14 25:00:00"])
    def test_impossible_yaml_timestamps_warn(self, raw):
        note = parse(fm(created=raw))
        assert note.created == MTIME
        assert len(note.warnings) == 1

    @pytest.mark.parametrize(
        "raw", ["2024-01-05T10:30:00+02:00", "!!timestamp 2024-01-05T10:30:00+02:00", "'2024-01-05T10:30:00+02:00'"]
    )
    def test_aware_datetime_keeps_offset_and_instant(self, raw):
        created = parse(fm(created=raw)).created
        assert created.utcoffset() == timedelta(hours=2)
        assert created == datetime(2024, 1, 5, 8, 30, tzinfo=UTC)

    def test_updated_and_created(self):
        note = parse(fm(created="2024-01-05", updated="2024-02-01T08:00:00Z"))
        assert note.created == datetime(2024, 1, 5, tzinfo=UTC)
        assert note.updated == datetime(2024, 2, 1, 8, tzinfo=UTC)

    @pytest.mark.parametrize("key", ["modified", "last_modified", "date_modified"])
    def test_updated_aliases(self, key):
        note = parse(fm(**{key: "2024-02-01"}))
        assert note.updated == datetime(2024, 2, 1, tzinfo=UTC)
        assert note.created == note.updated  # created falls back to updated

    @pytest.mark.parametrize("key", ["date_created", "creation_date"])
    def test_created_aliases(self, key):
        assert parse(fm(**{key: "2024-01-05"})).created == datetime(2024, 1, 5, tzinfo=UTC)

    def test_date_key_sets_both(self):
        note = parse(fm(date="2024-03-01"))
        assert note.created == note.updated == datetime(2024, 3, 1, tzinfo=UTC)

    def test_no_dates_uses_mtime(self):
        note = parse(fm(title="x"))
        assert note.created == note.updated == MTIME

    def test_impossible_date_warns_and_falls_back_to_mtime(self):
        note = parse(fm(created="2024-02-30"))
        assert note.created == MTIME
        assert note.updated == MTIME
        assert len(note.warnings) == 1
        assert "created" in note.warnings[0]
        assert "2024-02-30" in note.warnings[0]
        assert note.text == "Corps de la note."  # the rest of the frontmatter still applies
        assert_aware(note)

    def test_impossible_created_falls_back_to_updated(self):
        note = parse(fm(created="2024-02-30", updated="2024-01-10", title="Gardé"))
        assert note.created == note.updated == datetime(2024, 1, 10, tzinfo=UTC)
        assert note.title == "Gardé"
        assert len(note.warnings) == 1

    def test_unreadable_first_key_tries_the_next(self):
        note = parse(fm(created="bientôt", date="2024-03-01"))
        assert note.created == datetime(2024, 3, 1, tzinfo=UTC)
        assert any("bientôt" in w for w in note.warnings)

    @pytest.mark.parametrize("raw", ["hier", "true", "[2024-01-05]", "{a: 1}", "-5", "12", "1.0e+400", ".nan", "0000"])
    def test_unreadable_dates_warn(self, raw):
        note = parse(fm(created=raw))
        assert note.created == MTIME
        assert len(note.warnings) == 1
        assert_aware(note)

    def test_null_and_empty_dates_are_silently_absent(self):
        for raw in ("", "null", "''"):
            note = parse(fm(created=raw))
            assert note.created == MTIME
            assert note.warnings == ()

    def test_unreadable_date_key_warns_once(self):
        assert len(parse(fm(date="2024-02-30")).warnings) == 1

    def test_compact_minute_timestamp(self):
        assert parse(fm(created="202401051030")).created == datetime(2024, 1, 5, 10, 30, tzinfo=UTC)

    def test_compact_second_timestamp(self):
        note = parse(fm(created="20240105103000"))
        assert note.created == datetime(2024, 1, 5, 10, 30, tzinfo=UTC)
        assert note.warnings == ()

    def test_huge_int_date_does_not_raise(self):
        note = parse(fm(created="0x" + "f" * 300))
        assert note.created == MTIME
        assert len(note.warnings) == 1

    @pytest.mark.parametrize("key", ["id", "title", "tags", "aliases"])
    def test_huge_int_field_does_not_raise(self, key):
        note = parse(fm(**{key: "0x" + "f" * 4000}), "n/x.md")
        assert note.id == "n/x.md" or key == "id"
        assert_aware(note)


class TestToDatetime:
    def test_date_object(self):
        assert to_datetime(date(2024, 1, 5)) == datetime(2024, 1, 5, tzinfo=UTC)

    def test_naive_datetime_is_utc(self):
        result = to_datetime(datetime(2024, 1, 5, 10, 30))
        assert result == datetime(2024, 1, 5, 10, 30, tzinfo=UTC)
        assert result is not None
        assert result.tzinfo is not None

    def test_aware_datetime_is_kept(self):
        paris = timezone(timedelta(hours=2))
        value = datetime(2024, 1, 5, 10, 30, tzinfo=paris)
        result = to_datetime(value)
        assert result == value
        assert result is not None
        assert result.utcoffset() == timedelta(hours=2)

    @pytest.mark.parametrize("value", [None, True, False, [], {}, "", "   ", "n'importe quoi", 5, -1704412800])
    def test_unreadable(self, value):
        assert to_datetime(value) is None

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            # Valid dates whose offset pushes them past datetime's range in UTC:
            # clamped to its ends, so callers can always convert them.
            ("0001-01-01T00:00:00+05:00", datetime.min.replace(tzinfo=UTC)),
            ("9999-12-31T23:59:59-05:00", datetime.max.replace(tzinfo=UTC)),
            ("0001-01-01 00:00:00 +5", datetime.min.replace(tzinfo=UTC)),
            (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))), datetime.min.replace(tzinfo=UTC)),
            (datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-2))), datetime.max.replace(tzinfo=UTC)),
            # In range: kept as written.
            ("0001-01-01", datetime(1, 1, 1, tzinfo=UTC)),
            ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
            ("0001-01-01T10:00:00+05:00", datetime(1, 1, 1, 5, tzinfo=UTC)),
            ("1515-09-13", datetime(1515, 9, 13, tzinfo=UTC)),
            ("2999-01-01", datetime(2999, 1, 1, tzinfo=UTC)),
        ],
    )
    def test_extreme_dates_never_overflow(self, value, expected):
        result = to_datetime(value)
        assert result == expected
        assert result is not None
        assert result.astimezone(UTC) == expected
        assert isinstance(result.timestamp(), float)

    def test_extreme_frontmatter_date(self):
        note = parse(fm(created="0001-01-01T00:00:00+05:00", updated="!!timestamp 9999-12-31T23:59:59-05:00"))
        assert note.warnings == ()
        assert note.created.astimezone(UTC) == datetime.min.replace(tzinfo=UTC)
        assert note.updated.astimezone(UTC) == datetime.max.replace(tzinfo=UTC)

    @pytest.mark.parametrize("value", [1704412800, 1704412800000, "1704412800", "2024-01-05", "05/01/2024"])
    def test_readable_values_are_aware(self, value):
        result = to_datetime(value)
        assert result == datetime(2024, 1, 5, tzinfo=UTC)
        assert result is not None
        assert result.tzinfo is not None


# --------------------------------------------------------------------------- properties

_PROPERTY_SETTINGS = settings(
    max_examples=600, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

_YAMLISH = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "title: ",
                "tags: ",
                "tag: ",
                "aliases: ",
                "id: ",
                "created: ",
                "updated: ",
                "date: ",
                "2024-02-30",
                "2024-01-05T10:00:00+02:00",
                "1704412800",
                "05/01/2024",
                "[",
                "]",
                "{",
                "}",
                ", ",
                "- ",
                "#",
                "\n",
                "\t",
                "  ",
                "'",
                '"',
                "!!timestamp ",
                "&a ",
                "*a",
                "null",
                "---\n",
                "# ",
                "```\n",
                "[[",
                "]]",
                "|",
            ]
        ),
        st.text(max_size=4),
    ),
    max_size=25,
).map("".join)


def _check_note(text: str) -> None:
    raw = text.encode("utf-8")
    if b"\x00" in raw:
        with pytest.raises(NotANote, match="binary"):
            decode_note(raw)
        return
    decoded = decode_note(raw)
    assert decoded == text.removeprefix("\ufeff")
    note = parse_note(decoded, "dossier/Note aléatoire.md", MTIME)
    assert_aware(note)
    assert note.title
    assert note.title == note.title.strip()
    assert note.id
    assert all(isinstance(t, str) and not t.startswith("#") for t in note.tags)
    assert len(set(note.tags)) == len(note.tags)
    assert isinstance(note.text, str)


@_PROPERTY_SETTINGS
@given(st.text())
def test_property_any_text_parses(text):
    _check_note(text)


@_PROPERTY_SETTINGS
@given(st.text())
def test_property_any_frontmatter_like_text_parses(text):
    _check_note("---\n" + text)


@_PROPERTY_SETTINGS
@given(_YAMLISH, st.text(max_size=40))
def test_property_yamlish_frontmatter_parses(front, body):
    _check_note(f"---\n{front}\n---\n{body}")


_OFFSETS = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
)


_EDGE_DATETIMES = st.one_of(  # most of the range, and its first and last days, where offsets overflow
    st.datetimes(timezones=st.one_of(st.none(), _OFFSETS)),
    st.datetimes(max_value=datetime(1, 1, 2), timezones=st.one_of(st.none(), _OFFSETS)),
    st.datetimes(min_value=datetime(9999, 12, 30), timezones=st.one_of(st.none(), _OFFSETS)),
)


@_PROPERTY_SETTINGS
@given(_EDGE_DATETIMES, st.sampled_from(["T", " "]))
def test_property_any_datetime_converts_to_utc(value, separator):
    for candidate in (value, value.isoformat(separator), value.isoformat(separator).replace("+00:00", "Z")):
        result = to_datetime(candidate)
        assert result is not None
        result.astimezone(UTC)
        result.timestamp()


@pytest.mark.parametrize("value", ["¹", "²⁰²⁴", "٢٠٢٤٠١٠٥", "１２３４５６７８９"])
def test_unicode_digits_are_not_dates_and_never_raise(value):
    from notarium_search.notes.parse import to_datetime

    assert to_datetime(value) is None
    note = parse(fm(created=f'"{value}"'))
    assert note.created == MTIME


def test_notes_doc_names_every_date_field_and_default_exclusion():
    """docs/notes.md says where each date comes from and what is never read: kept in step."""
    from notarium_search.notes import parse
    from notarium_search.settings import DEFAULT_EXCLUDE, DEFAULT_INCLUDE

    doc = (Path(__file__).parents[2] / "docs" / "notes.md").read_text()
    for key in (*parse._CREATED_KEYS, *parse._UPDATED_KEYS, *DEFAULT_EXCLUDE, *DEFAULT_INCLUDE):
        assert f"`{key}`" in doc, key
    assert f"{parse.BINARY_SNIFF_BYTES // 1024} KiB" in doc
