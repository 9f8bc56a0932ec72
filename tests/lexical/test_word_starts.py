"""Word starts (issue 31, item 4): in a search-as-you-type launcher the first
letters already find notes. A query whose words are abbreviated (two letters
at most, or no note's word) lists the notes whose file name, title or an
alias has words starting with the query's words, in order — `mi po` is
"Migration vers PostgreSQL" — after the names it is or starts and before the
notes its words find; a query of words notes hold whole ranks as before.
Over real Tantivy indexes."""

from __future__ import annotations

import pytest

from notarium_search.lexical import known
from notarium_search.lexical.known import _starts_pattern, starts_words, word_starts
from notarium_search.types import FeedFilter
from tests.conftest import Vault

NO_FILTER = FeedFilter()
# Words starting like the query's, many times: by their words these notes come first.
CHATTY = "Pour la politique de portage, mise au point : les points, la pompe, la migration, le miel. " * 5


@pytest.fixture
def launcher(vault: Vault) -> Vault:
    vault.write("Protocoles ouverts.md", "Des standards.\n")
    vault.write("plan-de-bascule.md", "Le service change de base.\n")
    vault.write("Migration vers PostgreSQL.md", "On quitte l'ancienne base.\n")
    vault.write("Projets/Migrations de bases PostgreSQL et MySQL.md", "Deux moteurs.\n")
    vault.write("Plan de migration vers PostgreSQL.md", "Les étapes.\n")
    vault.write("Été.md", "Les vacances.\n")
    vault.write("Juillet.md", "---\naliases: [Vacances d'été]\n---\nLe soleil.\n")
    vault.write("Carnet.md", "---\ntitle: Journal des ouvertures\n---\nChaque jour.\n")
    for n in range(3):
        vault.write(f"divers-{n}.md", CHATTY)
    return vault


def found(service, query: str, **filters) -> list[tuple[str, str | None]]:
    response = service.search("notes", query, FeedFilter(**filters), 10)
    return [(hit.note.path, hit.known) for hit in response.results]


def test_one_letter_finds_names_by_the_start_of_any_of_their_words(launcher: Vault):
    service = launcher.service()
    try:
        # Names starting with the letter first, the shortest first; then a later word's start.
        assert found(service, "p")[:5] == [
            ("plan-de-bascule.md", "file_name_prefix"),
            ("Protocoles ouverts.md", "file_name_prefix"),
            ("Plan de migration vers PostgreSQL.md", "file_name_prefix"),
            ("Projets/Migrations de bases PostgreSQL et MySQL.md", "path_prefix"),  # its folder's name
            ("Migration vers PostgreSQL.md", "file_name_words"),
        ]
        assert found(service, "b")[0] == ("plan-de-bascule.md", "file_name_words")
        assert found(service, "o")[:2] == [
            ("Protocoles ouverts.md", "file_name_words"),
            ("Carnet.md", "title_words"),  # the title, not the file name
        ]
        # Case and accents aside, aliases too.
        assert found(service, "É")[:2] == [("Été.md", "file_name_prefix"), ("Juillet.md", "alias_words")]
        # A note found so holds the letter: the answer names no word as unmatched.
        assert service.search("notes", "p", NO_FILTER, 10).unmatched_terms == ()
    finally:
        service.stop()


def test_the_starts_of_several_words_find_the_name_in_order(launcher: Vault):
    service = launcher.service()
    try:
        # The first word of the name matched first, the shortest name first; then a later word.
        assert found(service, "mi po")[:3] == [
            ("Migration vers PostgreSQL.md", "file_name_words"),
            ("Projets/Migrations de bases PostgreSQL et MySQL.md", "file_name_words"),
            ("Plan de migration vers PostgreSQL.md", "file_name_words"),
        ]
        assert found(service, "pro ouv")[0] == ("Protocoles ouverts.md", "file_name_words")
        assert found(service, "journ ouv")[0] == ("Carnet.md", "title_words")
        # In order only, and a finished last word must be whole ("rust " is not "rustc").
        assert all(name is None for _, name in found(service, "po mi"))
        assert all(name is None for _, name in found(service, "mi po "))
        assert found(service, "mi postgresql ")[0] == ("Migration vers PostgreSQL.md", "file_name_words")
        # Abbreviations are short: five words are a question or a name typed out.
        assert found(service, "pl mi ve po")[0] == ("Plan de migration vers PostgreSQL.md", "file_name_words")
        assert all(name is None for _, name in found(service, "pl de mi ve po"))
    finally:
        service.stop()


