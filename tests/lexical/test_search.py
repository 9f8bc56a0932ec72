"""Lexical search behaviour over real Tantivy indexes built from real files."""

from __future__ import annotations

import pytest

from notarium_search.lexical import query_words
from notarium_search.lexical.query import LANGUAGE_BOOSTS, LanguageBoosts, language_boosts
from notarium_search.settings import RankingConfig
from notarium_search.types import FeedFilter, Snippet
from tests.conftest import Vault, ids

NO_FILTER = FeedFilter()


def marked(snippet: Snippet) -> list[str]:
    return [snippet.text[r.start : r.end] for r in snippet.highlights]


INTEROP = """---
id: interop
title: L'agent sans API est aveugle
tags: [ia]
---
L'interopérabilité des systèmes d'information est la condition de l'utilité d'un agent.
"""
PLURAL = """---
id: plural
title: Protocoles ouverts
---
Les Interopérabilités techniques précèdent les interopérabilités sémantiques.
"""
FOLDED = """---
id: folded
title: Sans accents
---
interoperabilite ecrite sans accents par un clavier anglais.
"""
HAMLET = """---
id: hamlet
title: Citation
---
Être ou ne pas être, telle est la question. Le café-crème est servi à l'école.
"""
OTHER = """---
id: other
title: Jardinage
---
Les tomates poussent mieux au soleil qu'à l'ombre des systèmes nuageux.
"""


@pytest.fixture
def service(vault: Vault):
    for name, text in {"a.md": INTEROP, "b.md": PLURAL, "c.md": FOLDED, "d.md": HAMLET, "e.md": OTHER}.items():
        vault.write(name, text)
    service = vault.service()
    yield service
    service.stop()


@pytest.mark.parametrize("query", ["interopérabilité", "interoperabilite", "Interopérabilités", "INTEROPERABILITES"])
def test_accents_and_plurals_are_one_term(service, query):
    assert set(ids(service.search("notes", query, NO_FILTER, 10))) == {"interop", "plural", "folded"}


def test_french_apostrophe_query(service):
    response = service.search("notes", "l'interopérabilité", NO_FILTER, 10)
    assert set(ids(response)) == {"interop", "plural", "folded"}
    assert response.unmatched_terms == ()


def test_more_matched_terms_rank_first_and_missing_term_does_not_empty(service):
    response = service.search("notes", "interopérabilité agent zzzzqx", NO_FILTER, 10)
    assert ids(response)[0] == "interop"  # the only note with both real words
    assert "zzzzqx" in response.unmatched_terms


def test_quoted_phrase_is_required(service):
    assert ids(service.search("notes", '"être ou ne pas être"', NO_FILTER, 10)) == ["hamlet"]
    # The same words in another order are not the phrase.
    assert ids(service.search("notes", '"être pas ou"', NO_FILTER, 10)) == []


def test_exclusion(service):
    found = ids(service.search("notes", "interopérabilité -agent", NO_FILTER, 10))
    assert set(found) == {"plural", "folded"}
    assert ids(service.search("notes", 'interopérabilité -"sans accents"', NO_FILTER, 10)).count("folded") == 0


def test_last_word_is_a_prefix_while_typing(service):
    assert ids(service.search("notes", "tom", NO_FILTER, 10)) == ["other"]
    assert ids(service.search("notes", "interopéra", NO_FILTER, 10))
    # A trailing space means the word is finished: no prefix expansion.
    assert ids(service.search("notes", "tom ", NO_FILTER, 10)) == []


def test_an_exclusion_typed_after_the_last_word_keeps_it_a_prefix(service):
    # Issue 29: "postgres -mysql" lost the prefix match "-mysql postgres" kept.
    assert ids(service.search("notes", "-agent tom", NO_FILTER, 10)) == ["other"]
    assert ids(service.search("notes", "tom -agent", NO_FILTER, 10)) == ["other"]
    assert ids(service.search("notes", "tom -agen", NO_FILTER, 10)) == ["other"]
    assert ids(service.search("notes", "tom -agent ", NO_FILTER, 10)) == []


def test_typo_matches_but_ranks_below_exact(service):
    response = service.search("notes", "tomatos", NO_FILTER, 10)  # one edit from "tomates"
    assert ids(response) == ["other"]
    exact_and_typo = service.search("notes", "sémantiques sémentiques", NO_FILTER, 10)
    assert ids(exact_and_typo)[0] == "plural"


