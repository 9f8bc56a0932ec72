"""Tests for `notarium_search.notes.markdown`: wiki-links, headings, inline tags, plain text.

Pure functions over strings.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notarium_search.notes import markdown as md
from notarium_search.notes.guarded_pattern import GuardedPattern
from notarium_search.types import WikiLink

# --------------------------------------------------------------------------- wiki-links


class TestWikilinks:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("[[Note]]", WikiLink(target="Note")),
            ("[[Note|alias]]", WikiLink(target="Note", alias="alias")),
            ("[[Note#Heading]]", WikiLink(target="Note", heading="Heading")),
            ("[[Note#Heading|alias]]", WikiLink(target="Note", heading="Heading", alias="alias")),
            ("![[img.png]]", WikiLink(target="img.png")),  # embed
            ("![[img.png|300]]", WikiLink(target="img.png", alias="300")),
            ("[[ Note avec espaces | un alias ]]", WikiLink(target="Note avec espaces", alias="un alias")),
            ("[[dossier/Sous note.md]]", WikiLink(target="dossier/Sous note.md")),
            ("[[#Section locale]]", WikiLink(target="", heading="Section locale")),
            ("[[Note#]]", WikiLink(target="Note")),
            ("[[Été à Noël|c’est l'été]]", WikiLink(target="Été à Noël", alias="c’est l'été")),
            # Obsidian's escaped pipe, needed inside tables.
            (r"[[Note\|Alias]]", WikiLink(target="Note", alias="Alias")),
            (r"[[Note#Titre\|Alias]]", WikiLink(target="Note", heading="Titre", alias="Alias")),
            (r"![[img.png\|300]]", WikiLink(target="img.png", alias="300")),
        ],
    )
    def test_single_link_shapes(self, source, expected):
        assert md.wikilinks(f"Voir {source} ici.") == (expected,)

    def test_escaped_pipe_in_a_table(self):
        text = "| Note | Lien |\n|---|---|\n| a | [[Cible\\|Nom affiché]] |\n"
        assert md.wikilinks(text) == (WikiLink(target="Cible", alias="Nom affiché"),)
        assert md.to_plain_text(text) == "Note Lien\n\na Nom affiché"

    def test_links_in_order_with_duplicates(self):
        text = "[[B]] puis [[A|a]] puis ![[c.png]] puis [[B]]"
        assert md.wikilinks(text) == (
            WikiLink(target="B"),
            WikiLink(target="A", alias="a"),
            WikiLink(target="c.png"),
            WikiLink(target="B"),
        )

    def test_links_in_code_are_ignored(self):
        text = (
            "Avant [[Vrai]]\n\n"
            "```markdown\n[[Dans un bloc]]\n```\n\n"
            "~~~\n[[Dans un tilde]]\n~~~\n\n"
            "Et `[[en ligne]]` ou ``[[double]]`` puis [[Après]]\n"
        )
        assert md.wikilinks(text) == (WikiLink(target="Vrai"), WikiLink(target="Après"))

    def test_unclosed_fence_hides_the_rest(self):
        assert md.wikilinks("avant [[A]]\n```\n[[B]]\n") == (WikiLink(target="A"),)

    @pytest.mark.parametrize(
        "text", ["[[]]", "[[ ]]", "[[|alias]]", "[[#]]", "[[a\nb]]", "[Note]", "[[Note]", "[x](y)"]
    )
    def test_not_links(self, text):
        assert md.wikilinks(text) == ()

    @pytest.mark.parametrize("text", ["[[# ]]", "[[ # |x]]"])
    def test_blank_heading_link_is_not_a_link(self, text):
        assert md.wikilinks(text) == ()


# --------------------------------------------------------------------------- headings


class TestHeadings:
    def test_headings_in_order_without_hashes(self):
        text = "# Un\n\nTexte\n\n## Deux\n\n### Trois ###\n\n###### Six\n\n## Deux bis\n"
        assert md.headings(text) == ("Un", "Deux", "Trois", "Six", "Deux bis")

    def test_headings_in_code_blocks_are_ignored(self):
        text = "# Vrai\n```bash\n# commentaire shell\n```\n~~~\n## pas un titre\n~~~\n## Aussi vrai\n"
        assert md.headings(text) == ("Vrai", "Aussi vrai")

    def test_inline_markup_is_reduced(self):
        assert md.headings("## Sous **titre** et [[Lien|alias]] et [texte](http://x)\n") == (
            "Sous titre et alias et texte",
        )

    @pytest.mark.parametrize(
        "text",
        [
            "#PasUnTitre",  # no space: a tag
            "####### sept dièses",
            "    # code indenté",
            "Texte # pas en début de ligne",
        ],
    )
    def test_not_headings(self, text):
        assert md.headings(text) == ()

    def test_up_to_three_spaces_indent(self):
        assert md.headings("   ## Indenté\n") == ("Indenté",)

    def test_accents_kept(self):
        assert md.headings("## Réunion d'équipe — été\n") == ("Réunion d'équipe — été",)

    def test_first_h1(self):
        assert md.first_h1("Intro\n## Deux\n# Un\n# Autre\n") == "Un"
        assert md.first_h1("## Seulement deux\n") is None
        assert md.first_h1("```\n# code\n```\n") is None

    def test_inline_code_in_heading_is_kept(self):
        assert md.headings("## Installer `pipx`\n") == ("Installer pipx",)
        assert md.first_h1("# `ripgrep` cheatsheet\n") == "ripgrep cheatsheet"


# --------------------------------------------------------------------------- inline tags


class TestInlineTags:
    def test_simple_and_nested(self):
        assert md.inline_tags("Un #projet et #projet/Dora et (#paren) [#crochet]") == (
            "projet",
            "projet/Dora",
            "paren",
            "crochet",
        )

    def test_accented_tag(self):
        assert md.inline_tags("Tag #été et #réunion-équipe") == ("été", "réunion-équipe")

    def test_code_is_ignored(self):
        text = "#dehors\n```\n#bloc\n```\n~~~\n#tilde\n~~~\n````\n```\n#imbriqué\n````\n`#enligne` #après"
        assert md.inline_tags(text) == ("dehors", "après")

    @pytest.mark.parametrize(
        "text",
        [
            "#2024",
            "Issue #42 et #1",
            "http://x.y/#frag",
            "https://ex.com/page#section",
            "[lien](http://a.b/#ancre)",
            "[[Note#Section]]",
            "# Titre",
            "## Sous-titre",
            "C# et a#b",
        ],
    )
    def test_not_tags(self, text):
        assert md.inline_tags(text) == ()

    def test_tag_in_heading_text(self):
        assert md.inline_tags("## Titre #tag\n") == ("tag",)

    @pytest.mark.parametrize(
        "text",
        [
            "<!-- #comment -->",
            "avant <!-- un\n#commentaire\nsur trois lignes --> après",
            "%% #obs %%",
            "avant %%\n#caché\n%% après",
        ],
    )
    def test_comments_are_not_tags(self, text):
        assert md.inline_tags(text) == ()

    def test_tags_around_comments_are_kept(self):
        assert md.inline_tags("#avant <!-- #non --> #après %% #non %% #fin") == ("avant", "après", "fin")

    @pytest.mark.parametrize(
        "text",
        [
            "    #indented code",  # start of document
            "Texte.\n\n    #include <stdio.h>\n    int main(void);",
            "Texte.\n\n\t#tab",
            "Texte.\n\n  \t#tabulation après deux espaces",
            "# Titre\n    #après_un_titre",  # a heading is not a paragraph: nothing to continue
            "Texte.\n\n    int x;\n\n    #encore_du_code\n",  # blank lines inside the block
            "```\nbloc\n```\n    #après_une_clôture",
            "- élément\n\n      #code_dans_l_élément",  # 4 columns past the item's content column
            "10. élément\n\n        #code_dans_l_élément",
            "-tiret\n\n    #code",  # no space after the dash: a paragraph, not a list
            "3.5 litres\n\n    #code",
            "Titre\n---\n    #après_un_titre_souligné",
        ],
    )
    def test_indented_code_is_not_tags(self, text):
        assert md.inline_tags(text) == ()

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            # An indented line cannot interrupt a paragraph: it continues it.
            ("Un paragraphe\n    #suite du paragraphe", ("suite",)),
            # Inside a list item, indented lines are the item's continuation.
            ("- élément\n    #continuation", ("continuation",)),
            ("- élément\n\n    #paragraphe_de_l_élément", ("paragraphe_de_l_élément",)),
            ("1. premier\n\n    #suite\n2. second #aussi", ("suite", "aussi")),
            # After the code block, prose again.
            ("Texte.\n\n    #code\n\n#dehors", ("dehors",)),
            ("Texte.\n\n    #code\n#dehors", ("dehors",)),
            # A list ends at an unindented paragraph after a blank line.
            ("- élément\n\nParagraphe.\n\n    #code\n\n#tag", ("tag",)),
            ("   #trois_espaces", ("trois_espaces",)),  # three spaces: not code
        ],
    )
    def test_indented_prose_keeps_tags(self, text, expected):
        assert md.inline_tags(text) == expected

    def test_indented_code_stays_searchable(self):
        parts = md.analyse("Un programme C :\n\n    #include <stdio.h>\n")
        assert parts.tags == ()
        assert "#include" in parts.plain_text

    def test_no_empty_tags(self):
        assert md.inline_tags("a #- b #/ c #---") == ()


# --------------------------------------------------------------------------- plain text


class TestPlainText:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("**gras** et *ital* et ***les deux***", "gras et ital et les deux"),
            ("__fort__ et _souligné_", "fort et souligné"),
            ("~~barré~~ et ==surligné==", "barré et surligné"),
            ("un [lien](https://ex.com/a_(b)?q=1) ici", "un lien ici"),
            ("![texte alternatif](img.png)", "texte alternatif"),
            ("[[Cible]]", "Cible"),
            ("[[Cible|Alias]]", "Alias"),
            ("[[Cible#Section]]", "Cible Section"),
            ("[[Cible#Section|Alias]]", "Alias"),
            (r"[[Cible\|Alias]]", "Alias"),
            (r"[[Cible#Section\|Alias]]", "Alias"),
            ("[[a]][[b]]", "a b"),  # adjacent links stay separate words
            ("[[a|x]]![[b.png]][[c#d]]", "x b.png c d"),
            ("[[chat]]s et [[a]].", "chats et a."),  # text touching a link is unchanged
            ("![[image.png]]", "image.png"),
            ('<div class="note">Texte <b>gras</b></div><br/>', "Texte gras"),
            ("> [!note] Titre de l'encadré\n> contenu cité", "Titre de l'encadré\ncontenu cité"),
            ("> [!WARNING]- Replié\n> > cité deux fois", "Replié\ncité deux fois"),
            ("- puce\n* étoile\n+ plus\n1. un\n2) deux", "puce\nétoile\nplus\nun\ndeux"),
            ("- [ ] à faire\n- [x] fait\n  - [X] imbriqué", "à faire\nfait\nimbriqué"),
            ("| Nom | Valeur |\n|-----|:------:|\n| a | b |", "Nom Valeur\n\na b"),
            ("Avant\n\n---\n\n***\n\nAprès", "Avant\n\nAprès"),
            ("texte <!-- commentaire\nsur deux lignes --> suite %%caché%% fin", "texte suite fin"),
            ("# Titre ##\n## Sous **titre**", "Titre\nSous titre"),
            ("a  \t b\n\n\n\n\nc", "a b\n\nc"),
        ],
    )
    def test_markup_removed(self, source, expected):
        assert md.to_plain_text(source) == expected

    def test_code_content_kept(self):
        text = "Lancer `pip install my_pkg` puis :\n\n```bash\nnotarium-search index --space notes\n```\n"
        assert md.to_plain_text(text) == "Lancer pip install my_pkg puis :\n\nnotarium-search index --space notes"

    def test_fenced_code_keeps_snake_case(self):
        text = "```python\ndef my_func(x_y):\n    return x_y\n```"
        assert md.to_plain_text(text) == "def my_func(x_y):\nreturn x_y"

    def test_snake_case_identifiers_intact(self):
        text = "snake_case_name et my_var et CONST_VALUE et file_name.py et a_b_c"
        assert md.to_plain_text(text) == text

    def test_accents_and_apostrophes_preserved(self):
        text = "L'été, c’est « génial » — n'est-ce pas ? Ça coûte 5 €. Œuvre, naïveté, São Paulo."
        assert md.to_plain_text(text) == text

    def test_no_markup_characters_left(self):
        text = (
            "# Titre\n\n> [!tip] Astuce **importante**\n\n- [x] tâche *faite* avec [[Lien|alias]]\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n<span>html</span> et [lien](http://x.y)\n"
        )
        plain = md.to_plain_text(text)
        for char in ("#", "*", "[", "]", "|", "<", ">", "(http"):
            assert char not in plain, (char, plain)
        for word in ("Titre", "Astuce", "importante", "tâche", "faite", "alias", "html", "lien"):
            assert word in plain

    def test_strip_code(self):
        assert "b" not in md.strip_code("a `b` c\n```\nd\n```\ne")
        assert md.strip_code("a `b` c\n```\nd\n```\ne").split() == ["a", "c", "e"]

    def test_fenced_code_identifiers_survive_emphasis_rules(self):
        plain = md.to_plain_text("```python\ndef __init__(self, *args, **kwargs):\n    return a*b*c\n```")
        assert "__init__" in plain
        assert "a*b*c" in plain
        assert "**kwargs" in plain

    def test_inline_code_dunder_survives(self):
        assert md.to_plain_text("Appeler `__init__` ici") == "Appeler __init__ ici"

    def test_html_in_fenced_code_survives(self):
        assert "<div" in md.to_plain_text('```html\n<div class="x">bonjour</div>\n```')

    def test_autolink_keeps_its_text(self):
        assert "example.com" in md.to_plain_text("voir <https://example.com/doc>")


# --------------------------------------------------------------------------- performance


class TestPathologicalInput:
    """Inputs that made the old patterns quadratic or worse. No timing
    assertion (shared machines are noisy): the sizes are chosen so that a
    quadratic pattern would run for minutes and trip the test timeout, while
    the linear ones finish in milliseconds."""

    @pytest.mark.timeout(30)
    def test_many_unclosed_emphasis_openers(self):
        text = "self._value = other._value *x ~~y " * 20_000  # 700 KB of unclosed openers in prose
        assert "self._value" in md.to_plain_text("```python\n" + text + "\n```\n")
        assert md.to_plain_text(text)

    @pytest.mark.timeout(30)
    def test_long_backtick_runs(self):
        assert md.strip_code("x " + "`" * 200_000).strip() == "x " + "`" * 200_000  # one unmatched run
        assert md.to_plain_text("a " + "`x` `" * 50_000).startswith("a x")

    def test_ordinary_large_note(self):
        para = "Un **paragraphe** avec [[Lien|alias]], #tag, `code`, [url](http://x.y) et snake_case.\n"
        text = ("# Titre\n\n" + para * 50 + "```python\nx = 1\n```\n") * 20  # ~100 KB
        parts = md.analyse(text)
        assert parts.plain_text.count("paragraphe") == 1000
        assert parts.tags == ("tag",) * 1000


# --------------------------------------------------------------------------- properties

_MARKDOWNISH = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "#",
                "# ",
                "## ",
                "[[",
                "]]",
                "|",
                "![[",
                "[",
                "](",
                ")",
                "`",
                "```\n",
                "~~~\n",
                "*",
                "**",
                "_",
                "~~",
                "==",
                "> ",
                "[!note]",
                "- [ ] ",
                "1. ",
                "<b>",
                "</b>",
                "<!--",
                "-->",
                "%%",
                "\n",
                " ",
                "\t",
                "---\n",
                "é",
                "’",
            ]
        ),
        st.text(max_size=4),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), _MARKDOWNISH))
def test_property_markdown_functions_never_raise(text):
    plain = md.to_plain_text(text)
    assert isinstance(plain, str)
    assert plain == plain.strip()
    assert "\n\n\n" not in plain
    assert all(isinstance(h, str) for h in md.headings(text))
    assert all(isinstance(t, str) and "#" not in t for t in md.inline_tags(text))
    for link in md.wikilinks(text):
        assert "\n" not in link.target
        assert "[" not in link.target
        assert "]" not in link.target


@pytest.mark.parametrize("heading", ["1. Concaténer les fichiers", "2) Lire la source", "- une liste ?", "> cité"])
def test_a_heading_that_starts_like_a_list_item_is_a_section(heading):
    """Issue 29: `### 1. Concaténer …` lost its "1. " in the plain text, so the
    heading was no line of it and had no section: a hit could not open there."""
    parts = md.analyse(f"# Titre\n\nAvant.\n\n### {heading}\n\nTexte.\n")
    assert heading in parts.plain_text.split("\n")
    assert [(level, text) for _, level, text in parts.sections] == [(1, "Titre"), (3, heading)]


_GUARDED = {name: value for name, value in vars(md).items() if isinstance(value, GuardedPattern)}
# Every character the guarded patterns give a meaning to, and a letter, digit,
# accent and blank: short strings of these hold every needle and miss each.
_PATTERN_ALPHABET = "*_~=#[]()!<>`|-:\n\t  aé1\ue000\ue001\ue002\ue003"


@pytest.mark.parametrize("name", sorted(_GUARDED))
@settings(max_examples=400, deadline=None, database=None)
@given(st.text(alphabet=_PATTERN_ALPHABET, max_size=24))
def test_a_guarded_pattern_matches_what_the_pattern_alone_matches(name, text):
    """A pattern is tried only where one of its needles occurs (`GuardedPattern`):
    a needle list that missed a way the pattern matches would leave markup in
    the plain text of notes written that way."""
    guarded = _GUARDED[name]
    bare = guarded._pattern
    assert guarded.sub("§", text) == bare.sub("§", text)
    assert [m.span() for m in guarded.finditer(text)] == [m.span() for m in bare.finditer(text)]


def test_the_guards_cover_the_patterns_that_scan_every_note():
    assert {"_MARKER_RE", "_BLANKS_RE", "_MANY_NEWLINES_RE", "_WIKILINK_RE", "_MD_LINK_RE"} <= set(_GUARDED)
