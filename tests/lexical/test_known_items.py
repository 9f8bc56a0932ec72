"""Known items (issue 29): a query that names a note brings that note first —
its file name, title, alias, id or path, folded; while typing, the shortest
name starting with the text — in every mode, over real Tantivy indexes."""

from __future__ import annotations

import pytest

from notarium_search.fusion import named_first, ranking
from notarium_search.lexical.analysis import analyzers
from notarium_search.lexical.known import NameQuery, name_key, note_names, rank
from notarium_search.lexical.query import plan_query
from notarium_search.settings import FusionConfig
from notarium_search.types import ChannelHit, ChannelResult, FeedFilter, KnownName
from tests.conftest import HashEmbedder, Vault, build_semantic, ids

NO_FILTER = FeedFilter()
# Notes whose words beat the named note on BM25: longer, the query's words repeated.
RICH = "Les espaces de travail partagés : chaque espace de travail a ses réglages. " * 6


@pytest.fixture
def named(vault: Vault) -> Vault:
    vault.write("Espace de travail.md", "Un seul écran.\n")
    vault.write("Espaces de travail.md", RICH)
    # The file name is not the title (the first heading gives it): searched anyway.
    vault.write("Accueil.md", "# Aide Obsidian\n\nBienvenue dans l'aide.\n")
    vault.write("Guide de style.md", "Écrire court.\n")
    vault.write("Traductions.md", "Le guide de style des traductions : guide, style, guide de style, style.\n" * 4)
    vault.write("Paramètres.md", "Les réglages.\n")
    vault.write("Paramètres de langue.md", "Paramètres, paramètres, paramètres de la langue.\n")
    vault.write("Réglages/Paramètres avancés.md", "Paramètres avancés, paramètres.\n" * 3)
    vault.write("zk/2024-01.md", "---\nid: zk-2024-01\ntitle: Une idée\naliases: [Mon idée fixe]\n---\nTexte.\n")
    vault.write("Rust book.md", "Le livre.\n")
    vault.write("rustc.md", "Le compilateur rust, rust, rust.\n")
    return vault


def first(service, query: str, **filters) -> str:
    found = ids(service.search("notes", query, FeedFilter(**filters), 10))
    return found[0] if found else ""


def test_the_exact_name_comes_first_over_notes_richer_in_its_words(named: Vault):
    service = named.service()
    try:
        assert first(service, "Espace de travail") == "Espace de travail.md"
        assert first(service, "Espaces de travail") == "Espaces de travail.md"
        assert first(service, "Guide de style") == "Guide de style.md"
        # Case, accents, punctuation and the .md suffix fold away.
        assert first(service, "guide-de-style.md") == "Guide de style.md"
        assert first(service, "PARAMETRES ") == "Paramètres.md"
        response = service.search("notes", "Espace de travail", NO_FILTER, 10)
        assert response.results[0].known == "file_name"
        assert all(hit.known is None for hit in response.results[1:])
    finally:
        service.stop()


def test_the_file_name_is_searched_when_the_title_is_another(named: Vault):
    service = named.service()
    try:
        response = service.search("notes", "Accueil", NO_FILTER, 10)
        assert response.results[0].note.title == "Aide Obsidian"
        assert response.results[0].known == "file_name"
        # Its words too, beside the title's, with a word finished (no name prefix).
        assert "Accueil.md" in ids(service.search("notes", "accueil obsidian ", NO_FILTER, 10))
    finally:
        service.stop()


def test_an_alias_an_id_and_a_path_name_their_note(named: Vault):
    service = named.service()
    try:
        assert first(service, "Mon idée fixe") == "zk-2024-01"
        assert first(service, "zk-2024-01") == "zk-2024-01"
        assert first(service, "zk/2024-01.md") == "zk-2024-01"
        assert service.search("notes", "mon idee fixe ", NO_FILTER, 10).results[0].known == "alias"
    finally:
        service.stop()


def test_as_you_type_the_shortest_name_starting_with_the_text_comes_first(named: Vault):
    service = named.service()
    try:
        # Notes that only contain "paramètres" (many times) come after.
        assert ids(service.search("notes", "Param", NO_FILTER, 10))[:3] == [
            "Paramètres.md",
            "Réglages/Paramètres avancés.md",
            "Paramètres de langue.md",
        ]
        assert first(service, "Paramètres de l") == "Paramètres de langue.md"
        hit = service.search("notes", "Paramètres de l", NO_FILTER, 10).results[0]
        assert hit.known == "file_name_prefix"
        # A finished word only goes on with a new word: "rust " is not "rustc".
        assert first(service, "rust ") == "Rust book.md"
        assert ids(service.search("notes", "rust", NO_FILTER, 10))[:2] == ["rustc.md", "Rust book.md"]
    finally:
        service.stop()


