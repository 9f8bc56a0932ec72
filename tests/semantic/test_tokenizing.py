"""The tokenizer routes (semantic/tokenizing.py): SentencePiece must give the
ids `tokenizers` gives for the same tokenizer.json, on real collections and
on hostile text, and anything it does not reproduce goes to `tokenizers`."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sentencepiece

from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.tokenizing import HubTokenizer, PieceTokenizer, TextTokenizer, open_tokenizer
from tests.conftest import models_dir
from tests.test_quality import collection

E5 = "multilingual-e5-small-int8"
MINILM = "all-minilm-l6-v2-int8"
MAX_TOKENS = 512
HOSTILE = [
    "",
    " ",
    "  a  b  ",
    "\ta\n\nb\r\n",
    "a\x00b",
    "\x01\x02x\x7f\x8f",
    "<s>hello</s>",
    " <mask> x",
    "x<mask>",
    "a  <mask>",
    "<pad><unk><s></s>",
    "<<s>>",
    "ﬁ ligature ①②③ ｆｕｌｌ",
    "e\u0301 combining, Å, ǅ",
    "emoji 🤖🫠 👩‍👩‍👧 ✌🏽 ❤️ 𝔘𝔫𝔦",
    "漢字かなカナ 한국어 ᄒᆞᆫ ไทย العربية हिन्दी",
    "▁lit▁eral ▁",
    "\u200b\u200czero\u200d",
    "\ufeffbom",
    "\u3000ideographic space",
    "\u2028line\u2029para\u1680ogham",
    "\u00a0nbsp\u00a0 \u202fnarrow",
    "\ufffd replacement",
    "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇",
    "query: Café, crème brûlée & l'œuvre — «guillemets» 12:30 arXiv:2104.08663 C:\\temp",
    "mot " * 800,  # past max_tokens: truncated, specials kept
]


def e5_tokenizer_json() -> Path:
    path = models_dir() / E5 / "tokenizer.json"
    assert path.is_file(), path
    return path


def collection_texts() -> Iterator[str]:
    """Every passage and question of both evaluation collections, and their
    no-answer queries (made-up words, everyday questions)."""
    for name in ("piaf-fr", "cranfield"):
        folder = collection(name)
        for file in (folder / "corpus.jsonl", folder / "queries.jsonl", folder.parent / "noanswer" / f"{name}.jsonl"):
            for line in file.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                yield from (value for key, value in record.items() if key != "id" and isinstance(value, str))


def ids(tokenizer: TextTokenizer, texts: list[str]) -> list[list[int]]:
    return [list(encoding.ids) for encoding in tokenizer.encode_batch(texts)]


def assert_same_ids(path: Path, texts: list[str]) -> None:
    piece = open_tokenizer(path, MAX_TOKENS)
    assert isinstance(piece, PieceTokenizer)
    hub = HubTokenizer.load(path, MAX_TOKENS)
    expected, got = ids(hub, texts), ids(piece, texts)
    different = [(text[:60], e[:12], g[:12]) for text, e, g in zip(texts, expected, got, strict=True) if e != g]
    assert not different, different[:5]
    assert piece.pad_id() == hub.pad_id() == 1


@pytest.mark.slow
def test_the_e5_vocabulary_gives_the_same_ids_through_sentencepiece() -> None:
    """8,800 passages and questions in French and English, and hostile text:
    control characters, special tokens typed in a note, spaces of every kind,
    combining marks, scripts, truncation."""
    texts = [*collection_texts(), *HOSTILE, *(prefix + text for prefix in ("query: ", "passage: ") for text in HOSTILE)]
    assert len(texts) > 8_800
    assert_same_ids(e5_tokenizer_json(), texts)


def nmt_nfkc_charsmap() -> bytes:
    """SentencePiece's own NFKC character map, as a model trained with it
    carries (and as the Hugging Face hub's XLM-R tokenizer.json files embed)."""
    model = io.BytesIO()
    words = ["hello world café", "bonjour le monde", "xyz abc def ghi"] * 100
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(words),
        model_writer=model,
        vocab_size=25,
        model_type="unigram",
        normalization_rule_name="nmt_nfkc",
        minloglevel=2,
    )
    from sentencepiece import sentencepiece_model_pb2

    messages: Any = sentencepiece_model_pb2
    proto = messages.ModelProto()
    proto.ParseFromString(model.getvalue())
    charsmap: bytes = proto.normalizer_spec.precompiled_charsmap
    return charsmap


@pytest.mark.slow
def test_the_hub_form_with_a_precompiled_character_map_gives_the_same_ids(tmp_path: Path) -> None:
    """The packs `models download` fetches hold the converter's normalizer
    (SentencePiece's character map, then runs of spaces made one) instead of
    the shared pack's explicit steps."""
    description = json.loads(e5_tokenizer_json().read_text(encoding="utf-8"))
    description["normalizer"] = {
        "type": "Sequence",
        "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(nmt_nfkc_charsmap()).decode()},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ],
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(description, ensure_ascii=False), encoding="utf-8")
    texts = [*list(collection_texts())[::7], *HOSTILE]
    assert_same_ids(path, texts)


def altered(change: str) -> dict[str, Any]:
    changed: dict[str, Any] = json.loads(e5_tokenizer_json().read_text(encoding="utf-8"))  # a fresh copy
    if change == "normalizer":
        changed["normalizer"]["normalizers"].append({"type": "Lowercase"})
    elif change == "pre_tokenizer":
        changed["pre_tokenizer"] = {"type": "Whitespace"}
    elif change == "prepend":
        changed["pre_tokenizer"]["prepend_scheme"] = "first"
    elif change == "byte_fallback":
        changed["model"]["byte_fallback"] = True
    elif change == "added_token":
        changed["added_tokens"][-1]["rstrip"] = True
    elif change == "post_processor":
        changed["post_processor"] = {"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}
    return changed


@pytest.mark.parametrize(
    "change", ["normalizer", "pre_tokenizer", "prepend", "byte_fallback", "added_token", "post_processor"]
)
def test_a_step_not_reproduced_sends_the_pack_to_tokenizers(change: str, tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(altered(change), ensure_ascii=False), encoding="utf-8")
    assert isinstance(open_tokenizer(path, MAX_TOKENS), HubTokenizer)


def test_a_wordpiece_pack_stays_on_tokenizers() -> None:
    assert isinstance(open_tokenizer(models_dir() / MINILM / "tokenizer.json", 256), HubTokenizer)


@pytest.mark.slow
def test_the_loaded_e5_embedder_tokenizes_through_sentencepiece() -> None:
    """The embedder takes the route (and its vectors match `tokenizers`' ids:
    the same ids give the same vectors, so the test of ids above covers them)."""
    embedder = load_embedder(models_dir() / E5, bulk_threads=1)
    assert embedder.tokenizer_name == "sentencepiece"
    assert load_embedder(models_dir() / MINILM, bulk_threads=1).tokenizer_name == "tokenizers"
