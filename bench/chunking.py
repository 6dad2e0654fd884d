"""Chunking cost and seam quality: ours against one tiktoken pass and against peers.

    python bench/chunking.py            # full run (a few minutes on 2 cores)
    python bench/chunking.py --quick    # smaller texts, fewer repeats
    python bench/chunking.py --groups prose big --budgets 256 --only langchain
    python bench/chunking.py --wall     # wall time instead of CPU time
    python bench/chunking.py --scale    # only the linearity and memory rows
    python bench/chunking.py --instructions   # ours in instructions (needs valgrind)

For each corpus group (``corpora/<group>/``, kind as in ``tests/corpus.py``'s
``GROUP_KINDS``; missing groups are skipped) and for a ~2 MB text made by repeating the
prose corpus, every contender chunks the same texts at budgets 64, 256 and 1024 tokens
of ``o200k_base``. Cost is the best-of-N CPU time over the group divided by the best
time of one ``encode_ordinary`` pass over the same texts (the baseline), the two timed
in alternation for each row so that a slow spell of a shared machine slows both.
For ours, "encoder inside" is the part of that cost spent in the encoder's own calls
(the texts, and the short stretches re-counted at chunk edges; its share of separate,
instrumented runs): calls made between other work run slower than the baseline's
back-to-back pass, so it is the part of the cost no other change to the chunker removes.

Peers count tokens with the same encoding and run offline:
semantic-text-splitter (``from_tiktoken_model("gpt-4o")``, whose o200k_base ships in the
wheel, else ``from_callback``; ``trim=False`` so it can tile; its
``CodeSplitter``/``MarkdownSplitter`` where the group calls for one), chonkie's
``TokenChunker`` and ``RecursiveChunker`` (given the tiktoken encoding object) and
LangChain's ``RecursiveCharacterTextSplitter`` (``length_function`` counts tokens;
``from_language`` for code it knows).

Real documents the project did not write, side by side with the corpus groups: the
source of the ``hypothesis`` package as installed (Python, about 1 MB) and a large
JSON document shipped by an installed package (botocore's ``endpoints.json``, else
litellm's model price table); a group whose files are missing is skipped.

Linearity and memory (``--scale``): each shape (ordinary prose, Markdown, JSON, Python
source, and the pathological runs: ``"see" + "!" * N + "x"``, a CSV row of empty fields,
regional-indicator flags, millions of identifier characters, a hex dump, CJK without
punctuation, brackets, tiny JSON values: 9-byte objects on one JSON Lines line, an array
of one-digit numbers) is chunked at budget 64 at 1 MB and 16 MB (``--quick``: 1 and
4 MB), each in a fresh process (the smaller size three times, before and after the
larger, its best time kept): CPU seconds per MB at each size, their ratio, and the
peak memory the process grew by while chunking (``ru_maxrss``, the text already built),
per MB of input.

Instructions (``--instructions``): CPU time on a shared machine moves by 10-30% from run
to run, so each of our rows is also counted in machine instructions, which move by less
than 1%: every group runs in its own process under valgrind's callgrind, counted only
inside one ``encode_ordinary`` pass over the group's texts and inside one chunking pass
at each budget (each text chunked once beforehand, uncounted); the cost is their ratio.
An instruction is not a unit of time (the encoder's inner loops run more instructions per
cycle than the interpreter), so these ratios say where our own work stands, and the CPU
time ratios stay the measure of the targets.

Seam measures, on every contender's chunks located in the source:
over-budget chunks (exact count), texts not tiled losslessly (``"".join != text``;
trimmed or rewritten chunks are then located by search), cuts inside a grapheme cluster
(``regex`` ``\\X``), kinsoku violations (a chunk starting with closing punctuation, a
prolonged-sound mark or small kana, or ending with an opening bracket), cuts inside an
identifier/word run (``[\\p{XID_Continue}]+``) and, for peers, those of them inside a run
our chunker leaves whole at the same budget. Structural measures for code and JSON
come from ``bench/code_measures.py`` / ``bench/json_measures.py`` when present.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import json
import os
import resource
import subprocess
import sys
import sysconfig
import time
import tracemalloc
import warnings
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sdk.chunking import Chunker  # noqa: E402
from sdk.tokens import get_encoding  # noqa: E402
from tests.corpus import GROUP_KINDS, CorpusFile, corpus_files  # noqa: E402

ENCODING = "o200k_base"
BUDGETS = (64, 256, 1024)

_GRAPHEME = regex.compile(r"\X")
_WORD_RUN = regex.compile(r"[\p{XID_Continue}]+")
_SMALL_KANA = "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿｧｨｩｪｫｯｬｭｮ"
NO_START = frozenset("、。，．）」』】〉》〕］｝”’ーｰ" + _SMALL_KANA)
NO_END = frozenset("（「『【〈《〔［｛“‘([{")


# --------------------------------------------------------------------------- texts


@dataclass(frozen=True)
class Text:
    name: str
    text: str
    kind: str
    filename: str | None = None
    language: str | None = None  # code language, for peers that need a grammar


def _language(cf: CorpusFile) -> str | None:
    if cf.kind not in ("code", "auto"):
        return None
    try:
        from sdk.chunking._languages import language_for_filename
    except ImportError:
        return None
    return language_for_filename(cf.path.name)


def load_groups(quick: bool) -> dict[str, list[Text]]:
    groups: dict[str, list[Text]] = {}
    for cf in corpus_files():
        t = Text(cf.name, cf.read(), cf.kind, cf.path.name, _language(cf))
        groups.setdefault(cf.group, []).append(t)
    prose = groups.get("prose")
    if prose:
        target = (256 if quick else 2048) * 1024
        unit = "\n\n".join(t.text for t in prose) + "\n\n"
        size = len(unit.encode("utf-8"))
        big = unit * max(1, -(-target // size))
        groups[f"prose x{max(1, -(-target // size))} ({len(big.encode('utf-8')) / 1e6:.1f} MB)"] = [
            Text("prose/big", big, "text")
        ]
    return groups


# Real documents the project did not write (installed packages), by group title.
_SITE = Path(sysconfig.get_paths()["purelib"])
REAL_SOURCE = _SITE / "hypothesis"
REAL_JSON = (
    _SITE / "botocore" / "data" / "endpoints.json",
    _SITE / "litellm" / "model_prices_and_context_window_backup.json",
)


def real_groups(quick: bool) -> dict[str, tuple[str, list[Text]]]:
    """``title -> (group for structural measures, texts)``."""
    out: dict[str, tuple[str, list[Text]]] = {}
    limit = (256 if quick else 1024) * 1024
    if REAL_SOURCE.is_dir():
        texts: list[Text] = []
        size = 0
        for path in sorted(REAL_SOURCE.rglob("*.py")):
            if size >= limit:
                break
            text = path.read_text(encoding="utf-8")
            texts.append(
                Text(f"hypothesis/{path.relative_to(REAL_SOURCE)}", text, "code", path.name, "python")
            )
            size += len(text.encode("utf-8"))
        if texts:
            out[f"real: hypothesis source, {len(texts)} files (kind=code)"] = ("code", texts)
    for path in REAL_JSON:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            out[f"real: {path.parent.name}/{path.name} (kind=json)"] = (
                "json",
                [Text(path.name, text, "json", path.name)],
            )
            break
    return out


# --------------------------------------------------------------------------- contenders

Run = Callable[[str], object]  # chunk one text, return the splitter's own output


@dataclass
class Contender:
    name: str
    # (budget, Text) -> callable doing only the chunking, built outside the timed section
    make: Callable[[int, Text], Run]
    # (Text, output) -> (chunk strings, located spans, unlocated count)
    spans: Callable[[str, object], tuple[list[str], list[tuple[int, int]], int]]
    groups: tuple[str, ...] | None = None  # only these corpus groups (None: all)


def _locate(text: str, pieces: Sequence[str]) -> tuple[list[str], list[tuple[int, int]], int]:
    """Find each chunk in order; chunks may be trimmed (gaps) but do not overlap."""
    spans: list[tuple[int, int]] = []
    missing = 0
    pos = 0
    for piece in pieces:
        i = text.find(piece, pos)
        if i < 0:
            stripped = piece.strip()
            i = text.find(stripped, pos) if stripped else -1
            if i < 0:
                missing += 1
                continue
            piece = stripped
        spans.append((i, i + len(piece)))
        pos = i + len(piece)
    return list(pieces), spans, missing


def _ours() -> Contender:
    def make(budget: int, t: Text) -> Run:
        chunker = Chunker(budget, encoding=ENCODING)
        return lambda s: chunker.chunk(s, kind=t.kind, filename=t.filename)

    def spans(text: str, out: object) -> tuple[list[str], list[tuple[int, int]], int]:
        chunks = out  # list[Chunk]
        return [c.text for c in chunks], [(c.start, c.end) for c in chunks], 0  # type: ignore[attr-defined]

    return Contender("seam (ours)", make, spans)


def _ts_capsule(language: str | None) -> object | None:
    if not language:
        return None
    try:
        from sdk.chunking._languages import grammar

        g = grammar(language)
        return getattr(importlib.import_module(g.module), g.function)()
    except Exception:
        return None


def _semantic_text_splitter(count: Callable[[str], int]) -> Contender | None:
    try:
        from semantic_text_splitter import CodeSplitter, MarkdownSplitter, TextSplitter
    except ImportError:
        return None

    def make(budget: int, t: Text) -> Run:
        capsule = _ts_capsule(t.language) if t.kind in ("code", "auto") else None
        cls: type = TextSplitter
        head: tuple[object, ...] = ()
        if capsule is not None:
            cls, head = CodeSplitter, (capsule,)
        elif t.kind == "markdown":
            cls = MarkdownSplitter
        try:
            # tiktoken-rs ships o200k_base inside the wheel: native counting, no network.
            splitter = cls.from_tiktoken_model(*head, "gpt-4o", budget, trim=False)
        except Exception:
            splitter = cls.from_callback(*head, count, budget, trim=False)
        return splitter.chunk_indices  # type: ignore[attr-defined,no-any-return]

    def spans(text: str, out: object) -> tuple[list[str], list[tuple[int, int]], int]:
        pairs = out  # list[(char offset, chunk)]
        pieces = [c for _, c in pairs]  # type: ignore[attr-defined]
        located = [(o, o + len(c)) for o, c in pairs]  # type: ignore[attr-defined]
        if all(text[a:b] == c for (a, b), c in zip(located, pieces, strict=True)):
            return pieces, located, 0
        return _locate(text, pieces)

    return Contender("semantic-text-splitter", make, spans)


def _chonkie(encoding: object) -> list[Contender]:
    try:
        from chonkie import RecursiveChunker, TokenChunker
    except ImportError:
        return []

    def spans(text: str, out: object) -> tuple[list[str], list[tuple[int, int]], int]:
        chunks = out
        pieces = [c.text for c in chunks]  # type: ignore[attr-defined]
        located = [(c.start_index, c.end_index) for c in chunks]  # type: ignore[attr-defined]
        if all(text[a:b] == c for (a, b), c in zip(located, pieces, strict=True)):
            return pieces, located, 0
        return _locate(text, pieces)

    def maker(cls: type) -> Callable[[int, Text], Run]:
        def make(budget: int, t: Text) -> Run:
            chunk = cls(tokenizer=encoding, chunk_size=budget).chunk
            # RecursiveChunker keeps token counts by text in a class-wide LRU cache (4096
            # entries): timed on texts it has already seen (the warm-up, every repeat
            # before), it would count little at all. Each run starts with it empty, as
            # the first chunking of a document does.
            cached = getattr(cls, "_estimate_token_count", None)
            clear = getattr(cached, "cache_clear", None)
            if clear is None:
                return chunk  # type: ignore[no-any-return]

            def run(text: str) -> object:
                clear()
                return chunk(text)

            return run

        return make

    return [
        Contender("chonkie TokenChunker", maker(TokenChunker), spans),
        Contender("chonkie RecursiveChunker", maker(RecursiveChunker), spans),
    ]


_LANGCHAIN_LANGUAGES = {
    "python": "PYTHON",
    "javascript": "JS",
    "typescript": "TS",
    "java": "JAVA",
    "c": "C",
    "cpp": "CPP",
    "c_sharp": "CSHARP",
    "csharp": "CSHARP",
    "go": "GO",
    "rust": "RUST",
    "ruby": "RUBY",
}


def _langchain(count: Callable[[str], int]) -> Contender | None:
    try:
        from langchain_text_splitters import Language, RecursiveCharacterTextSplitter
    except ImportError:
        return None

    def make(budget: int, t: Text) -> Run:
        kw = {"chunk_size": budget, "chunk_overlap": 0, "length_function": count}
        lang = _LANGCHAIN_LANGUAGES.get(t.language or "")
        if t.kind == "markdown":
            lang = "MARKDOWN"
        if lang is not None:
            splitter = RecursiveCharacterTextSplitter.from_language(Language[lang], **kw)
        else:
            splitter = RecursiveCharacterTextSplitter(**kw)
        return splitter.split_text

    def spans(text: str, out: object) -> tuple[list[str], list[tuple[int, int]], int]:
        return _locate(text, out)  # type: ignore[arg-type]

    return Contender("langchain RecursiveCharacter", make, spans)


def _langchain_json() -> Contender | None:
    """LangChain's RecursiveJsonSplitter: it re-serializes parsed JSON into new documents.

    It sizes chunks in characters of ``json.dumps`` output, not tokens; the budget is
    given as 4 characters per token, and its over-budget count says how that worked out.
    Its pieces are new text, so they cannot be located in the source ("unlocated").
    """
    try:
        from langchain_text_splitters import RecursiveJsonSplitter
    except ImportError:
        return None
    import json

    def make(budget: int, t: Text) -> Run:
        splitter = RecursiveJsonSplitter(max_chunk_size=budget * 4)

        def run(text: str) -> object:
            try:
                data = json.loads(text)
            except ValueError:
                return []
            if not isinstance(data, dict):  # it splits objects only
                data = {"items": data}
            return splitter.split_text(json_data=data, convert_lists=True, ensure_ascii=False)

        return run

    def spans(text: str, out: object) -> tuple[list[str], list[tuple[int, int]], int]:
        return _locate(text, out)  # type: ignore[arg-type]

    return Contender("langchain RecursiveJsonSplitter", make, spans, groups=("json",))


def contenders() -> list[Contender]:
    enc = get_encoding(ENCODING)
    encode = enc.encode_ordinary

    def count(s: str) -> int:
        return len(encode(s))

    out = [_ours()]
    for c in (_semantic_text_splitter(count), *_chonkie(enc), _langchain(count), _langchain_json()):
        if c is not None:
            out.append(c)
    return out


# --------------------------------------------------------------------------- timing


# CPU time of this process by default: on a shared machine, wall time mostly measures
# the other processes. ``--wall`` switches to ``time.perf_counter``.
CLOCK: Callable[[], float] = time.process_time


def best_time(
    fns: Sequence[Callable[[], object]], repeats: int, budget_s: float
) -> tuple[float, list[object]]:
    """Best-of-``repeats`` time of running every fn once; stops repeating past ``budget_s``."""
    best = float("inf")
    results: list[object] = []
    spent = 0.0
    for r in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t0 = CLOCK()
            out = [fn() for fn in fns]
            dt = CLOCK() - t0
        finally:
            gc.enable()
        if dt < best:
            best = dt
        results = out
        del out
        spent += dt
        if spent > budget_s and r >= 1:
            break
    return best, results


def paired_best(
    base_fns: Sequence[Callable[[], object]],
    fns: Sequence[Callable[[], object]],
    repeats: int,
    budget_s: float,
) -> tuple[float, float, list[object]]:
    """Best times of the baseline and of ``fns``, run in alternation (a baseline pass,
    then the contender's, ``repeats`` times): a slow spell of a shared machine slows
    both sides of the ratio alike instead of only one of them."""
    base = best = float("inf")
    results: list[object] = []
    spent = 0.0
    for r in range(repeats):
        b, _ = best_time(base_fns, 1, budget_s)
        t, results = best_time(fns, 1, budget_s)
        base, best = min(base, b), min(best, t)
        spent += b + t
        if spent > budget_s and r >= 1:
            break
    return base, best, results


# --------------------------------------------------------------------------- measures


@dataclass
class TextFacts:
    """Per text: grapheme starts and word runs, computed once."""

    graphemes: frozenset[int]
    run_starts: list[int]
    run_ends: list[int]

    @classmethod
    def of(cls, text: str) -> TextFacts:
        starts = frozenset(m.start() for m in _GRAPHEME.finditer(text)) | {len(text)}
        rs, re_ = [], []
        for m in _WORD_RUN.finditer(text):
            rs.append(m.start())
            re_.append(m.end())
        return cls(starts, rs, re_)

    def run_of(self, p: int) -> int | None:
        """Index of the word run holding ``p`` strictly inside, if any."""
        i = bisect_right(self.run_starts, p) - 1
        if i >= 0 and self.run_starts[i] < p < self.run_ends[i]:
            return i
        return None


@dataclass
class Tally:
    seconds: float = 0.0
    base: float = 0.0  # best baseline pass, timed in alternation with this row
    chunks: int = 0
    over: int = 0
    not_lossless: int = 0
    unlocated: int = 0
    grapheme_cuts: int = 0
    kinsoku: int = 0
    word_cuts: int = 0
    word_cuts_ours_whole: int = 0
    error: str | None = None
    structural: dict[str, int] = field(default_factory=dict)
    encoder: float | None = None  # ours: the seconds of the timed runs spent in the encoder


def measure(
    text: str,
    facts: TextFacts,
    pieces: list[str],
    spans: list[tuple[int, int]],
    unlocated: int,
    budget: int,
    count: Callable[[str], int],
    ours_runs_cut: set[int] | None,
    tally: Tally,
) -> list[int]:
    """Add one text's measures to ``tally``; return its cut positions."""
    tally.chunks += len(pieces)
    tally.over += sum(1 for p in pieces if count(p) > budget)
    tally.not_lossless += "".join(pieces) != text
    tally.unlocated += unlocated
    n = len(text)
    cuts = sorted({p for s, e in spans for p in (s, e) if 0 < p < n})
    tally.grapheme_cuts += sum(1 for p in cuts if p not in facts.graphemes)
    for s, e in spans:
        if e <= s:
            continue
        if s > 0 and text[s] in NO_START:
            tally.kinsoku += 1
        if e < n and text[e - 1] in NO_END:
            tally.kinsoku += 1
    for p in cuts:
        run = facts.run_of(p)
        if run is None:
            continue
        tally.word_cuts += 1
        if ours_runs_cut is not None and run not in ours_runs_cut:
            tally.word_cuts_ours_whole += 1
    return cuts


# --------------------------------------------------------------------------- structural hooks

# group -> module in bench/ with structural measures. Its public (``__all__``) functions
# named ``cuts_*`` each count bad boundaries; their parameters are matched by name:
# ``text``, ``language`` (as ``sdk.chunking._languages`` names it), ``boundaries``
# (code-point offsets where one chunk ends and the next begins) and ``max_tokens``.
# ``pieces_are_valid_json(pieces) -> (valid, total)``, when present, adds a column.
STRUCTURAL_MODULES = {
    "code": "bench.code_measures",
    "json": "bench.json_measures",
    "jsonl": "bench.json_measures",
}
VALID_PIECES = "pieces_are_valid_json"


def structural_measures(group: str) -> dict[str, Callable[..., object]]:
    name = STRUCTURAL_MODULES.get(group)
    if name is None:
        return {}
    try:
        module = importlib.import_module(name)
    except ImportError:
        return {}
    return {
        f: getattr(module, f)
        for f in getattr(module, "__all__", ())
        if (f.startswith("cuts_") or f == VALID_PIECES) and callable(getattr(module, f, None))
    }


def _structural(
    fns: dict[str, Callable[..., object]],
    t: Text,
    pieces: list[str],
    cuts: list[int],
    budget: int,
    tally: Tally,
) -> None:
    values = {"text": t.text, "language": t.language, "boundaries": cuts, "max_tokens": budget}
    for fname, fn in fns.items():
        try:
            if fname == VALID_PIECES:
                valid, _total = fn(pieces)  # type: ignore[misc]
                got = int(valid)
            else:
                kwargs = {}
                for pname, param in inspect.signature(fn).parameters.items():
                    if pname in values and values[pname] is not None:
                        kwargs[pname] = values[pname]
                    elif param.default is inspect.Parameter.empty:
                        raise TypeError(f"no value for parameter {pname!r}")
                got = int(fn(**kwargs))  # type: ignore[call-overload]
        except Exception as exc:  # a measure that cannot read this file: say so, go on
            tally.structural.setdefault(f"{fname} errors", 0)
            tally.structural[f"{fname} errors"] += 1
            print(f"  ! {fname} on {t.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        tally.structural[fname] = tally.structural.get(fname, 0) + got


# --------------------------------------------------------------------------- linearity and memory


def _repeat_to(unit: str, size: int, sep: str = "") -> str:
    """``unit`` repeated (joined by ``sep``) to at least ``size`` UTF-8 bytes."""
    n = max(1, -(-size // len((unit + sep).encode("utf-8"))))
    return sep.join([unit] * n)


def _corpus_text(group: str, sep: str = "\n\n") -> str:
    return sep.join(cf.read() for cf in corpus_files((group,)))


def _json_unit() -> str:
    return ",\n".join(cf.read().strip() for cf in corpus_files(("json",)))


def _python_unit() -> str:
    if REAL_SOURCE.is_dir():
        return "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(REAL_SOURCE.rglob("*.py"))[:40])
    return _corpus_text("code")


# name -> (kind, filename, make(size in bytes) -> text)
SHAPES: dict[str, tuple[str, str | None, Callable[[int], str]]] = {
    "prose": ("text", None, lambda n: _repeat_to(_corpus_text("prose"), n, "\n\n")),
    "markdown": ("markdown", None, lambda n: _repeat_to(_corpus_text("markdown"), n, "\n\n")),
    "json": ("json", None, lambda n: "[" + _repeat_to(_json_unit(), n, ",\n") + "]"),
    "python source": ("code", "big.py", lambda n: _repeat_to(_python_unit(), n, "\n\n")),
    '"see" + "!" * N + "x"': ("text", None, lambda n: "see" + "!" * n + "x"),
    "CSV row of empty fields": ("text", None, lambda n: "a" + "," * n + "\n"),
    "regional-indicator flags": (
        "text",
        None,
        lambda n: "\U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7" * (n // 16),
    ),
    "identifier characters": ("text", None, lambda n: "a" * n),
    "hex dump, no spaces": ("text", None, lambda n: "0123456789abcdef" * (n // 16)),
    "CJK, no punctuation": ("text", None, lambda n: "日本語の文章を書きます" * (n // 33)),
    "brackets": ("text", None, lambda n: "[" * n),
    "JSON Lines, one line of values": ("jsonl", None, lambda n: '{"a": 1} ' * (n // 9)),
    "JSON array of small numbers": ("json", None, lambda n: "[" + "1," * (n // 2 - 1) + "1]"),
    "JSON Lines of small records": (
        "jsonl",
        None,
        lambda n: "".join(f'{{"id": {1_000_000 + i}, "ok": true}}\n' for i in range(n // 28)),
    ),
    "JSON Lines of one-digit values": ("jsonl", None, lambda n: "1\n" * (n // 2)),
    "JSON Lines, every line broken": (
        "jsonl",
        None,
        lambda n: "".join(f'{{"id": {i:07d}, "ok": true}}\n' for i in range(n // 28)),  # leading zeros
    ),
    "JavaScript, one chain of calls": ("code", "chain.js", lambda n: "a" + ".b()" * (n // 4) + ";\n"),
    "Bash, heredocs on one line": ("code", "heredocs.sh", lambda n: "a <<EOF b " * (n // 10)),
    "Markdown, setext headings": ("markdown", None, lambda n: "a\n=\n" * (n // 4)),
    "Markdown, one-letter paragraphs": ("markdown", None, lambda n: "a\n\n" * (n // 3)),
    "Markdown, a line of pipes": ("markdown", None, lambda n: "|" * n),
    "Markdown, empty fences": ("markdown", None, lambda n: "```\n" * (n // 4)),
    "Markdown, a list of one-letter items": ("markdown", None, lambda n: "- a\n\n" * (n // 5)),
    "Markdown, a line of backticks": ("markdown", None, lambda n: "`" * n),
    "JSON, one string of words": ("json", None, lambda n: '["' + "word " * (n // 5) + '"]'),
    "JSON, one string of escaped line breaks": ("json", None, lambda n: '["' + "line\\n" * (n // 6) + '"]'),
    "Python, one long identifier": ("code", "ident.py", lambda n: "a" * n),
    "JSON, arrays nested": ("json", None, lambda n: "[" * (n // 2) + "]" * (n // 2)),
    "JSON, objects nested": ("json", None, lambda n: '{"a":' * (n // 6) + "1" + "}" * (n // 6)),
    "JSON, a number and a run of spaces": ("json", None, lambda n: "[1" + " " * n + "]"),
    "a run of spaces": ("text", None, lambda n: " " * n),
    "a run of NUL characters": ("text", None, lambda n: "\x00" * n),
    "URL punctuation": ("text", None, lambda n: "a/b?c=d&" * (n // 8)),
    "JSON, an array cut short": ("json", None, lambda n: "[" + "1," * (n // 2)),
    "JSON, one string of \\n escapes": ("json", None, lambda n: '["' + "\\n" * (n // 2) + '"]'),
    "JSON, one string of brackets": ("json", None, lambda n: '["' + "(" * n + '"]'),
    "Markdown, a fenced line of words": (
        "markdown",
        None,
        lambda n: "```\n" + "word " * (n // 5) + "\n```\n",
    ),
    "clusters ending in a joiner": ("text", None, lambda n: "a\u200d" * (n // 4)),
}
SCALE_BUDGET = 64
ORDINARY = ("prose", "markdown", "json", "python source")


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset the process's peak resident size to its current size (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _one(shape: str, megabytes: int, budget: int, trace: bool = True) -> dict[str, float]:
    """Chunk one shape in this (fresh) process: CPU time, then the peak the process grew
    by (resident size, the text and the encoder already loaded) and, with ``trace``, the
    peak of Python allocations (``tracemalloc``, a second run)."""
    kind, filename, make = SHAPES[shape]
    text = make(megabytes << 20)
    size = len(text.encode("utf-8"))
    chunker = Chunker(budget, encoding=ENCODING)
    chunker.chunk("warm up, 準備。" * 10, kind=kind, filename=filename)
    gc.collect()
    before = _status_kib("VmRSS") if _reset_peak() else None
    max_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()
    chunks = chunker.chunk(text, kind=kind, filename=filename)
    seconds = time.process_time() - t0
    if before is not None:
        grew = ((_status_kib("VmHWM") or 0) - before) * 1024
    else:
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - max_before) * 1024
    found = {
        "bytes": size,
        "seconds": seconds,
        "grew": grew,
        "chunks": len(chunks),
        "oversize": sum(c.oversize for c in chunks),
        "over": sum(c.tokens > budget and not c.oversize for c in chunks),
    }
    del chunks
    gc.collect()
    if not trace:
        return found
    tracemalloc.start()
    chunker.chunk(text, kind=kind, filename=filename)
    found["python_peak"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return found


def run_scale(quick: bool, only: Sequence[str] | None = None) -> None:
    sizes = (1, 4) if quick else (1, 16)
    print(f"\n### Linearity and memory (budget {SCALE_BUDGET}, each run in a fresh process)\n")
    print(
        "CPU seconds per MB at each size and their ratio (linear: within 1.5×); while chunking "
        "the larger input, the peak the process's resident size grew by (the text and the "
        "encoder already loaded; the tokenizer's native memory included) and the peak of "
        "Python allocations (tracemalloc, chunks returned included), each per MB of input "
        "(target: at most 8). The pathological shapes (one level's worth of Python work "
        "per character) are traced at the smaller size only, where the fixed costs weigh "
        "more: tracemalloc makes 16 MB of them take a quarter of an hour each (†)."
    )
    print()
    print(
        f"| shape | s/MB at {sizes[0]} MB | s/MB at {sizes[1]} MB | ratio | resident growth, MB/MB "
        "| Python peak, MB/MB | chunks | oversize |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for shape in SHAPES:
        if only and not any(o in shape for o in only):
            continue
        got: list[dict[str, float] | None] = []
        traced_small = shape not in ORDINARY
        # The smaller size also runs twice more, after the larger one, untraced: the best
        # of its three times is its time (a run of a second or less moves by 20-40% with
        # this machine's drift; the larger one, a run of several seconds, much less).
        plan = [(sizes[0], traced_small), (sizes[1], not traced_small), (sizes[0], False), (sizes[0], False)]
        for mb, trace in plan:
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    shape,
                    str(mb),
                    str(SCALE_BUDGET),
                    *([] if trace else ["-"]),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                got.append(None)
                print(f"  ! {shape} at {mb} MB: {proc.stderr.strip()[-200:]}", file=sys.stderr)
                continue
            got.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if any(g is None for g in got):
            print(f"| {shape} | error |  |  |  |  |  |  |")
            continue
        small, large, *again = got
        assert small is not None and large is not None
        small = {**small, "seconds": min(g["seconds"] for g in (small, *again) if g is not None)}
        per = [g["seconds"] / (g["bytes"] / 2**20) for g in (small, large)]
        traced = small if traced_small else large
        python_peak = f"{traced['python_peak'] / traced['bytes']:.1f}" + (" †" if traced_small else "")
        print(
            f"| {shape} | {per[0]:.2f} | {per[1]:.2f} | {per[1] / per[0]:.2f}× | "
            f"{large['grew'] / large['bytes']:.1f} | {python_peak} | "
            f"{int(large['chunks'])} | {int(large['oversize'])} |"
        )
        sys.stdout.flush()


# --------------------------------------------------------------------------- driver


def run_group(
    title: str,
    group: str,
    texts: list[Text],
    players: list[Contender],
    budgets: Sequence[int],
    repeats: int,
    time_cap: float,
) -> None:
    enc = get_encoding(ENCODING)
    encode = enc.encode_ordinary

    def count(s: str) -> int:
        return len(encode(s))

    total_bytes = sum(len(t.text.encode("utf-8")) for t in texts)
    base_fns = [lambda s=t.text: encode(s) for t in texts]
    base, _ = best_time(base_fns, max(repeats, 9), time_cap)
    facts = [TextFacts.of(t.text) for t in texts]
    struct = structural_measures(group)
    parse = _parse_cost(texts, base_fns, repeats, time_cap)

    rows: list[tuple[str, int, Tally]] = []
    for budget in budgets:
        ours_runs: list[set[int]] = []
        for player in players:
            if player.groups is not None and group not in player.groups:
                continue
            tally = Tally()
            try:
                fns = [player.make(budget, t) for t in texts]
                with warnings.catch_warnings():  # warm-up (lazy loads, caches), untimed
                    warnings.simplefilter("ignore")
                    for fn in fns:
                        fn("warm up, 準備。")
                row_base, seconds, outs = paired_best(
                    base_fns,
                    [lambda fn=fn, s=t.text: fn(s) for fn, t in zip(fns, texts, strict=True)],
                    max(repeats, 5),
                    time_cap,
                )
            except Exception as exc:
                tally.error = f"{type(exc).__name__}: {str(exc)[:80]}"
                rows.append((player.name, budget, tally))
                continue
            tally.seconds = seconds
            tally.base = row_base
            is_ours = player is players[0]
            if is_ours:
                tally.encoder = _encoder_inside(budget, texts, max(repeats, 5), time_cap) * seconds
            for i, (t, out) in enumerate(zip(texts, outs, strict=True)):
                pieces, spans, unlocated = player.spans(t.text, out)
                cuts = measure(
                    t.text,
                    facts[i],
                    pieces,
                    spans,
                    unlocated,
                    budget,
                    count,
                    None if is_ours else ours_runs[i],
                    tally,
                )
                if is_ours:
                    ours_runs.append({r for p in cuts if (r := facts[i].run_of(p)) is not None})
                if struct:
                    _structural(struct, t, pieces, cuts, budget, tally)
            del outs
            rows.append((player.name, budget, tally))

    struct_cols = sorted({k for _, _, t in rows for k in t.structural})
    print(f"\n### {title}\n")
    print(
        f"{len(texts)} text(s), {total_bytes / 1e3:.1f} KB; baseline: one `encode_ordinary` pass "
        f"= {base * 1e3:.2f} ms ({total_bytes / base / 1e6:.1f} MB/s)\n"
    )
    floor = "1.00× (one encode pass: every chunk's count is exact, so all of its text is encoded)"
    if parse is not None and group == "markdown":
        floor = (
            f"{1 + parse:.2f}× (one encode pass, for exact counts, and one tree-sitter parse of "
            f"each fenced code block in a language with a grammar, {parse:.2f}× by itself, for "
            "syntax-aware cuts inside fences that do not fit whole)"
        )
    elif parse is not None and group == "mixed":
        floor = (
            f"{1 + parse:.2f}× (one encode pass, for exact counts, and one tree-sitter parse of "
            f'the texts `kind="auto"` finds to be code and of the fenced code of those it '
            f"finds to be Markdown, {parse:.2f}× by itself, for syntax-aware cuts)"
        )
    elif parse is not None:
        floor = (
            f"{1 + parse:.2f}× (one encode pass, for exact counts, and one tree-sitter parse of "
            f"the source, {parse:.2f}× by itself, for syntax-aware cuts)"
        )
    print(f"Floor for a chunker with our guarantees: {floor}.\n")
    head = [
        "contender",
        "budget",
        "cost ×encode",
        "encoder inside",
        "chunks",
        "over-budget",
        "not lossless",
        "grapheme cuts",
        "kinsoku violations",
        "in-word cuts",
        "in-word, ours whole",
        *struct_cols,
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
    for name, budget, t in rows:
        if t.error is not None:
            print(f"| {name} | {budget} | error: {t.error} |" + " |" * (len(head) - 3))
            continue
        lossless = f"{t.not_lossless}/{len(texts)}" + (f" ({t.unlocated} unlocated)" if t.unlocated else "")
        cells = [
            name,
            str(budget),
            f"{t.seconds / t.base:.2f}×",
            "—" if t.encoder is None else f"{t.encoder / t.base:.2f}×",
            str(t.chunks),
            str(t.over),
            lossless,
            str(t.grapheme_cuts),
            str(t.kinsoku),
            str(t.word_cuts),
            "—" if name == players[0].name else str(t.word_cuts_ours_whole),
            *(str(t.structural.get(k, 0)) for k in struct_cols),
        ]
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


def _encoder_inside(budget: int, texts: Sequence[Text], repeats: int, time_cap: float) -> float:
    """The share of our chunking pass over the group spent inside the encoder's calls
    (every text encoded once, plus the short stretches re-counted at chunk edges), both
    timed in the same passes (the fastest of ``repeats``), so the machine's drift moves
    them alike. Calls made between other work run slower than the baseline's back-to-back
    pass over whole texts (the encoder's tables leave the CPU caches between them), so
    this share of the cost is the floor the rest of a chunking pass sits on."""
    chunker = Chunker(budget, encoding=ENCODING)
    sizer = chunker.sizer
    inner, inner_ids = sizer._encode, sizer._ids
    spent = [0.0]

    def timed(s: str) -> list[int]:
        t0 = CLOCK()
        try:
            return inner(s)
        finally:
            spent[0] += CLOCK() - t0

    def timed_ids(s: str) -> object:
        t0 = CLOCK()
        try:
            return inner_ids(s)
        finally:
            spent[0] += CLOCK() - t0

    sizer._encode, sizer._ids = timed, timed_ids

    def one_pass() -> float:
        spent[0] = 0.0
        for t in texts:
            chunker.chunk(t.text, kind=t.kind, filename=t.filename)
        return spent[0]

    best, share = float("inf"), 0.0
    total = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(repeats):
            dt, (inside,) = best_time([one_pass], 1, time_cap)
            assert isinstance(inside, float)
            total += dt
            if dt < best:
                best, share = dt, inside / dt
            if total > time_cap and r >= 1:
                break
    return share


def _parse_cost(
    texts: Sequence[Text], base_fns: Sequence[Callable[[], object]], repeats: int, time_cap: float
) -> float | None:
    """tree-sitter's parse of the group's source files, as a multiple of the encode pass
    (timed in alternation with it); ``None`` when no text has a grammar."""
    try:
        import tree_sitter

        from sdk.chunking._languages import load_language
        from sdk.chunking._markdown import MarkdownSplitter, _fence_language
    except ImportError:
        return None
    fns: list[Callable[[], object]] = []

    def add(language: str, source: str) -> None:
        try:
            parser = tree_sitter.Parser(load_language(language))
        except Exception:
            return
        data = source.encode("utf-8")
        fns.append(lambda parser=parser, data=data: parser.parse(data))

    for t in texts:
        kind, language = t.kind, t.language
        if kind == "auto" and not language:
            # What ``kind="auto"`` takes the text for: code found by its content is
            # parsed like code named by its file (the decision itself is our work, not
            # part of the floor).
            from sdk.chunking._detect import decide

            kind, _why, language = decide(t.text, None, t.filename)
        if kind == "markdown":
            # Fenced code is cut at syntax nodes too: its parse is part of the floor
            # wherever a fence does not fit whole (at every budget here but the largest
            # for short fences, so at large budgets this floor is an upper bound).
            for fence in MarkdownSplitter(t.text).fences:
                language = _fence_language(fence.info)
                if language and language not in ("json", "jsonl"):
                    add(language, t.text[fence.body : fence.close])
            continue
        if kind not in ("code", "auto") or not language:
            continue
        add(language, t.text)
    if not fns:
        return None
    base, parsed, _ = paired_best(base_fns, fns, max(repeats, 5), time_cap)
    return parsed / base


# --------------------------------------------------------------------------- instructions


def _all_groups(quick: bool, wanted: Sequence[str] | None) -> dict[str, list[Text]]:
    """Every group of a run, by its title (as ``main`` runs them)."""
    out: dict[str, list[Text]] = {}
    for key, texts in load_groups(quick).items():
        group = "big" if key.startswith("prose x") else key
        if not wanted or group in wanted:
            out[f"{key} (kind={texts[0].kind})" if group in GROUP_KINDS else key] = texts
    if not wanted or "real" in wanted:
        for title, (_group, texts) in real_groups(quick).items():
            out[title] = texts
    return out


def _instructions_worker(quick: bool, title: str, budgets: Sequence[int]) -> None:
    """Under callgrind: one encode pass, then one chunking pass per budget, each the only
    call of ``functools.reduce`` (which the parent counts inside)."""
    import functools

    texts = _all_groups(quick, None)[title]
    encode = get_encoding(ENCODING).encode_ordinary
    chunkers = [Chunker(b, encoding=ENCODING) for b in budgets]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in texts:
            encode(t.text)
            for ch in chunkers:
                ch.chunk(t.text, kind=t.kind, filename=t.filename)
    # The young objects left by loading every group are collected now, not by whichever
    # counted pass happens to cross the collector's threshold (one such collection was a
    # third of a JSON pass's instructions).
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        functools.reduce(lambda _, t: encode(t.text), texts, None)
        for ch in chunkers:
            functools.reduce(
                lambda _, t, ch=ch: ch.chunk(t.text, kind=t.kind, filename=t.filename), texts, None
            )


def run_instructions(quick: bool, wanted: Sequence[str] | None, budgets: Sequence[int]) -> None:
    import shutil
    import tempfile

    valgrind = shutil.which("valgrind")
    print("\n### Ours in instructions (callgrind)\n")
    if valgrind is None:
        print("valgrind is not installed (`apt-get install valgrind`): no instruction counts.")
        return
    print(
        "Instructions of one chunking pass over the group divided by those of one "
        "`encode_ordinary` pass over the same texts, each group in its own process.\n"
    )
    print("| group | " + " | ".join(f"budget {b}" for b in budgets) + " | encode pass (instructions) |")
    print("|---|" + "---:|" * (len(budgets) + 1))
    for title in _all_groups(quick, wanted):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "cg.out"
            cmd = [
                valgrind,
                "--tool=callgrind",
                "--toggle-collect=functools_reduce",
                "--dump-after=functools_reduce",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                "--instructions-worker",
                title,
                *map(str, budgets),
            ]
            if quick:
                cmd.append("--quick")
            done = subprocess.run(
                cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}
            )
            counts: list[int] = []
            for n in range(1, len(budgets) + 2):
                dump = Path(f"{out}.{n}")
                if dump.is_file():
                    found = regex.search(r"(?m)^totals: (\d+)", dump.read_text())
                    counts.append(int(found.group(1)) if found else 0)
            if done.returncode != 0 or len(counts) != len(budgets) + 1 or not counts[0]:
                print(f"| {title} | failed: {done.stderr.strip().splitlines()[-1:] or done.returncode} |")
                continue
            ratios = " | ".join(f"{c / counts[0]:.2f}x" for c in counts[1:])
            print(f"| {title} | {ratios} | {counts[0]:,} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="256 KB big text, fewer repeats")
    ap.add_argument(
        "--groups",
        nargs="*",
        help="only these groups (prose, code, ...; big: the ~2 MB prose text; real: installed "
        "packages' files; scale: linearity and memory)",
    )
    ap.add_argument("--budgets", nargs="*", type=int, default=list(BUDGETS))
    ap.add_argument("--only", nargs="*", help="only contenders whose name contains one of these")
    ap.add_argument("--wall", action="store_true", help="time with perf_counter instead of CPU time")
    ap.add_argument("--scale", action="store_true", help="only the linearity and memory rows")
    ap.add_argument("--shapes", nargs="*", help="with --scale: only shapes whose name contains one of these")
    ap.add_argument("--no-scale", action="store_true", help="leave out the linearity and memory rows")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="only our rows, counted in instructions under valgrind (steady where time is not)",
    )
    ap.add_argument("--instructions-worker", nargs="+", metavar="TITLE BUDGET", help=argparse.SUPPRESS)
    ap.add_argument("--one", nargs="+", metavar="SHAPE MB BUDGET [-]", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.instructions_worker:
        _instructions_worker(
            args.quick, args.instructions_worker[0], [int(b) for b in args.instructions_worker[1:]]
        )
        return 0
    if args.instructions:
        run_instructions(args.quick, args.groups, args.budgets)
        return 0
    if args.one:
        print(json.dumps(_one(args.one[0], int(args.one[1]), int(args.one[2]), trace=args.one[3:] != ["-"])))
        return 0
    if args.scale:
        run_scale(args.quick, args.shapes)
        return 0
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter

    # The machine may be shared: best-of-N with enough N is the estimator that noise
    # from other processes does not bias upwards.
    repeats = 3 if args.quick else 7
    time_cap = 1.0 if args.quick else 4.0
    players = contenders()
    if args.only:
        players = [players[0]] + [p for p in players[1:] if any(o in p.name for o in args.only)]
    groups = load_groups(args.quick)
    started = time.perf_counter()
    print(f"## Chunking benchmark ({ENCODING}; budgets {', '.join(map(str, args.budgets))})")
    print(
        f"\nCost: best {'wall' if args.wall else 'CPU'} time of up to {max(repeats, 5)} runs "
        f"(fewer past {time_cap:.0f} s) over the group, "
        "divided by the best one-pass `encode_ordinary` time of the same texts, the two "
        "timed in alternation for each row (the baseline shown is the best of all). "
        "Counts are summed over the group's texts; cuts are chunk edges located in the source."
    )
    print(f"Contenders: {', '.join(p.name for p in players)}.")
    for key, texts in groups.items():
        group = "big" if key.startswith("prose x") else key
        if args.groups and group not in args.groups:
            continue
        title = f"{key} (kind={texts[0].kind})" if group in GROUP_KINDS else key
        run_group(title, group, texts, players, args.budgets, repeats, time_cap)
    for title, (group, texts) in real_groups(args.quick).items():
        if args.groups and "real" not in args.groups:
            continue
        run_group(title, group, texts, players, args.budgets, repeats, time_cap)
    if not args.no_scale and (not args.groups or "scale" in args.groups):
        run_scale(args.quick)
    print(
        f"\nTotal run time {time.perf_counter() - started:.0f} s (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