def test_exclusions_and_filters_hold_for_named_notes(named: Vault):
    service = named.service()
    try:
        assert "Guide de style.md" not in ids(service.search("notes", "Guide de style -court", NO_FILTER, 10))
        assert first(service, "Paramètres avancés", folder="Réglages") == "Réglages/Paramètres avancés.md"
        assert "Paramètres.md" not in ids(service.search("notes", "Paramètres", FeedFilter(folder="Réglages"), 10))
    finally:
        service.stop()


def test_shared_names_rank_as_wiki_links_resolve(vault: Vault):
    vault.write("Projets/Archives/Guide.md", "Ancien guide, guide, guide.\n")
    vault.write("Projets/Guide.md", "Le guide.\n")
    vault.write("Notes/Mode d'emploi.md", "---\ntitle: Guide\n---\nGuide, guide, guide, guide.\n")
    vault.write("Manuel.md", "---\naliases: [Guide]\n---\nGuide guide guide guide guide.\n")
    service = vault.service()
    try:
        found = service.search("notes", "Guide", NO_FILTER, 10).results
        assert [h.note.path for h in found[:4]] == [
            "Projets/Guide.md",  # file names first, the shortest path first
            "Projets/Archives/Guide.md",
            "Notes/Mode d'emploi.md",  # then a title
            "Manuel.md",  # then an alias
        ]
        assert [h.known for h in found[:4]] == ["file_name", "file_name", "title", "alias"]
    finally:
        service.stop()


def test_named_notes_stay_first_with_the_semantic_and_graph_channels(named: Vault):
    # Notes linking to the rich note make it the graph's favourite too.
    for n in range(3):
        named.write(f"lien-{n}.md", f"Voir [[Espaces de travail]] et encore espace de travail {n}.\n")
    service = named.service(vector_search=True, graph_boost=True)
    try:
        build_semantic(service, HashEmbedder())
        response = service.search("notes", "Espace de travail", NO_FILTER, 10)
        assert set(response.channels_used) == {"lexical", "semantic", "graph"}
        assert ids(response)[0] == "Espace de travail.md"
        assert response.results[0].known == "file_name"
    finally:
        service.stop()


def test_fusion_puts_named_notes_first_whatever_the_other_channels_say():
    def hit(note_id: str, score: float, known: KnownName | None = None) -> ChannelHit:
        return ChannelHit(None, score, (), note_id=note_id, known=known)

    exact = KnownName("title", (0, 2, 5, "b.md"))
    typed = KnownName("file_name_prefix", (1, 9, 1, 5, "c.md"))
    lexical = ChannelResult("lexical", (hit("b", 9.0, exact), hit("c", 9.0, typed), hit("a", 8.0)))
    semantic = ChannelResult("semantic", (hit("a", 0.9), hit("d", 0.8), hit("c", 0.7), hit("b", 0.1)))
    graph = ChannelResult("graph", (hit("a", 1.0), hit("d", 1.0)))
    fused = ranking([lexical, semantic, graph], FusionConfig())
    assert [entry.note_id for entry in fused] == ["b", "c", "a", "d"]
    rest = sorted(fused[2:], key=lambda f: f.note_id != "d")  # the others keep the order given
    assert named_first(list(reversed(fused)), [lexical]) == fused[:2] + rest


def test_names_fold_and_rank_by_level():
    assert name_key("  Guide-de-Style.MD ") == "guide de style"
    assert name_key("Cœur & Âme") == "coeur ame"
    names = note_names("zk-1", "a/Guide.md", "Guide", ("guide", "Autre"))
    assert names == {"a guide": "path", "guide": "file_name", "autre": "alias", "zk 1": "id"}
    wanted = NameQuery.of("Gui", plan_query("Gui", analyzers("fr")))
    assert wanted is not None
    assert wanted.typing
    assert rank(wanted, names, "a/Guide.md") == KnownName("file_name_prefix", (1, 5, 1, 10, "a/Guide.md"))
    assert NameQuery.of("-x", plan_query("-x", analyzers("fr"))) is None


