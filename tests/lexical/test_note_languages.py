"""Each note read in its own language (issue 33, items 1, 2 and 4): a space set
to "auto" detects each note's language (its frontmatter first), stems it with
that language's analyzer, and analyses a query in every language of its notes,
each note scored, highlighted and listed in its own."""

from __future__ import annotations

import pytest
import tantivy
from tantivy import Occur, Query

from notarium_search.index.folder import index_fingerprint
from notarium_search.lexical import search as lexical
from notarium_search.lexical.query import build_query, build_query_across, in_language
from notarium_search.notes.language import MIN_LETTERS, declared, detect, note_language
from notarium_search.service import Service
from notarium_search.settings import ConfigError, Settings, SpaceConfig, load_settings
from notarium_search.types import FeedFilter
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()
FRENCH = "Les ailes d'un avion produisent la portance lorsque l'air s'écoule plus vite au-dessus de l'aile."
ENGLISH = "The wings of an aircraft produce lift when the airflow runs faster over the upper surface."
NOTES = {
    "avion.md": f"# Les avions de ligne\n\n{FRENCH} Les pilotes contrôlent l'assiette.\n",
    "wing.md": f"# Wings and lift\n\n{ENGLISH} Pilots keep controlling the pitch.\n",
    "boats.md": "# Boats\n\nThe sailing boats were running before the wind all the afternoon long.\n",
    "declared.md": "---\nlang: en\n---\n# Note\n\nrunning\n",  # too short to tell: the frontmatter says
}


def auto_space(vault: Vault, languages: tuple[str, ...] = ("fr", "en")) -> Service:
    for path, text in NOTES.items():
        vault.write(path, text)
    config = SpaceConfig("notes", vault.root / "notes", "auto", languages=languages)
    return vault.service(spaces=(config,))


def test_a_note_s_language_comes_from_its_frontmatter_then_its_text():
    both = ("fr", "en")
    assert note_language({}, FRENCH, (), both) == "fr"
    assert note_language({}, ENGLISH, (), both) == "en"
    assert note_language({"lang": "en"}, FRENCH, (), both) == "en"  # the frontmatter wins
    assert note_language({"language": "fr-FR"}, ENGLISH, (), both) == "fr"
    assert note_language({"langue": "Anglais"}, FRENCH, (), both) == "en"
    # A language the space does not read, or none we know: the fallback, the first.
    assert note_language({"lang": "de"}, ENGLISH, (), both) == "fr"
    assert note_language({"lang": "klingon"}, ENGLISH, (), both) == "en"  # unknown: the text tells
    assert declared({"lang": ["it", "fr"]}) == "it"
    assert note_language({}, ENGLISH, (), ("de",)) == "de"  # one language: every note in it


def test_a_short_note_gets_the_fallback_and_code_does_not_count():
    assert len("Berlin Acid Black Cherry") < MIN_LETTERS
    assert detect("Berlin Acid Black Cherry", ("fr", "en")) == "fr"
    assert detect("Berlin Acid Black Cherry", ("en", "fr")) == "en"
    code = (
        "# Returns every item the user selected, then renders each one of them in the window.\n"
        'print("Nothing was found here, please try again with another query.")\n'
    ) * 3
    text = f"{code}\nCette fonction construit la liste des éléments et les affiche dans l'ordre voulu."
    blocks = ((0, len(code)),)
    assert note_language({}, text, (), ("fr", "en")) == "en"  # the code's comments outweigh the sentence
    assert note_language({}, text, blocks, ("fr", "en")) == "fr"


