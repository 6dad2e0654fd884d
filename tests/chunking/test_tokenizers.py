"""``encoding=`` with the model's own tokenizer: a HuggingFace ``tokenizers.Tokenizer``,
a ``tokenizer.json`` path, or any object with ``encode``.

The tokenizers are trained here on ``corpora/`` (nothing is downloaded), and every
invariant is checked against the tokenizer itself, not tiktoken.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import regex
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from sdk import count_tokens
from sdk.chunking import Chunk, Chunker, chunk

CORPORA = Path(__file__).resolve().parent.parent.parent / "corpora"

FILES = [
    ("code", "shapes.py"),
    ("code", "server.go"),
    ("prose", "en_harbor_log_longform.txt"),
    ("prose", "ja_essay.txt"),
    ("prose", "zh_hans_long_paragraph.txt"),
    ("prose", "emoji_sequences.txt"),
    ("prose", "combining_latin_vietnamese_nfd.txt"),
    ("json", "cjk_product.json"),
    ("json", "embedded_escapes.json"),
    ("jsonl", "chat_turns.jsonl"),
    ("markdown", "ja_readme.md"),
    ("markdown", "zh_rate_limiter_article.md"),
]
BUDGETS = (16, 64, 256)
_GRAPHEME = regex.compile(r"\X")
_KINSOKU_TAIL = regex.compile(r"[\p{P}ーぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ]*")


def _training_text() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*/*")) if p.is_file()]


@pytest.fixture(scope="module")
def bpe() -> Tokenizer:
    """A byte-level BPE (GPT-2/Llama 3 style): any text encodes, no unknown token."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>", "</s>"],
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer=trainer)
    # A template adding specials: the SDK must count without them.
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)]
    )
    return tok


