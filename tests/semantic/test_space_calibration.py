"""The relevance floor calibrated against the space's own notes (issue 29,
item 4; semantic/probes.py): what made-up words score against this space's
fragments is measured when its vectors are built, kept in the vector
manifest, and raises the floor where the model's margin is too low for it.
Real Tantivy, real usearch, the real MiniLM pack (a deterministic hash
embedder where only the refresh policy is tested)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.index import SemanticIndex
from notarium_search.semantic.probes import PROBES, REFRESH_SHARE, Calibration, measured
from notarium_search.semantic.reference import REFERENCE_PASSAGES
from notarium_search.service import Service
from notarium_search.types import FeedFilter
from tests.conftest import HashEmbedder, Vault, build_semantic, ids
from tests.semantic.test_calibration import pack_copy

NO_FILTER = FeedFilter()
PATIENT_MS = 60_000
SPACE = "en-notes"
# A margin far too low for this space: what a margin measured on other
# collections is for a space unlike them (a drug and gene glossary, where
# made-up words land near real names).
LOW_MARGIN = 0.01
GLOSSARY = {
    "methylphenidate": "Methylphenidate is a stimulant that treats attention deficit hyperactivity disorder.",
    "brca1": "The BRCA1 gene encodes a tumour suppressor protein that repairs damaged DNA.",
    "ibuprofen": "Ibuprofen is a nonsteroidal anti-inflammatory drug that relieves pain and fever.",
    "amoxicillin": "Amoxicillin is a penicillin antibiotic against bacterial infections of the ear and lungs.",
    "atorvastatin": "Atorvastatin is a statin that lowers cholesterol and the risk of heart attacks.",
    "tp53": "TP53 codes for the p53 protein, which halts the cell cycle when DNA is damaged.",
    "haemoglobin": "Haemoglobin carries oxygen from the lungs to the tissues in red blood cells.",
    "dopamine": "Dopamine is a neurotransmitter of the reward pathway, made in the substantia nigra.",
    "crispr": "CRISPR-Cas9 edits genomes by cutting DNA where a guide RNA matches it.",
    "insulin": "Insulin, a peptide hormone of the pancreas, lets cells take up glucose from the blood.",
    "warfarin": "Warfarin is an anticoagulant that blocks vitamin K epoxide reductase.",
    "myosin": "Myosin motor proteins pull on actin filaments to contract muscle fibres.",
}


def write_glossary(vault: Vault) -> None:
    for note_id, text in GLOSSARY.items():
        vault.write(f"{note_id}.md", f"---\nid: {note_id}\ntitle: {note_id.capitalize()}\n---\n{text}\n", space=SPACE)


@pytest.fixture
def glossary(vault: Vault, tmp_path: Path) -> tuple[Vault, Path]:
    """The glossary, and a MiniLM pack whose margin does not fit it."""
    write_glossary(vault)
    return vault, pack_copy(tmp_path / "pack", relevance_margin=LOW_MARGIN, name="minilm-low-margin")


def built(vault: Vault, pack: Path) -> Service:
    service = vault.service(vector_search=True, query_embed_timeout_ms=PATIENT_MS)
    build_semantic(service, load_embedder(pack))
    return service


def index_of(service: Service) -> SemanticIndex:
    semantic = service.spaces[SPACE].semantic
    assert semantic is not None
    assert semantic.index is not None
    return semantic.index


def test_a_space_measures_what_made_up_words_score_against_it_and_keeps_it(glossary: tuple[Vault, Path]):
    vault, pack = glossary
    service = built(vault, pack)
    try:
        index = index_of(service)
        saved = json.loads((index.directory / "vectors.json").read_text(encoding="utf-8"))["calibration"]
        assert saved["vectors"] == index.size() == len(GLOSSARY)
        assert len(saved["excess"]) == PROBES
        assert saved["excess"] == sorted(saved["excess"])
        # Noise reaches far above this model margin here: the space's own margin rules.
        assert index.margin() == Calibration(**saved).margin() > LOW_MARGIN
        semantic = service.spaces[SPACE].semantic
        assert semantic is not None
        assert semantic.status().relevance_margin == index.margin()  # what /status shows
    finally:
        service.stop()


def test_the_floor_follows_the_space_not_only_the_model(glossary: tuple[Vault, Path]):
    vault, pack = glossary
    service = built(vault, pack)
    try:
        # A made-up word cut into sub-word pieces lands near a drug name; at the
        # model's margin alone its nearest notes were listed.
        response = service.search(SPACE, "pifevonimp", NO_FILTER, 10)
        assert response.results == ()
        assert "this space needs" in response.caveats["semantic"]
        # A real question, no word of which is in the note, still finds it by meaning.
        question = service.search(SPACE, "medicine for children who cannot concentrate", NO_FILTER, 10)
        assert ids(question)[0] == "methylphenidate"
        assert question.results[0].channels == {"semantic": 1}
    finally:
        service.stop()


class CountingEmbedder:
    """The real embedder, counting the passages it embeds."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.passages = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed_passages(self, texts):
        self.passages += len(texts)
        return self.inner.embed_passages(texts)  # type: ignore[attr-defined]