def test_each_note_is_stemmed_in_its_language_and_a_query_analysed_in_each(vault: Vault):
    service = auto_space(vault)
    try:
        # "runs"/"running" are one English stem, not a French one: the English notes match.
        assert set(ids(service.search("notes", "runs", NO_FILTER, 10))) == {"wing.md", "boats.md", "declared.md"}
        # French forms of French words: "aile" finds "ailes".
        assert ids(service.search("notes", "aile", NO_FILTER, 10)) == ["avion.md"]
        # A French question finds the English note where the words allow, and the French one.
        assert set(ids(service.search("notes", "pilotes contrôlant", NO_FILTER, 10))) >= {"avion.md", "wing.md"}
        # English stop words are not matched in English notes.
        assert ids(service.search("notes", "the wind", NO_FILTER, 10)) == ["boats.md"]
        # The feed lists a note where every word occurs in its own language.
        feed = service.feed("notes", "running", NO_FILTER, 10, None)
        assert {n.id for n in feed.items} == {"wing.md", "boats.md", "declared.md"}
        (status,) = service.status()
        assert (status.language, status.languages) == ("auto", {"fr": 1, "en": 3})
    finally:
        service.stop()


def test_a_single_language_space_misses_the_other_language_s_forms(vault: Vault):
    """Why "auto" matters: read as French, "runs" is not "running"."""
    for path, text in NOTES.items():
        vault.write(path, text)
    service = vault.service(spaces=(SpaceConfig("notes", vault.root / "notes", "fr"),))
    try:
        assert "boats.md" not in ids(service.search("notes", "runs", NO_FILTER, 10))
    finally:
        service.stop()


def test_snippets_highlight_each_note_in_its_language(vault: Vault):
    service = auto_space(vault)
    try:
        found = {h.note.id: h for h in service.search("notes", "runs", NO_FILTER, 10).results}
        boats = found["boats.md"].snippets[0]
        assert "<mark>running</mark>" in boats.html
        index = service.space("notes").lexical
        text = NOTES["boats.md"]
        ranges = lexical.highlights(index, "runs", text, 10, 100, note_id="boats.md")
        assert [text[r.start : r.end] for r in ranges] == ["running"]
        # Read as French (the fallback, with no note named), "runs" is not "running".
        assert lexical.highlights(index, "runs", text, 10, 100) == ()
    finally:
        service.stop()


def test_explain_says_which_language_each_note_matched_in(vault: Vault):
    service = auto_space(vault)
    try:
        results = service.search("notes", "pilotes contrôlant", NO_FILTER, 10).results
        languages = {h.note.id: h.trace["lexical"].language for h in results if "lexical" in h.trace}
        assert languages["avion.md"] == "fr"
        assert languages["wing.md"] == "en"
    finally:
        service.stop()


def test_exclusions_hold_in_every_language(vault: Vault):
    service = auto_space(vault)
    try:
        assert "wing.md" not in ids(service.search("notes", "pilot -wing", NO_FILTER, 10))
        assert "avion.md" not in ids(service.search("notes", "pilot -ailes", NO_FILTER, 10))
        assert ids(service.search("notes", "pilot -ailes", NO_FILTER, 10)) == ["wing.md"]
    finally:
        service.stop()


def test_known_items_and_typos_in_both_languages(vault: Vault):
    service = auto_space(vault)
    try:
        assert ids(service.search("notes", "wings and l", NO_FILTER, 10))[:1] == ["wing.md"]
        assert ids(service.search("notes", "les avions de li", NO_FILTER, 10))[:1] == ["avion.md"]
        assert ids(service.search("notes", "airfolw", NO_FILTER, 10))[:1] == ["wing.md"]  # one typo
        assert ids(service.search("notes", "l'assiette", NO_FILTER, 10)) == ["avion.md"]  # French elision
    finally:
        service.stop()


def test_the_fingerprint_changes_with_the_languages(vault: Vault):
    settings = Settings()
    folder = vault.root / "notes"
    prints = {
        index_fingerprint(SpaceConfig("notes", folder, language, languages=languages), settings)
        for language, languages in (("auto", ("fr", "en")), ("auto", ("fr", "en", "de")), ("fr", ("fr", "en")))
    }
    assert len(prints) == 3
    assert index_fingerprint(SpaceConfig("notes", folder), settings) == index_fingerprint(
        SpaceConfig("notes", folder, "auto", languages=("fr", "en")), settings
    )


