"""Every Snowball language Tantivy ships, for a space (issue 33, item 3):
German, Spanish and Italian vaults found by their words' other forms, their
stop words left out of the ranked field, their notes found by a title typed
as is or half typed, as French ones are."""

from __future__ import annotations

import pytest

from notarium_search.lexical.analysis import NO_STOP_WORDS, SNOWBALL, analyzers
from notarium_search.service import Service
from notarium_search.settings import LANGUAGES, SpaceConfig
from notarium_search.types import FeedFilter
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()

VAULTS = {
    "de": {
        "haeuser.md": "# Die Häuser der Stadt\n\nAlte Gebäude am Fluss, gebaut aus Stein.\n",
        "buecher.md": "# Lesen\n\nIn dem Buch der Bibliothek steht es anders.\n",
        "katzen.md": "# Tiere\n\nDie Katzen schlafen auf der Straße.\n",
        "reise.md": "# Reise nach Wien\n\nDer Zug fährt um acht Uhr.\n",
    },
    "es": {
        "canciones.md": "# Canciones populares\n\nLas canciones de la región se cantan en verano.\n",
        "naciones.md": "# Historia\n\nLas naciones del sur firmaron el tratado.\n",
        "carrera.md": "# La carrera\n\nEl atleta corrió durante tres horas.\n",
        "bosque.md": "# El bosque\n\nLos árboles más altos crecen junto al río.\n",
    },
    "it": {
        "biblioteca.md": "# La biblioteca civica\n\nI libri antichi sono conservati al piano terra.\n",
        "discorso.md": "# Il discorso\n\nIl sindaco parlò ai cittadini della piazza.\n",
        "viaggio.md": "# Viaggio a Napoli\n\nIl treno partì all'alba verso la città.\n",
        "cucina.md": "# Ricette\n\nLe ricette della nonna usano pomodori freschi.\n",
    },
}
# (query, the note it must bring first): another form of a word the note holds.
PROBES = {
    "de": [("Haus", "haeuser.md"), ("Bücher", "buecher.md"), ("Katze", "katzen.md"), ("Strasse", "katzen.md")],
    "es": [("canción", "canciones.md"), ("nación", "naciones.md"), ("correr", "carrera.md"), ("arbol", "bosque.md")],
    "it": [("libro", "biblioteca.md"), ("parlare", "discorso.md"), ("cittadino", "discorso.md")],
}
# Titles typed as is, and half typed.
KNOWN = {
    "de": [("Die Häuser der Stadt", "haeuser.md"), ("reise nach w", "reise.md")],
    "es": [("Canciones populares", "canciones.md"), ("el bos", "bosque.md")],
    "it": [("La biblioteca civica", "biblioteca.md"), ("viaggio a nap", "viaggio.md")],
}


def test_every_language_a_space_may_have_has_its_stemmer():
    assert set(LANGUAGES) == set(SNOWBALL)
    assert len(LANGUAGES) == 18
    for language in LANGUAGES:
        assert analyzers(language).stemmed.analyze("x") is not None


@pytest.mark.parametrize(
    ("language", "text", "stems"),
    [
        ("de", "der Hund und die Katzen", ["hund", "katz"]),
        ("es", "las canciones de la región", ["cancion", "region"]),
        ("it", "i libri della città", ["libr", "citt"]),
        ("ru", "книги и журналы", ["книг", "журнал"]),
        ("tr", "kitaplar ve çocuklar", ["kitap", "ve", "cocuk"]),  # no stop word list: "ve" kept
    ],
)
def test_stop_words_are_dropped_and_words_stemmed(language: str, text: str, stems: list[str]):
    assert analyzers(language).stemmed.analyze(text) == stems
    assert "tr" in NO_STOP_WORDS
    assert "de" not in NO_STOP_WORDS


def test_french_and_english_analysis_is_unchanged():
    """The two measured languages keep their chains (fold, then stem): no rebuild, same scores."""
    assert analyzers("fr").stemmed.analyze("Les interopérabilités jusqu'à combien") == ["interoperabilit"]
    assert analyzers("en").stemmed.analyze("What does the wing's lift do") == ["wing", "s", "lift"]


@pytest.mark.parametrize("language", sorted(VAULTS))
def test_a_vault_in_another_language_is_found_by_other_forms_and_by_its_titles(vault: Vault, language: str):
    for path, text in VAULTS[language].items():
        vault.write(path, text)
    service: Service = vault.service(spaces=(SpaceConfig("notes", vault.root / "notes", language),))
    try:
        for query, expected in PROBES[language]:
            assert ids(service.search("notes", query, NO_FILTER, 10))[:1] == [expected], (language, query)
        for query, expected in KNOWN[language]:
            assert ids(service.search("notes", query, NO_FILTER, 10))[:1] == [expected], (language, query)
        (status,) = service.status()
        assert status.language == language
    finally:
        service.stop()


def test_an_italian_vault_read_as_french_misses_the_other_forms(vault: Vault):
    """Why a space's language matters: Italian verb forms are not French ones."""
    for path, text in VAULTS["it"].items():
        vault.write(path, text)
    service: Service = vault.service(spaces=(SpaceConfig("notes", vault.root / "notes", "fr"),))
    try:
        assert ids(service.search("notes", "parlare", NO_FILTER, 10)) == []  # "parlò" in discorso.md
    finally:
        service.stop()