@pytest.fixture(scope="module")
def wordpiece() -> Tokenizer:
    """A BERT-style WordPiece: a normalizer (NFD, lowercase), whitespace dropped, [UNK]."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(_training_text(), trainer=trainer)
    return tok


def _count(tok: Tokenizer, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False).ids)


def check_with(tok: Tokenizer, text: str, chunks: list[Chunk], max_tokens: int) -> None:
    """Tiling, exact counts in ``tok``, budgets, and no cut inside a grapheme cluster."""
    assert "".join(c.text for c in chunks) == text
    starts = {m.start() for m in _GRAPHEME.finditer(text)} | {len(text)}
    pos = byte = 0
    for c in chunks:
        assert c.start == pos and c.end > c.start
        assert text[c.start : c.end] == c.text
        assert c.tokens == _count(tok, c.text), (c.text, c.tokens)
        if c.oversize:
            assert c.tokens > max_tokens
            # Only an indivisible unit: one grapheme with the closing punctuation a chunk
            # may not start with (kinsoku), or one token of the JSON or code syntax.
            first = _GRAPHEME.match(c.text)
            assert first is not None
            assert (
                _KINSOKU_TAIL.fullmatch(c.text, first.end())
                or c.kind in ("json", "jsonl")
                or (c.kind == "code" and not regex.search(r"\s", c.text))  # one leaf: an identifier
            ), c.text
        else:
            assert c.tokens <= max_tokens, (c.text, c.tokens)
        assert c.start in starts, ("cut inside a grapheme", c.start)
        assert c.byte_start == byte
        byte += len(c.text.encode("utf-8"))
        assert c.byte_end == byte
        pos = c.end
    assert pos == len(text)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(("group", "name"), FILES)
def test_bpe_invariants(bpe: Tokenizer, group: str, name: str, budget: int) -> None:
    text = (CORPORA / group / name).read_text(encoding="utf-8")
    kind = "auto" if group != "jsonl" else "jsonl"
    chunks = chunk(text, budget, kind=kind, encoding=bpe, filename=name)
    check_with(bpe, text, chunks, budget)
    if budget == 256:
        assert sum(c.tokens for c in chunks) >= _count(bpe, text) // 2  # sanity: not empty counts


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(("group", "name"), FILES)
def test_wordpiece_invariants(wordpiece: Tokenizer, group: str, name: str, budget: int) -> None:
    text = (CORPORA / group / name).read_text(encoding="utf-8")
    chunker = Chunker(budget, encoding=wordpiece)
    check_with(wordpiece, text, chunker.chunk(text, filename=name), budget)


def test_overlap_and_heading_context(bpe: Tokenizer) -> None:
    text = (CORPORA / "markdown" / "ja_readme.md").read_text(encoding="utf-8")
    for c in Chunker(64, encoding=bpe, overlap=8).chunk(text):
        assert c.tokens == _count(bpe, c.text) and (c.tokens <= 64 or c.oversize)
    for c in Chunker(64, encoding=bpe).chunk(text, kind="markdown", heading_context=True):
        assert c.tokens == _count(bpe, c.text) and (c.tokens <= 64 or c.oversize)


def test_count_tokens_is_the_tokenizers_own(bpe: Tokenizer, wordpiece: Tokenizer) -> None:
    for group, name in FILES:
        text = (CORPORA / group / name).read_text(encoding="utf-8")
        for tok in (bpe, wordpiece):
            assert count_tokens(text, encoding=tok) == _count(tok, text)
    # Special tokens are never added, whatever the tokenizer's template says.
    assert count_tokens("", encoding=bpe) == 0
    assert len(bpe.encode("hello").ids) == _count(bpe, "hello") + 2


def test_truncating_tokenizer_is_counted_whole(bpe: Tokenizer) -> None:
    tok = Tokenizer.from_str(bpe.to_str())
    tok.enable_truncation(max_length=4)
    text = (CORPORA / "prose" / "ja_essay.txt").read_text(encoding="utf-8")
    assert count_tokens(text, encoding=tok) == _count(bpe, text) > 4
    assert tok.truncation is not None  # the caller's object is left as it was


def test_path_form(bpe: Tokenizer, tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    bpe.save(str(path))
    text = (CORPORA / "code" / "server.go").read_text(encoding="utf-8")
    expected = _count(bpe, text)
    assert count_tokens(text, encoding=str(path)) == expected
    assert count_tokens(text, encoding=path) == expected
    assert count_tokens(text, encoding=tmp_path) == expected  # a folder holding tokenizer.json
    for form in (str(path), path):
        chunks = chunk(text, 64, encoding=form)
        check_with(bpe, text, chunks, 64)


class _CharCodes:
    """An encode-only tokenizer: one id per UTF-8 byte, pairs of ASCII letters merged."""

    def encode(self, text: str) -> Sequence[int]:
        out: list[int] = []
        data = text.encode("utf-8")
        i = 0
        while i < len(data):
            if data[i : i + 2].isalpha() and len(data[i : i + 2]) == 2:
                out.append(256 + data[i] * 256 + data[i + 1])
                i += 2
            else:
                out.append(data[i])
                i += 1
        return tuple(out)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(("group", "name"), FILES[::3])
def test_generic_encode_object(group: str, name: str, budget: int) -> None:
    tok = _CharCodes()
    text = (CORPORA / group / name).read_text(encoding="utf-8")
    assert count_tokens(text, encoding=tok) == len(tok.encode(text))
    chunks = chunk(text, budget, encoding=tok, filename=name)
    assert "".join(c.text for c in chunks) == text
    starts = {m.start() for m in _GRAPHEME.finditer(text)} | {len(text)}
    for c in chunks:
        assert c.tokens == len(tok.encode(c.text))
        assert c.tokens <= budget or c.oversize
        assert c.start in starts


def test_unknown_name_says_what_to_pass(tmp_path: Path) -> None:
    for bad in ("meta-llama/Llama-3.1-8B", "gemma-3-270m", str(tmp_path / "missing.json")):
        with pytest.raises(ValueError, match=r"no local tokenizer.*tokenizers\.Tokenizer.*tokenizer\.json"):
            count_tokens("hi", encoding=bad)
        with pytest.raises(ValueError, match=r"nothing is downloaded"):
            Chunker(64, encoding=bad)
    with pytest.raises(TypeError, match="encoding must be"):
        count_tokens("hi", encoding=42)  # type: ignore[arg-type]


def test_bad_tokenizer_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"not a tokenizer\.json"):
        count_tokens("hi", encoding=path)