def test_auto_is_the_default_and_languages_are_checked(tmp_path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "notes").mkdir()
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "notarium.toml"
    config.write_text('[spaces.notes]\npath = "notes"\n')
    (space,) = load_settings(config).spaces
    assert (space.language, space.analyzed) == ("auto", ("fr", "en"))
    config.write_text('[spaces.notes]\npath = "notes"\nlanguages = ["en", "de"]\n')
    assert load_settings(config).spaces[0].analyzed == ("en", "de")
    config.write_text('[spaces.notes]\npath = "notes"\nlanguage = "de"\nlanguages = ["en"]\n')
    assert load_settings(config).spaces[0].analyzed == ("de",)
    config.write_text('[spaces.notes]\npath = "notes"\nlanguages = ["fr", "xx"]\n')
    with pytest.raises(ConfigError, match=r"xx.*one of fr, en, ar"):
        load_settings(config)
    config.write_text('[spaces.notes]\npath = "notes"\nlanguage = "klingon"\n')
    with pytest.raises(ConfigError, match="auto, fr, en"):
        load_settings(config)
    monkeypatch.setenv("NOTARIUM_LANGUAGES", "en,fr")
    config.write_text('[spaces.notes]\npath = "notes"\n')
    assert load_settings(config).spaces[0].analyzed == ("en", "fr")


def test_a_word_of_one_language_is_no_typo_in_the_other(vault: Vault):
    """A word some note holds is not matched at one typo: "personne" is a French
    word of a French note, not a misspelt "personnel" for the English ones."""
    vault.write("maison.md", "# Chez nous\n\nPersonne ne savait où était la maison du village, près de l'église.\n")
    vault.write("mason.md", "# Builders\n\nThe personnel of the yard built the whole wall of the old church.\n")
    config = SpaceConfig("notes", vault.root / "notes", "auto", languages=("fr", "en"))
    service = vault.service(spaces=(config,))
    try:
        assert ids(service.search("notes", "personne ", NO_FILTER, 10)) == ["maison.md"]  # typed whole
        assert ids(service.search("notes", "biulders", NO_FILTER, 10)) == ["mason.md"]  # a real typo still is
    finally:
        service.stop()


def test_a_stop_word_of_one_language_is_not_searched_in_the_other(vault: Vault):
    """A French stop word ("la"): a French question does not find an English
    note by it, where it is a rare word ("La Paz"); nor "the" a French note."""
    vault.write("avion.md", NOTES["avion.md"])
    vault.write("paz.md", "# Bolivia\n\nThe road to La Paz climbs for hours above the clouds of the valley.\n")
    vault.write("cite.md", "# Citation\n\nIl a écrit « the end » sur la dernière page du carnet de voyage.\n")
    config = SpaceConfig("notes", vault.root / "notes", "auto", languages=("fr", "en"))
    service = vault.service(spaces=(config,))
    try:
        assert service.status()[0].languages == {"fr": 2, "en": 1}
        assert ids(service.search("notes", "la portance ", NO_FILTER, 10)) == ["avion.md"]
        assert ids(service.search("notes", "the clouds ", NO_FILTER, 10)) == ["paz.md"]
    finally:
        service.stop()


def test_a_query_is_matched_by_each_language_s_stems(vault: Vault):
    """In English "happy" stems to "happi", as "happiness" does; in French it
    stays "happy": the English analysis of the query finds the English note."""
    vault.write("avion.md", NOTES["avion.md"])
    vault.write("joy.md", "# Joy\n\nTheir happiness showed in every photograph they took during that summer.\n")
    config = SpaceConfig("notes", vault.root / "notes", "auto", languages=("fr", "en"))
    service = vault.service(spaces=(config,))
    try:
        assert ids(service.search("notes", "happy ", NO_FILTER, 10)) == ["joy.md"]
        assert ids(service.search("notes", "happy ailes ", NO_FILTER, 10)) == ["avion.md", "joy.md"]
    finally:
        service.stop()


