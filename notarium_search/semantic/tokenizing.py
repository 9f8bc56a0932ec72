"""Turning texts into the model's token ids, with as little memory as the
vocabulary allows.

A pack's `tokenizer.json` is read by Hugging Face `tokenizers`, except when
it describes a SentencePiece unigram model of the shape XLM-R's family uses
(multilingual-e5, bge-m3, paraphrase-multilingual): then the same vocabulary
is handed to the `sentencepiece` library, which stores it in a double-array
trie. Measured on multilingual-e5-small's 250,002-entry vocabulary (2 cores,
2026-12-01): `tokenizers` holds **286 MiB** once loaded (a tree of per-character
hash maps), `sentencepiece` **45 MiB**, for the same ids. That was most of the
service's memory beyond the model itself (docs/models.md).

The two give the same ids only when everything around the unigram model is
reproduced: the normalizer's steps (run here, in order), the word split on
spaces with `▁` in front of each word (SentencePiece's own dummy prefix and
whitespace escaping), the special tokens written in the text (`<s>`, `<mask>`:
matched before normalisation, as `tokenizers` does), the template that wraps
the pieces (`<s> … </s>`) and truncation. Any step this module does not know
sends the pack to `tokenizers` instead, so an unusual pack costs memory, never
different vectors. tests/semantic/test_tokenizing.py compares both on the
evaluation collections and on hostile text.
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from notarium_search.logsetup import get_logger

log = get_logger(__name__)

METASPACE = "\u2581"
# The pad token, tried in order: the BERT and the SentencePiece (XLM-R, E5,
# BGE-M3) spellings.
PAD_TOKENS = ("[PAD]", "<pad>")
UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")


class Tokens(NamedTuple):
    """One text's ids, special tokens included."""

    ids: list[int]


class HasIds(Protocol):
    @property
    def ids(self) -> list[int]: ...


class TextTokenizer(Protocol):
    """What the embedder needs from a tokenizer."""

    name: str
    """`tokenizers` or `sentencepiece`: which library holds the vocabulary."""

    def encode_batch(self, texts: list[str]) -> Sequence[HasIds]: ...

    def pad_id(self) -> int: ...


class Unsupported(ValueError):
    """tokenizer.json holds a step this module does not reproduce."""


def open_tokenizer(path: Path, max_tokens: int) -> TextTokenizer:
    """The pack's tokenizer: SentencePiece when the file is a unigram model of
    a shape reproduced here, `tokenizers` otherwise (logged with the reason).
    Raises what the loaders raise for an unreadable file (the caller words it)."""
    description = json.loads(path.read_text(encoding="utf-8"))
    try:
        plan = UnigramPlan.read(description)
        tokenizer: TextTokenizer = PieceTokenizer(plan, description["model"]["vocab"], max_tokens)
    except Unsupported as exc:
        log.debug("tokenizer_loaded", loader=HubTokenizer.name, path=str(path), why=str(exc))
        return HubTokenizer.load(path, max_tokens)
    log.debug("tokenizer_loaded", loader=tokenizer.name, path=str(path))
    return tokenizer


# ---------------------------------------------------------------- tokenizers


class HubTokenizer:
    """Hugging Face `tokenizers`, for every pack the other route does not take."""

    name = "tokenizers"

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    @classmethod
    def load(cls, path: Path, max_tokens: int) -> HubTokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.enable_truncation(max_length=max_tokens)
        # Batches are padded by the embedder to their longest text: the stored
        # settings of some packs pad every text to a fixed 128 tokens.
        tokenizer.no_padding()
        return cls(tokenizer)

    def encode_batch(self, texts: list[str]) -> Sequence[HasIds]:
        encodings: Sequence[HasIds] = self._tokenizer.encode_batch(texts)
        return encodings

    def pad_id(self) -> int:
        for token in PAD_TOKENS:
            token_id = self._tokenizer.token_to_id(token)
            if token_id is not None:
                return int(token_id)
        # Padded positions are masked out of attention and pooling, so any id
        # gives the same vectors; 0 exists in every vocabulary.
        return 0


# ---------------------------------------------------------------- sentencepiece


@dataclass(frozen=True)
class Special:
    """A special token as `tokenizers` finds it in raw text."""

    content: str
    id: int
    lstrip: bool