def test_typo_never_outranks_exact_match(vault: Vault):
    vault.write("exact.md", "---\nid: exact\n---\nLe jardin potager.\n")
    vault.write("typo.md", "---\nid: typo\n---\nLe jardim des tomates, tomates et tomates.\n")
    service = vault.service()
    try:
        # "tomattes" occurs in no note: it is matched at one typo, below the exact "jardin".
        response = service.search("notes", "jardin tomattes ", NO_FILTER, 10)
        assert ids(response) == ["exact", "typo"]
        assert response.unmatched_terms == ("tomattes",)
        # A word that some note contains is not also matched at one typo ("jardim").
        assert ids(service.search("notes", "jardin ", NO_FILTER, 10)) == ["exact"]
    finally:
        service.stop()


def test_stop_word_only_query(vault: Vault):
    vault.write("h.md", "---\nid: hamlet\n---\nTo be or not to be, that is the question.\n", space="en-notes")
    vault.write("o.md", "---\nid: other\n---\nBeing there.\n", space="en-notes")
    service = vault.service()
    try:
        response = service.search("en-notes", "to be or not to be", NO_FILTER, 10)
        assert ids(response)[0] == "hamlet"
        assert marked(response.results[0].snippets[0]) == ["To", "be", "or", "not", "to", "be"]
        assert ids(service.search("en-notes", '"to be or not to be"', NO_FILTER, 10)) == ["hamlet"]
    finally:
        service.stop()


def test_english_stemming(vault: Vault):
    vault.write("r.md", "---\nid: runner\n---\nThe runners were running quickly.\n", space="en-notes")
    service = vault.service()
    try:
        assert ids(service.search("en-notes", "run", NO_FILTER, 10)) == ["runner"]
    finally:
        service.stop()


@pytest.mark.parametrize(
    "query", ['"x', "(x", "C:\\temp", "-x", "AND", "OR NOT", "*", "title:foo", "a^2", "~", '"', "-", "'"]
)
def test_odd_queries_never_fail(service, query):
    response = service.search("notes", query, NO_FILTER, 10)
    assert isinstance(response.results, tuple)


def test_empty_query_returns_nothing(service):
    response = service.search("notes", "   ", NO_FILTER, 10)
    assert response.results == ()
    assert response.channels_used == ()


def test_snippets_highlight_accented_words_at_code_point_offsets(service):
    response = service.search("notes", "interoperabilite", NO_FILTER, 10)
    hit = next(h for h in response.results if h.note.id == "plural")
    snippet = hit.snippets[0]
    assert marked(snippet) == ["Interopérabilités", "interopérabilités"]
    assert "<mark>Interopérabilités</mark>" in snippet.html


def test_snippets_highlight_the_word_being_typed(service):
    snippet = service.search("notes", "tom", NO_FILTER, 10).results[0].snippets[0]
    assert marked(snippet) == ["tomates"]
    assert "<mark>tomates</mark>" in snippet.html


def test_snippets_highlight_the_word_a_typo_matched(service):
    snippet = service.search("notes", "tomatos ", NO_FILTER, 10).results[0].snippets[0]
    assert marked(snippet) == ["tomates"]


def test_snippets_fold_letters_beyond_latin_1(vault: Vault):
    # ’ and œ are outside Latin-1 too: offsets after them must not shift.
    vault.write("c.md", "---\nid: capek\n---\nL’œuvre de Karel Čapek, écrite à Praha.\n")
    vault.write("g.md", "---\nid: greek\n---\nΗ γάτα κοιμάται. Le chat dort.\n")
    service = vault.service()
    try:
        assert marked(service.search("notes", "capek praha", NO_FILTER, 10).results[0].snippets[0]) == [
            "Čapek",
            "Praha",
        ]
        # A non-Latin query word: the note is split by Tantivy's own tokenizer.
        assert marked(service.search("notes", "γάτα chat", NO_FILTER, 10).results[0].snippets[0]) == ["γάτα", "chat"]
    finally:
        service.stop()


def test_snippet_finds_a_match_deep_in_a_long_note(vault: Vault):
    # 60,000 characters without the word, full of near misses ("lundi" starts like "lune").
    filler = "Lundi, du texte sans rapport pour séparer les passages. " * 1100
    vault.write("long.md", f"---\nid: long\ntitle: Journal\n---\n{filler}Enfin la lune se lève.\n")
    service = vault.service()
    try:
        snippets = service.search("notes", "lune", NO_FILTER, 10).results[0].snippets
        assert [marked(s) for s in snippets] == [["lune"]]
    finally:
        service.stop()