def test_clauses_alike_in_every_language_are_asked_once_with_the_same_scores(vault: Vault):
    """A word that stems alike in French and English ("pitch", "lift") is
    asked once, outside the language filters (half the cost of a filtered
    clause: lexical/query.py); the notes and their scores are those of each
    language's whole query in its filter."""
    service = auto_space(vault)
    try:
        index = service.space("notes").lexical
        searcher = index.searcher()
        ranking = service.settings.ranking
        schema = index.schema

        def both(text: str) -> tuple[tantivy.Query, tantivy.Query]:
            plans = lexical._plans(index, searcher, text)
            across = [(p, frozenset[str]()) for p in plans]
            whole = [in_language(build_query(p, schema, ranking, a), p.language, schema) for p, a in across]
            return Query.boolean_query([(Occur.Should, q) for q in whole]), build_query_across(across, schema, ranking)

        whole, split = both("pitch pilotes")
        french, english = (
            repr(build_query(p, schema, ranking, frozenset())).count('"pitch"')
            for p in lexical._plans(index, searcher, "pitch pilotes")
        )
        # French adds the word as written and near the next one (LANGUAGE_BOOSTS), English nothing more.
        assert french > english > 0
        assert repr(whole).count('"pitch"') == french + english
        assert repr(split).count('"pitch"') == french  # the clauses alike once, not once per language
        for text in ("pitch pilotes", "wings lift", "les ailes", "running boats wind", "pilot -wing", '"the wings"'):
            whole, split = both(text)
            expected = searcher.search(whole, 10, count=False).hits
            assert expected, text
            # The majority's filter as "no other language" (3 English notes of 4): the same notes.
            plans = [(p, frozenset[str]()) for p in lexical._plans(index, searcher, text)]
            assert index.majority(searcher, [p.language for p, _ in plans]) == "en"
            for query in (split, build_query_across(plans, schema, ranking, "en")):
                found = searcher.search(query, 10, count=False).hits
                assert [(a.segment_ord, a.doc) for _, a in found] == [(a.segment_ord, a.doc) for _, a in expected]
                assert [s for s, _ in found] == pytest.approx([s for s, _ in expected], rel=1e-6), text
    finally:
        service.stop()


def test_a_query_is_analysed_in_each_language_once_and_kept():
    """`plans_in`: the plans of the analysis in two rounds (each language's,
    then each again with every language's stop words), a plan that gains no
    stop word kept from the first; the same objects when asked again (a hybrid
    answer asks twice: the lexical channel, then the semantic snippets)."""
    from notarium_search.lexical.analysis import analyzers
    from notarium_search.lexical.query import plan_query

    languages = ("fr", "en")
    texts = (FRENCH, ENGLISH, "quel est le pitch", "the ailes de l'avion", "pilot -wing", '"the wings" lift')
    for text in (*texts, "avions de lig", "de la", ""):
        first = [plan_query(text, analyzers(language)) for language in languages]
        stop_words = frozenset(t.plain for p in first for u in p.units for t in u.terms if t.stem is None)
        expected = tuple(plan_query(text, analyzers(language), stop_words) for language in languages)
        plans = lexical.plans_in(text, languages)
        assert plans == expected, text
        for plan in plans:  # the word being typed is one of the plan's own terms (told apart by identity)
            assert plan.prefix is None or any(plan.prefix is t for u in plan.units for t in u.terms)
        assert lexical.plans_in(text, languages) is plans
    french, english = lexical.plans_in(FRENCH, languages)
    assert french == plan_query(FRENCH, analyzers("fr"))  # no English stop word in it: kept as first made
    assert english != plan_query(FRENCH, analyzers("en"))  # "les", "d'", "la": French stop words, not searched