@dataclass(frozen=True)
class UnigramPlan:
    """What tokenizer.json asks for around its unigram model, checked to be
    reproducible: normalizer steps, the special tokens matched in text, the
    ids put before and after the pieces."""

    normalize: tuple[Callable[[str], str], ...]
    specials: tuple[Special, ...]
    unk_id: int
    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    pad: int

    @classmethod
    def read(cls, description: dict[str, Any]) -> UnigramPlan:
        model = description.get("model") or {}
        if model.get("type") != "Unigram" or model.get("byte_fallback"):
            raise Unsupported(f"model {model.get('type')} (only a unigram model without byte fallback)")
        _check_metaspace(description.get("pre_tokenizer"))
        vocab = model["vocab"]
        if any(METASPACE in piece[1:] for piece, _ in vocab):
            raise Unsupported("a piece spans two words: the split on spaces would change it")
        specials = _specials(description.get("added_tokens") or [], len(vocab))
        prefix, suffix = _template(description.get("post_processor"), {s.content: s.id for s in specials})
        pad = next((s.id for s in specials if s.content in PAD_TOKENS), 0)
        return cls(
            normalize=_normalizer_steps(description.get("normalizer")),
            specials=specials,
            unk_id=int(model["unk_id"]),
            prefix=prefix,
            suffix=suffix,
            pad=pad,
        )


class PieceTokenizer:
    """The unigram vocabulary in SentencePiece, wrapped to give the ids
    `tokenizers` gives for the same tokenizer.json."""

    name = "sentencepiece"

    def __init__(self, plan: UnigramPlan, vocab: list[list[Any]], max_tokens: int) -> None:
        try:
            import sentencepiece
        except ImportError as exc:  # an install without it: the pack costs more memory, nothing else
            raise Unsupported("sentencepiece is not installed") from exc

        self._plan = plan
        self._processor = sentencepiece.SentencePieceProcessor(
            model_proto=_model_proto(vocab, plan.unk_id, {s.id for s in plan.specials})
        )
        self._room = max(0, max_tokens - len(plan.prefix) - len(plan.suffix))
        self._split = _special_splitter(plan.specials)

    def encode_batch(self, texts: list[str]) -> Sequence[HasIds]:
        return [self._encode(text) for text in texts]

    def pad_id(self) -> int:
        return self._plan.pad

    def _encode(self, text: str) -> Tokens:
        ids: list[int] = []
        for segment, special in self._segments(text):
            if special is not None:
                ids.append(special)
                continue
            for step in self._plan.normalize:
                segment = step(segment)
            if segment:
                # Metaspace puts a `▁` before the text unless it starts with one.
                ids.extend(self._processor.encode(segment if segment.startswith(" ") else " " + segment))
        return Tokens([*self._plan.prefix, *ids[: self._room], *self._plan.suffix])

    def _segments(self, text: str) -> list[tuple[str, int | None]]:
        """The text cut around the special tokens written in it."""
        if self._split is None:
            return [(text, None)]
        segments: list[tuple[str, int | None]] = []
        position = 0
        for match in self._split.finditer(text):
            if match.start() > position:
                segments.append((text[position : match.start()], None))
            segments.append(("", self._plan.specials[int(str(match.lastgroup)[1:])].id))
            position = match.end()
        if position < len(text):
            segments.append((text[position:], None))
        return segments


def _model_proto(vocab: list[list[Any]], unk_id: int, control: set[int]) -> bytes:
    """The vocabulary as a SentencePiece model: no normalisation of its own
    (the plan's steps run before) and a `▁` for each space, the one in front
    included (added by the caller, as Metaspace does)."""
    model_pb2 = _model_messages()
    proto = model_pb2.ModelProto()
    kinds = model_pb2.ModelProto.SentencePiece
    for index, (piece, score) in enumerate(vocab):
        entry = proto.pieces.add()
        entry.piece = piece
        entry.score = float(score)
        entry.type = kinds.UNKNOWN if index == unk_id else kinds.CONTROL if index in control else kinds.NORMAL
    proto.trainer_spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    proto.trainer_spec.unk_id = unk_id
    proto.trainer_spec.bos_id = proto.trainer_spec.eos_id = proto.trainer_spec.pad_id = -1
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = False
    proto.normalizer_spec.remove_extra_whitespaces = False
    proto.normalizer_spec.escape_whitespaces = True
    serialized: bytes = proto.SerializeToString()
    return serialized


def _model_messages() -> Any:
    """SentencePiece's protobuf messages (generated code: no types to check)."""
    from sentencepiece import sentencepiece_model_pb2

    return sentencepiece_model_pb2