def test_snippet_html_escapes_note_text(vault: Vault):
    # Markdown reduction drops raw HTML tags but keeps code verbatim: inline code and
    # a literal comparison are what reach the snippet.
    vault.write("x.md", "---\nid: xss\n---\nUn `<script>x</script>` piège : a < b & c.\n")
    service = vault.service()
    try:
        snippet = service.search("notes", "piège", NO_FILTER, 10).results[0].snippets[0]
        assert "<script>x</script>" in snippet.text
        assert "&lt;script&gt;x&lt;/script&gt;" in snippet.html
        assert "a &lt; b &amp; c" in snippet.html
        assert "<mark>piège</mark>" in snippet.html
        unmarked = snippet.html.replace("<mark>", "").replace("</mark>", "")
        assert "<" not in unmarked  # our tags are the only markup
        assert ">" not in unmarked
    finally:
        service.stop()


def test_a_note_without_body_shows_its_title(vault: Vault):
    vault.write("vide.md", "---\nid: vide\ntitle: Résilience opérationnelle\n---\n")
    for i in range(12):  # deep hits get their snippets later, through fusion: both paths
        vault.write(f"n{i}.md", f"---\nid: n{i}\n---\nrésilience {i}\n")
    service = vault.service()
    try:
        hits = {h.note.id: h for h in service.search("notes", "résilience", NO_FILTER, 20).results}
        (snippet,) = hits["vide"].snippets
        assert snippet.html == "<mark>Résilience</mark> opérationnelle"
    finally:
        service.stop()


def test_up_to_three_snippets_for_a_long_note(vault: Vault):
    filler = "Du texte sans rapport pour séparer les passages. " * 12
    body = f"Premier passage sur la lune. {filler} Deuxième passage sur la lune. {filler} Troisième lune. {filler} lune"
    vault.write("long.md", f"---\nid: long\n---\n{body}\n")
    service = vault.service()
    try:
        snippets = service.search("notes", "lune", NO_FILTER, 10).results[0].snippets
        assert 2 <= len(snippets) <= 3
        assert all(s.highlights for s in snippets)
        assert all(len(s.text) <= 210 for s in snippets)
    finally:
        service.stop()


def test_filters_folder_and_tags(vault: Vault):
    vault.write("projets/dora/a.md", "---\nid: a\ntags: [projet/dora]\n---\nrésilience numérique\n")
    vault.write("projets/b.md", "---\nid: b\ntags: [projet]\n---\nrésilience opérationnelle\n")
    vault.write("perso/c.md", "---\nid: c\n---\nrésilience personnelle #Santé\n")
    service = vault.service()
    try:
        search = service.search
        assert set(ids(search("notes", "résilience", FeedFilter(folder="projets"), 10))) == {"a", "b"}
        assert ids(search("notes", "résilience", FeedFilter(folder="projets/dora/"), 10)) == ["a"]
        assert set(ids(search("notes", "résilience", FeedFilter(tags=("projet",)), 10))) == {"a", "b"}
        assert ids(search("notes", "résilience", FeedFilter(tags=("#projet/dora",)), 10)) == ["a"]
        assert ids(search("notes", "résilience", FeedFilter(tags=("santé",)), 10)) == ["c"]
        assert ids(search("notes", "résilience", FeedFilter(folder="proj"), 10)) == []
    finally:
        service.stop()


def test_snippet_depth_and_no_snippets(service):
    from notarium_search.lexical import search as lexical

    index, ranking = service.spaces["notes"].lexical, service.settings.ranking
    bare = lexical.search(index, "interoperabilite", FeedFilter(), 10, ranking, with_snippets=False)
    assert bare.hits
    assert all(h.snippets == () and lexical.snippets_of(index, h) == () for h in bare.hits)
    shallow = lexical.search(index, "interoperabilite", FeedFilter(), 10, ranking, snippet_depth=1)
    assert len(shallow.hits) >= 2
    assert shallow.hits[0].snippets
    assert all(h.snippets == () for h in shallow.hits[1:])
    # Cut on demand, for the hits fusion keeps: the same as when cut at once.
    deep = lexical.search(index, "interoperabilite", FeedFilter(), 10, ranking)
    assert [lexical.snippets_of(index, h) for h in shallow.hits[1:]] == [h.snippets for h in deep.hits[1:]]