def test_exclusions_and_filters_hold_for_word_starts(launcher: Vault):
    service = launcher.service()
    try:
        mysql = "Projets/Migrations de bases PostgreSQL et MySQL.md"
        assert mysql not in [path for path, _ in found(service, "mi po -moteurs")]
        assert found(service, "mi po", folder="Projets")[0] == (mysql, "file_name_words")
    finally:
        service.stop()


def test_a_query_of_words_notes_hold_whole_ranks_by_its_words(launcher: Vault):
    """Word starts answer abbreviations: `migration`, `point` and `plan base`
    are words of the notes, searched as before (the names they are or start,
    then BM25), never by the start of a name's later word."""
    service = launcher.service()
    try:
        for query in ("migration", "point", "plan base", "politique migration"):
            assert not [hit for hit in found(service, query) if (hit[1] or "").endswith("_words")], query
        assert found(service, "migration")[0] == ("Migration vers PostgreSQL.md", "file_name_prefix")
    finally:
        service.stop()


def test_word_starts_are_bounded(launcher: Vault, monkeypatch: pytest.MonkeyPatch):
    """Two letters can start a word of every name: no more notes are listed
    than a page asks for (20; WORD_START_READS times that read), from at
    most WORD_START_TERMS dictionary entries."""
    for n in range(40):
        launcher.write(f"Carnets/Le projet numéro {n:02}.md", f"Le projet {n}.\n")
    service = launcher.service()
    try:
        named = [h for h in service.search("notes", "nu", NO_FILTER, 50).results if h.known]
        assert len(named) == 20  # lexical.search.NAMED_NOTES
        assert [h.note.path for h in named[:2]] == ["Carnets/Le projet numéro 00.md", "Carnets/Le projet numéro 01.md"]
        monkeypatch.setattr(known, "WORD_START_TERMS", 5)
        named = [h for h in service.search("notes", "nu", NO_FILTER, 50).results if h.known]
        assert len(named) == 5
    finally:
        service.stop()


def test_names_are_indexed_from_each_later_word_and_matched_in_order():
    assert word_starts("Projets/Migration vers PostgreSQL.md", "Migration vers PostgreSQL", ("Bascule",)) == {
        "vers postgresql",
        "postgresql",
    }
    assert word_starts("a.md", "", ()) == set()
    long_title = " ".join(f"w{n}" for n in range(40))
    assert len(word_starts("a.md", long_title, ())) == known.WORD_STARTS_PER_NAME
    assert starts_words(("mi", "po"), "migration vers postgresql", typing=True) == 0
    assert starts_words(("ve", "po"), "migration vers postgresql", typing=True) == 1
    assert starts_words(("po", "mi"), "migration vers postgresql", typing=True) is None
    assert starts_words(("mi", "post"), "migration vers postgresql", typing=False) is None
    assert starts_words(("m", "m"), "migration mysql", typing=True) == 0  # two words, two of the name's
    assert starts_words(("m", "m"), "migration", typing=True) is None


def test_the_dictionary_filter_is_the_word_by_word_match():
    """The terms a word may start are filtered by one regular expression
    (known._starts_pattern): it must say what `starts_words` says."""
    names = ["migration vers postgresql", "migrations de bases postgresql et mysql", "plan de migration"]
    names += ["mi po", "m", "a b a c", "note 3", "3"]
    queries = [("mi", "po"), ("m",), ("m", "m"), ("a", "c"), ("a", "a"), ("po",), ("pl", "mi", "ve", "po"), ("3",)]
    for name in names:
        for words in queries:
            for typing in (True, False):
                expected = starts_words(words, name, typing) == 0
                assert bool(_starts_pattern(words, typing).match(name)) == expected, (name, words, typing)