def _check_metaspace(pre_tokenizer: dict[str, Any] | None) -> None:
    if not pre_tokenizer or pre_tokenizer.get("type") != "Metaspace":
        raise Unsupported(f"pre-tokenizer {pre_tokenizer and pre_tokenizer.get('type')} (only Metaspace)")
    prepends = pre_tokenizer.get("prepend_scheme", "always" if pre_tokenizer.get("add_prefix_space") else None)
    if pre_tokenizer.get("replacement") != METASPACE or prepends != "always" or not pre_tokenizer.get("split", True):
        raise Unsupported("Metaspace without a ▁ before every word")


def _normalizer_steps(normalizer: dict[str, Any] | None) -> tuple[Callable[[str], str], ...]:
    if normalizer is None:
        return ()
    if normalizer.get("type") == "Sequence":
        return tuple(step for part in normalizer["normalizers"] for step in _normalizer_steps(part))
    kind = normalizer.get("type")
    if kind in UNICODE_FORMS:
        form = kind
        return (lambda text: unicodedata.normalize(form, text),)
    if kind == "Replace":
        pattern = normalizer["pattern"]
        content = str(normalizer["content"])
        if "String" in pattern:
            literal = str(pattern["String"])
            return (lambda text: text.replace(literal, content),)
        compiled = re.compile(str(pattern["Regex"]))
        return (lambda text: compiled.sub(lambda _: content, text),)
    if kind == "Precompiled":
        return (_precompiled(base64.b64decode(normalizer["precompiled_charsmap"])),)
    raise Unsupported(f"normalizer {kind}")


def _precompiled(charsmap: bytes) -> Callable[[str], str]:
    """SentencePiece's own character map (what `tokenizers`' Precompiled
    normalizer ports), applied by SentencePiece and nothing else."""
    try:
        import sentencepiece

        model_pb2 = _model_messages()
    except ImportError as exc:
        raise Unsupported("sentencepiece is not installed") from exc
    spec = model_pb2.NormalizerSpec(
        name="precompiled",
        precompiled_charsmap=charsmap,
        add_dummy_prefix=False,
        remove_extra_whitespaces=False,
        escape_whitespaces=False,
    )
    normalizer = sentencepiece.SentencePieceNormalizer(normalizer_spec=spec.SerializeToString())

    def normalize(text: str) -> str:
        normalized: str = normalizer.normalize(text)
        return normalized

    return normalize


def _specials(added: list[dict[str, Any]], vocab_size: int) -> tuple[Special, ...]:
    specials = []
    for token in added:
        if not token.get("special") or token.get("normalized") or token.get("single_word") or token.get("rstrip"):
            raise Unsupported(f"added token {token.get('content')!r} matched in a way not reproduced here")
        if not 0 <= int(token["id"]) < vocab_size:
            raise Unsupported(f"added token {token.get('content')!r} outside the vocabulary")
        specials.append(Special(str(token["content"]), int(token["id"]), bool(token.get("lstrip"))))
    return tuple(specials)


def _template(processor: dict[str, Any] | None, specials: dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids before and after a single text's pieces."""
    if processor is None:
        return (), ()
    if processor.get("type") != "TemplateProcessing":
        raise Unsupported(f"post-processor {processor.get('type')} (only TemplateProcessing)")
    before: list[int] = []
    after: list[int] = []
    seen_text = False
    for item in processor["single"]:
        if "Sequence" in item:
            if seen_text or item["Sequence"]["id"] != "A":
                raise Unsupported("a template with more than one text")
            seen_text = True
        elif item["SpecialToken"]["id"] in specials:
            (after if seen_text else before).append(specials[item["SpecialToken"]["id"]])
        else:
            raise Unsupported(f"template token {item['SpecialToken']['id']!r} is not an added token")
    return tuple(before), tuple(after)


def _special_splitter(specials: tuple[Special, ...]) -> re.Pattern[str] | None:
    """Finds the special tokens in raw text, longest first (as `tokenizers`'
    matcher does); an `lstrip` token takes the whitespace before it."""
    if not specials:
        return None
    alternatives = [
        (r"\s*" if special.lstrip else "") + f"(?P<t{index}>{re.escape(special.content)})"
        for index, special in sorted(enumerate(specials), key=lambda pair: -len(pair[1].content))
    ]
    return re.compile("|".join(alternatives))