def test_a_vector_file_without_calibration_answers_at_the_model_margin_then_gets_one(glossary: tuple[Vault, Path]):
    vault, pack = glossary
    first = built(vault, pack)
    manifest = index_of(first).directory / "vectors.json"
    first.stop()
    saved = json.loads(manifest.read_text(encoding="utf-8"))
    del saved["calibration"]  # as written before calibrations existed
    manifest.write_text(json.dumps(saved), encoding="utf-8")
    embedder = load_embedder(pack)
    # A reader (a worker following the writer) answers at the model's margin, never an error.
    reader = SemanticIndex(manifest.parent, embedder, read_only=True)
    assert reader.size() == len(GLOSSARY)
    assert reader.calibration is None
    assert reader.margin() == LOW_MARGIN
    assert reader.search(embedder.embed_query("blood sugar hormone"), 1)[0][0] == "insulin"
    # The writer measures it at its next start, without embedding a passage again.
    counting = CountingEmbedder(embedder)
    service = vault.service(vector_search=True, query_embed_timeout_ms=PATIENT_MS)
    try:
        build_semantic(service, counting)
        assert counting.passages == len(REFERENCE_PASSAGES)  # those only: no fragment embedded again
        assert json.loads(manifest.read_text(encoding="utf-8"))["calibration"]["vectors"] == len(GLOSSARY)
        margin = index_of(service).margin()
        assert margin is not None
        assert margin > LOW_MARGIN
    finally:
        service.stop()


class MarginHashEmbedder(HashEmbedder):
    """The hash embedder with a relevance margin: the floor, and so the calibration, apply."""

    def __init__(self) -> None:
        super().__init__()
        self._config = replace(self._config, relevance_margin=0.1)
        self.queries = 0

    def embed_query(self, text: str):
        self.queries += 1
        return super().embed_query(text)


def test_a_space_grown_note_by_note_is_calibrated_again_only_when_it_has_grown_by_a_quarter(vault: Vault):
    for number in range(8):
        vault.write(f"n{number}.md", f"---\nid: n{number}\n---\nalpha{number} beta{number} gamma\n", space=SPACE)
    service = vault.service(vector_search=True)
    embedder = MarginHashEmbedder()
    try:
        build_semantic(service, embedder)
        space = service.spaces[SPACE]
        semantic = space.semantic
        assert semantic is not None
        assert semantic.index is not None
        first = semantic.index.calibration
        assert first is not None
        assert first.vectors == 8
        measured_at = [first.vectors]
        for number in range(8, 40):
            vault.write(f"n{number}.md", f"---\nid: n{number}\n---\nalpha{number} beta{number} gamma\n", space=SPACE)
            space.writing.run_reconcile()
            while semantic.has_work:
                semantic.work_slice()
            calibration = semantic.index.calibration
            assert calibration is not None
            if calibration.vectors != measured_at[-1]:
                measured_at.append(calibration.vectors)
            # Never further from the space than the refresh share.
            assert semantic.index.size() <= (1 + REFRESH_SHARE) * calibration.vectors + 1
        assert semantic.index.size() == 40
        # 32 notes added one by one: measured again 6 times (8 → 11 → 14 → 18 → 23 → 29 → 37), not 32.
        assert len(measured_at) <= 8
        assert embedder.queries <= PROBES * len(measured_at)
    finally:
        service.stop()


def test_a_calibration_is_stale_after_the_space_moved_by_a_quarter_or_the_rule_changed():
    calibration = measured(100, [0.2, 0.1, 0.3])
    assert calibration.excess == (0.1, 0.2, 0.3)
    assert not calibration.stale(120)
    assert calibration.stale(126)
    assert calibration.stale(74)
    assert msgspec.structs.replace(calibration, version=0).stale(100)