def _ranked(vault: Vault, space: str, query: str, **ranking: float) -> list[str]:
    service = vault.service(ranking=RankingConfig(**ranking))
    try:
        return ids(service.search(space, query, NO_FILTER, 10))
    finally:
        service.stop()


# Same stem, "élection" twice in a shorter note: plain BM25 puts that note first.
AS_WRITTEN = "---\nid: as-written\n---\nLes élections municipales auront lieu au printemps prochain.\n"
OTHER_FORM = "---\nid: other-form\n---\nUne élection, puis une autre élection.\n"


def test_french_word_found_as_written_ranks_above_another_form_of_it(vault: Vault):
    vault.write("a.md", AS_WRITTEN)
    vault.write("b.md", OTHER_FORM)
    assert _ranked(vault, "notes", "élections ", exact_form_boost=0) == ["other-form", "as-written"]
    assert _ranked(vault, "notes", "élections ") == ["as-written", "other-form"]  # French default 0.5
    assert _ranked(vault, "notes", "ELECTIONS ") == ["as-written", "other-form"]  # case and accents aside


def test_english_forms_weigh_alike_unless_configured(vault: Vault):
    vault.write("a.md", AS_WRITTEN.replace("Les élections municipales", "The local elections"), space="en-notes")
    vault.write("b.md", "---\nid: other-form\n---\nOne election, then another election.\n", space="en-notes")
    assert _ranked(vault, "en-notes", "elections ") == ["other-form", "as-written"]  # English default 0
    assert _ranked(vault, "en-notes", "elections ", exact_form_boost=0.5) == ["as-written", "other-form"]


def test_french_words_near_each_other_rank_above_the_same_words_apart(vault: Vault):
    vault.write("near.md", "---\nid: near\n---\nLe roi de France signa le traité de paix après la guerre.\n")
    vault.write("apart.md", "---\nid: apart\n---\nLe roi chassait au loin, la France attendait.\n")
    # Without proximity the shorter note comes first.
    assert _ranked(vault, "notes", "roi France ", proximity_boost=0) == ["apart", "near"]
    assert _ranked(vault, "notes", "roi France ") == ["near", "apart"]  # French default 0.25


def test_a_word_most_notes_hold_is_not_scored_as_written(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    # At two notes' scale: a space holds more than COMMON_WORD_MIN_NOTES notes.
    monkeypatch.setattr(query_words, "COMMON_WORD_MIN_NOTES", 0)
    vault.write("a.md", AS_WRITTEN)
    vault.write("b.md", OTHER_FORM)
    # "élections" as written: one note of two, more than the default share.
    assert _ranked(vault, "notes", "élections ") == ["other-form", "as-written"]  # as with exact_form_boost=0
    assert _ranked(vault, "notes", "élections ", form_max_share=0.5) == ["as-written", "other-form"]  # not more
    assert _ranked(vault, "notes", "élections ", form_max_share=1) == ["as-written", "other-form"]


def test_two_words_most_notes_hold_are_not_scored_near_each_other(vault: Vault, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(query_words, "COMMON_WORD_MIN_NOTES", 0)
    vault.write("near.md", "---\nid: near\n---\nLe roi de France signa le traité de paix après la guerre.\n")
    vault.write("apart.md", "---\nid: apart\n---\nLe roi chassait au loin, la France attendait.\n")
    for k in range(2):
        vault.write(f"other-{k}.md", f"---\nid: other-{k}\n---\nUn roi sans royaume, récit numéro {k}.\n")

    def order(**ranking: float) -> list[str]:
        return [i for i in _ranked(vault, "notes", "roi France ", **ranking) if i in {"near", "apart"}]

    # "roi" is in every note, "France" in half: the pair is still scored near...
    assert order(form_max_share=0.5) == ["near", "apart"]
    # ...unless both are in more than the share: then as without proximity.
    assert order(form_max_share=0.25) == order(proximity_boost=0, form_max_share=0.25) == ["apart", "near"]


def test_language_boosts_take_the_configured_value_over_the_language_default():
    assert language_boosts(RankingConfig(), "fr") == LANGUAGE_BOOSTS["fr"]
    assert language_boosts(RankingConfig(), "en") == LanguageBoosts(exact_form=0.0, proximity=0.0)
    configured = RankingConfig(exact_form_boost=0.0, proximity_boost=1.0)
    assert language_boosts(configured, "fr") == LanguageBoosts(exact_form=0.0, proximity=1.0)