def test_a_heading_typed_as_is_brings_its_note_next(vault: Vault):
    """A heading names a place (`[[note#heading]]`): its note comes after the
    notes the query names, and the hit opens there; a heading many notes
    share names no place in particular."""
    vault.write(
        "Aide/Gérer les notes.md",
        "# Gérer les notes\n\n## Renommer une note\n\nRenommer.\n\n## Supprimer une note\n\nLa corbeille.\n",
    )
    # Another note's name holds the words, more often: by its words it came first.
    vault.write("Dossier partagé, supprimer une note.md", "Supprimer une note, supprimer une note.\n")
    # A name starting with the text is a name: it comes before a heading.
    vault.write("Supprimer une note et ses liens.md", "Les liens.\n")
    for n in range(4):
        vault.write(f"Journal/jour-{n}.md", f"# Jour {n}\n\n## Sources\n\nRien {n}.\n")
    vault.write("Sources.md", "La note des sources.\n")
    service = vault.service()
    try:
        found = service.search("notes", "Supprimer une note", NO_FILTER, 10).results
        assert [h.note.path for h in found[:3]] == [
            "Supprimer une note et ses liens.md",
            "Aide/Gérer les notes.md",
            "Dossier partagé, supprimer une note.md",
        ]
        hit = found[1]
        assert hit.known == "heading"
        placed = hit.placed()
        assert placed is not None
        assert placed.heading[-1] == "Supprimer une note"
        # A name beats a heading; five notes share "Sources": it names no place.
        found = service.search("notes", "Sources", NO_FILTER, 10).results
        assert found[0].note.path == "Sources.md"
        assert [h.known for h in found[1:]] == [None] * (len(found) - 1)
    finally:
        service.stop()


def test_a_name_typed_in_another_order_or_with_a_word_missing_is_near_the_top(vault: Vault):
    vault.write("Guide de style.md", "Écrire court.\n")
    vault.write("Traductions.md", "Un style pour chaque langue ; ce guide aide. Le style, le guide.\n" * 3)
    for n in range(20):
        vault.write(f"n{n}.md", f"Le style numéro {n}, un guide {n}.\n")
    vault.write("Espace de travail partagé.md", "Un écran.\n")
    vault.write("Écrans.md", "Chaque espace a son travail ; un espace, un travail partagé.\n" * 3)
    service = vault.service()
    try:
        assert first(service, "style guide ") == "Guide de style.md"
        assert first(service, "style guide") == "Guide de style.md"  # "guide" typed whole
        assert "Espace de travail partagé.md" in ids(service.search("notes", "travail espace ", NO_FILTER, 10))[:3]
        assert first(service, "partagé espace travail ") == "Espace de travail partagé.md"
    finally:
        service.stop()


def test_names_of_deleted_notes_do_not_crowd_out_live_ones(tmp_path):
    """The term dictionary keeps a deleted note's names until segments merge:
    the notes listed for a name's start must be a fresh index's."""
    (tmp_path / "lived").mkdir()
    (tmp_path / "fresh").mkdir()
    lived, fresh = Vault(tmp_path / "lived"), Vault(tmp_path / "fresh")
    for n in range(200):
        lived.write(f"dossier/n{n:04}.md", f"Note {n}.\n")
    service = lived.service()
    for n in range(0, 120, 2):  # the first names, in the order they are taken
        lived.remove(f"dossier/n{n:04}.md")
    for n in [*range(1, 120, 2), *range(120, 200)]:
        fresh.write(f"dossier/n{n:04}.md", f"Note {n}.\n")
    other = fresh.service()
    try:
        for space in service.spaces.values():
            space.writing.run_reconcile()
        assert service.spaces["notes"].lexical.searcher().doc_freq("names", "dossier n0000") == 1  # still there
        found = ids(service.search("notes", "dossier", NO_FILTER, 100))
        assert len(found) == 50  # PREFIX_NAMES
        assert found == ids(other.search("notes", "dossier", NO_FILTER, 100))
    finally:
        service.stop()
        other.stop()


def test_one_letter_lists_the_shortest_names_starting_with_it(named: Vault):
    service = named.service()
    try:
        found = service.search("notes", "P", NO_FILTER, 10).results
        assert [h.note.path for h in found[:2]] == ["Paramètres.md", "Réglages/Paramètres avancés.md"]
        assert found[0].known == "file_name_prefix"
    finally:
        service.stop()
