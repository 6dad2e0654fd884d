"""Guards around tree-sitter on hostile code.

The parser's work is bounded by the source's length: a parse that runs past it is
stopped, and the rest is chunked with prose rules (with a ChunkingWarning).
tree-sitter's error recovery can loop on a few bytes of junk: the 43 characters below
kept the TypeScript grammar busy for minutes. The bound counts the parser's progress
checks (one per 100 operations), not a clock.

A grammar's external scanner cannot write past tree-sitter's state buffer (_guard.c):
tree-sitter-ruby's could, and crashed the process.
"""

from __future__ import annotations

import base64
import gc
import os
import platform
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import pytest
import tree_sitter

import sdk.chunking._code as code
from sdk.chunking import Chunker, ChunkingWarning, _accel
from sdk.chunking._code import CodeSplitter, code_root
from sdk.chunking._languages import grammar, language_for_filename, languages, load_language
from tests.chunking.test_code_windows import _module
from tests.invariants import check_chunks

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "code"

# Found by fuzzing broken tokens; TypeScript's and TSX's error recovery never finish it.
JUNK = '""``({[``*/`/(}``i""``````/**/}/*[}}<:<`>*/'


@pytest.mark.parametrize(("language", "copies"), [("typescript", 1), ("tsx", 1), ("typescript", 40)])
def test_a_parse_that_does_not_finish_is_stopped(language: str, copies: int) -> None:
    text = JUNK * copies
    with pytest.warns(ChunkingWarning, match=f"the {language} parser was stopped"):
        chunks = Chunker(max_tokens=8).chunk(text, language=language)
    check_chunks(text, chunks, 8)


def test_the_filename_path_is_bounded_too() -> None:
    with pytest.warns(ChunkingWarning, match="parser was stopped"):
        chunks = Chunker(max_tokens=8).chunk(JUNK, filename="broken.ts")
    check_chunks(JUNK, chunks, 8)


def _parse_checks(text: str, language: str) -> tuple[int, int | None]:
    """Progress checks the whole parse of ``text`` took, and where it was stopped."""
    splitter = code_root(text, language).splitter
    assert isinstance(splitter, CodeSplitter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        splitter.tree  # noqa: B018
    return splitter.checks, splitter.stopped


# Dense but valid code: the most work per byte of every shape measured (about one
# progress check per 10 bytes), well inside the bound of one per 4.
DENSE = {
    "cpp": "template<" * 800 + "class T" + ">" * 800 + " struct S;\n",
    "python": "x = " + "[" * 4000 + "]" * 4000 + "\n",
    "javascript": "x = [" + "1," * 8000 + "1];\n",
    "rust": "fn f() " + "{" * 4000 + "}" * 4000 + "\n",
}


@pytest.mark.parametrize("language", sorted(DENSE))
def test_dense_valid_code_is_never_stopped(language: str) -> None:
    text = DENSE[language]
    checks, stopped = _parse_checks(text, language)
    assert stopped is None
    assert 0 < checks <= code._PARSE_SLACK + len(text.encode()) // code._PARSE_BYTES
    assert checks * 8 < len(text.encode())  # the bound leaves a margin of 2x and more


def test_the_junk_is_stopped_within_the_bound() -> None:
    checks, stopped = _parse_checks(JUNK, "typescript")
    assert stopped is not None and 0 <= stopped <= len(JUNK)
    # (Its lexer's steps may run out first.)
    assert checks <= code._PARSE_SLACK + stopped // code._PARSE_BYTES + 1


def test_a_stopped_window_leaves_the_rest_to_prose(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _module(300)  # about 200 KB of Python: parsed a window at a time
    assert len(text) > code._WINDOW_BYTES and text.isascii()
    whole = Chunker(max_tokens=64).chunk(text, language="python")
    starts: list[int] = []
    run = CodeSplitter._run

    def second_window_stops(self: CodeSplitter, parser: object, lo: int) -> object:
        starts.append(lo)
        if len(starts) == 2:
            monkeypatch.setattr(code, "_PARSE_SLACK", 0)  # stopped at its first check
            monkeypatch.setattr(code, "_PARSE_BYTES", 1 << 40)
        return run(self, parser, lo)  # type: ignore[arg-type]

    monkeypatch.setattr(CodeSplitter, "_run", second_window_stops)
    with pytest.warns(ChunkingWarning, match="the python parser was stopped"):
        chunks = Chunker(max_tokens=64).chunk(text, language="python")
    check_chunks(text, chunks, 64)
    assert len(starts) == 2  # no window after the stopped one was parsed
    # The first window's statements were cut as code, as they are in a full parse.
    head = [c for c in chunks if c.end < starts[1]][:-1]
    assert len(head) > 100
    assert set(head) <= set(whole)
    assert [c for c in chunks if c.start >= starts[1]] != [c for c in whole if c.start >= starts[1]]


# tree-sitter-ruby 0.23.1's scanner writes one byte past tree-sitter's state buffer on
# this (broken tokens and open heredocs, found by fuzzing), which crashed the process
# (run alone, the parse gets a segmentation fault every time). _guard.c drops such a state.
RUBY_OVERFLOW = base64.b64decode(
    "YGAqLy8nJzw8RU9GCiN7JyciIjw8RU9GIiI8PEVPRicnIiI8PEVPRmRlZis8PEVPRjs8PEVPRmBgJydgYCIiJyc8PEVPRis8PEVPRicnPDxFT0YiIjw8RU9GOzw8RU9GIiJgYGk8PEVPRns8PEVPRicnPDxFT0Z7aWY8PEVPRicnPDxgJCgjaWZ9LCh9KCg8PEVPRjwrXT46Ki8sLyooKyAqL2RlZjw8RU9GPiQoaWZbLyoKKi8kKCsoXQoiIiNgJycnJzw8RU9GCjw8RU9GLyo8PEVPRi8qPDxFT0YnJyIiPDxFT0ZpZns8PEVPRmZuaWY9Pjw8RU9GIiJgYCcnLD0+PDxFT0ZgYCw8PEVPRi8qKC8qLyo8PEVPRmZuIiJ9PC8qCi8qKCcnCi8qCi8qPDxFT0YrPDxFT0ZgICIsJCgqL2AkKH0sImRlZiQoCixbYCovPDxFT0ZkZWZ4JCg+I1soIgojJ2AnJCggfWZueF14WyMqLzs9PmZuPT54KTwgPT4sKF19CjooZm4sZGVmOzw8RU9GJChgZm47PT5kZWZ9YCg6LCMvKiJ4KCNpZiovOi8qLyp9Wzx7Kyl7PT4+Oig8LCAnCi8qKHs7e31gJChgfSt7KGlmKi8iKy8qW2lmJyc6YDopKi94IDw8RU9GWyB4KSs8PEVPRgpmbjorPihdKi9kZWZmbmAiPT48e3hgeyg9PiovJChkZWYjLCMieHtpZn06Ki99Pik8KSc9PiBpZjo8PEVPRj0+IiovLDtdKi86aWY+Zm4qL2B4aWYrezorIyddOi8qPjokKHhmbjxdJyJpZn06ZGVmPT57PDxFT0YnJCg6PT48ZGVmeyAvKj5mbl14PDxFT0ZkZWYrPHtgLyovKj48PEVPRilpZih7PiMgZGVmIiQoJzw8RU9GYCBmbjxkZWYnPC8qIGlmZGVmOjpbKCQoIH0qLygvKlt4PDxFT0Z9Oz0+Iz0+LyorfTs8PEVPRid7JydgYC88PEVPRiIiPDxFT0ZbJyc8PEVPRmBgRTw8RU9GLDw8RU9GKzw8RU9GYGArPDxFT0YnJyIiPDxFT0YvPDxFT0YvPDxFT0YnJzw8RU9GIiI8PEVPRid7Jzw8RU9GLzw8RU9GWzw8RU9GPjw8RU9GaWY+LyN7PDxFT0ZpZis8PEVPRicnPDxFT0ZgYHs8PEVPRj48PEVPRj1pZjw8RU9GeCIiYGAqLy8rPDxFT0ZpZgo8PEVPRmAjezw8RU9GIiInJz4oZGVmPCs8PEVPRns9PiddXXtkZWYnIycoeHhdCig8PEVPRj0+Ciw9PmlmXT4KOylmbn0KeDw8RU9GJz0+KCk9Pj0+WykKeD0+ICsjZm4qLyd7CilmOi8vKjw8RU9GZm5gYChbIiInJzw8RU9GYGApPi8vJycoPi8vKjw8RU9GKCIiYGB9KDxFW3t7YCpgOyh4Jyd9JycpaWkkKDt9JCgiJyInJycnImAiJyAvIiJgJ2AiYCcnYCcnImAiYGAnIiciYGAiYGAnJyInIiciJyIiIiciIicnYCcnJyInIidgYCJgYCJgIC8iIiIiIiciImAiJyIiJyIKLyIiYGAnImBgJ2Ai"
).decode()


def test_ruby_whose_scanner_state_overflows_does_not_crash() -> None:
    script = (
        "import sys\n"
        "from sdk.chunking import _accel, Chunker\n"
        "from sdk.chunking._code import CodeSplitter, code_root\n"
        "text = sys.stdin.read()\n"
        "chunks = Chunker(max_tokens=32).chunk(text, language='ruby')\n"
        "assert ''.join(c.text for c in chunks) == text\n"
        "print(_accel.guard.stats()[0] if _accel.guard is not None else 'no guard')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=RUBY_OVERFLOW, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if _accel.guard is not None:
        assert int(done.stdout) >= 1  # the guard dropped the state that would overflow


def test_without_the_guard_such_ruby_is_chunked_as_prose(monkeypatch: pytest.MonkeyPatch) -> None:
    load_language("ruby")  # (loaded once per process: not without its guard)
    monkeypatch.setattr(_accel, "guard", None)
    with pytest.warns(ChunkingWarning, match="scanner could overflow"):
        chunks = Chunker(max_tokens=32).chunk(RUBY_OVERFLOW, language="ruby")
    check_chunks(RUBY_OVERFLOW, chunks, 32)
    ordinary = (CORPUS / "tasks.rb").read_text(encoding="utf-8") + "x = <<~EOF\n  body\nEOF\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChunkingWarning)
        check_chunks(ordinary, Chunker(max_tokens=32).chunk(ordinary, language="ruby"), 32)


# The thread's class table made to end where glibc's does, with nothing mapped past it
# (where glibc's own is followed by whatever memory lies there): a read past entry 255
# faults every time.
_BOUNDED_CTYPE = """
import ctypes
libc = ctypes.CDLL(None)
loc = libc.__ctype_b_loc
loc.restype = ctypes.POINTER(ctypes.POINTER(ctypes.c_ushort))
libc.mmap.restype = ctypes.c_void_p
int_, size = ctypes.c_int, ctypes.c_size_t
libc.mmap.argtypes = [ctypes.c_void_p, size, int_, int_, int_, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
base = libc.mmap(None, 8 << 20, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
assert base and base != ctypes.c_void_p(-1).value
assert libc.mprotect(base, 4096, 3) == 0  # PROT_READ | PROT_WRITE
ctypes.memmove(base, ctypes.addressof(loc().contents.contents) - 256, 768)  # -128 .. 255
from sdk.chunking import chunk
chunk("x=1\\n", max_tokens=1, kind="code", language="bash")  # the grammar loaded
loc()[0] = ctypes.cast(base + 256, ctypes.POINTER(ctypes.c_ushort))
for cp in (0x100, 0x4E00, 0x10FFFF):
    text = "{" + chr(cp) + "\\n{12" + chr(cp)
    assert "".join(c.text for c in chunk(text, max_tokens=1, kind="code", language="bash")) == text
print("ok")
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's class table"
)
def test_a_scanner_asking_the_class_of_a_far_code_point_reads_within_a_table() -> None:
    """tree-sitter-bash's scanner asks isdigit() of the character after "{": past U+00FF
    glibc read its class table out of bounds (up to 2 MB past it), and "{" followed by a
    far code point crashed the process about one run in two. The guard gives scanners a
    table for every code point."""
    if _accel.guard is None:
        pytest.skip("the guard is not built (such bash is chunked as prose: the next test)")
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED_CTYPE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "ok"


def test_without_the_guard_such_bash_is_chunked_as_prose(monkeypatch: pytest.MonkeyPatch) -> None:
    load_language("bash")  # (loaded once per process: not without its guard)
    monkeypatch.setattr(_accel, "guard", None)
    text = "x=1\n" * 40_000 + "echo {\u4e00}\n"  # windowed: every window is checked
    with pytest.warns(ChunkingWarning, match="past U\\+00FF after"):
        chunks = Chunker(max_tokens=32).chunk(text, language="bash")
    check_chunks(text, chunks, 32)
    ordinary = "echo {1..3} \u4e00\n" * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChunkingWarning)
        check_chunks(ordinary, Chunker(max_tokens=4).chunk(ordinary, language="bash"), 4)


@pytest.mark.parametrize("language", languages())
def test_guarded_grammars_parse_as_their_own(language: str) -> None:
    """The guard changes only states that do not fit: every corpus file of every
    language parses to the same tree with and without it."""
    g = grammar(language)
    module = pytest.importorskip(g.module)
    own = tree_sitter.Language(getattr(module, g.function)())
    guarded = load_language(language)
    texts = [
        p.read_bytes()
        for p in sorted(CORPUS.iterdir())
        if p.is_file() and language_for_filename(p.name) == language
    ] or [b"x = 1\n"]
    for data in texts:
        ours = tree_sitter.Parser(guarded).parse(data).root_node
        theirs = tree_sitter.Parser(own).parse(data).root_node
        assert str(ours) == str(theirs)


def test_parsing_keeps_nothing_once_the_tree_is_gone() -> None:
    """py-tree-sitter keeps a reference to every object a read callable returns: the
    splitter reads through one buffer, so parses do not pile up copies of the source."""
    text = "value = compute(1, 2)\n" * 20_000  # 440 KB
    tracemalloc.start()
    try:
        code_root(text, "python").splitter.tree  # type: ignore[union-attr]  # noqa: B018
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3):
            splitter = code_root(text, "javascript").splitter
            assert isinstance(splitter, CodeSplitter)
            assert splitter.tree is not None
            assert splitter.tree.root_node.children[0].text == b"value = compute(1, 2)"
            del splitter
            gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < len(text) // 4


@pytest.mark.skipif(_accel.guard is None, reason="the guard is not built")
def test_an_empty_scanner_state_gets_a_new_scanner() -> None:
    """tree-sitter-bash kept every heredoc it had seen and walked them all on each reset
    of its state: 128 KB of one line of heredocs took 6 s to parse, 1 MB would take
    minutes (the bench's "Bash, heredocs on one line" row measures it). A reset now
    gives the scanner a new instance, whose reset has nothing to walk."""
    assert _accel.guard is not None
    text = "a <<EOF b " * 2_000
    before = _accel.guard.stats()[2]
    _, stopped = _parse_checks(text, "bash")
    assert stopped is None
    assert _accel.guard.stats()[2] - before > 100  # states too big to keep: many resets
    chunks = Chunker(max_tokens=32).chunk(text, language="bash")
    check_chunks(text, chunks, 32)


def test_the_budget_stops_past_its_bound() -> None:
    budget = code._Budget(2, 1024, 4)
    steps = [(5, False), (3, True), (400, False), (400, False)] + [(401, True)] * 1_200
    answers = [budget(offset, error) for offset, error in steps]
    assert answers.index(True) == 1024 + (401 - 2) // 4  # the reach, not the last offset
    assert budget.calls == len(steps) and budget.reached == 401


def test_an_interrupt_during_a_parse_is_raised_not_a_crash() -> None:
    """A KeyboardInterrupt that arrives while tree-sitter calls back into Python (to
    read, or to count its progress) comes out of chunk() as itself."""
    script = (
        "import signal, sys\n"
        "from sdk.chunking import Chunker\n"
        "text = 'def f(x):\\n    return [x, (x + 1) * 2, {x: x}]\\n' * 40_000\n"
        "fired = []\n"
        "def interrupt(*args):\n"
        "    if not fired:\n"
        "        fired.append(1)\n"
        "        raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGALRM, interrupt)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.05, 0.002)\n"
        "try:\n"
        "    for _ in range(50):\n"
        "        Chunker(max_tokens=64).chunk(text, language='python')\n"
        "except KeyboardInterrupt:\n"
        "    signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "    print('interrupted')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "interrupted"


# One unit repeated, each found by fuzzing: the grammar's lexer scans an unclosed
# literal, comment or string to the end again at every token, in time that grows with
# the square of the length (32 KB took 1.2-4.1 s; bash's NUL bytes make no parser
# operation at all, so only the lexer's own count can stop them).
QUADRATIC_LEXING = [
    ("bash", ")"),
    ("bash", "|"),
    ("bash", "\0"),
    ("python", "\\\n"),
    ("ruby", "%("),
    ("tsx", "{/*"),
    ("rust", 'r#"'),
]


@pytest.mark.skipif(_accel.guard is None, reason="the guard is not built")
@pytest.mark.parametrize(("language", "unit"), QUADRATIC_LEXING)
def test_a_lexer_that_rescans_to_the_end_is_stopped(language: str, unit: str) -> None:
    text = unit * (16_000 // len(unit))
    n = len(text.encode())
    splitter = code_root(text, language).splitter
    assert isinstance(splitter, CodeSplitter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        assert splitter.tree is None
    assert splitter.stopped is not None
    # Steps counted, not seconds: the lexer stops within its allowance and a few lex
    # calls (16,000 bytes rescanned at every token would be over 100 million steps).
    assert splitter.lexed <= code._LEX_SLACK + n * code._LEX_PER_BYTE + 100 * n
    with pytest.warns(ChunkingWarning, match="its lexer ran past"):
        chunks = Chunker(max_tokens=32).chunk(text, language=language)
    check_chunks(text, chunks, 32)


@pytest.mark.skipif(_accel.guard is None, reason="the guard is not built")
def test_ordinary_code_lexes_in_a_few_steps_a_byte() -> None:
    for path in sorted(CORPUS.iterdir()):
        language = language_for_filename(path.name)
        if language is None:
            continue
        text = path.read_text(encoding="utf-8")
        splitter = code_root(text, language).splitter
        assert isinstance(splitter, CodeSplitter)
        assert splitter.tree is not None and splitter.stopped is None
        assert 0 < splitter.lexed <= 8 * len(text.encode()), path.name


@pytest.mark.skipif(_accel.guard is None, reason="the guard is not built")
@pytest.mark.skipif(
    bool(os.environ.get("SEAM_SANITIZED")), reason="an address-space limit and ASan's shadow memory"
)
def test_a_parse_past_the_lexers_allowance_ends_without_a_progress_callback() -> None:
    """Past its allowance the guard's lexer finds nothing, but the end of the input is
    still found: without it, error recovery pushed an empty token at the last byte
    forever (memory growing by hundreds of MB a second), and only a progress callback
    that read the meter could stop it (a parse of bytes takes none)."""
    script = (
        "import resource, tree_sitter\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "from sdk.chunking import _accel\n"
        "from sdk.chunking._languages import load_language\n"
        "for language, source in [('python', b'x = 1\\ny = 2\\n' * 50), ('bash', b'echo a | b\\n' * 50),\n"
        "        ('ruby', b'x = %(abc\\n' * 20), ('javascript', b'let x = `a${b}`;\\n' * 30)]:\n"
        "    parser = tree_sitter.Parser(load_language(language))\n"
        "    _accel.guard.meter_start(10)\n"
        "    tree = parser.parse(source)\n"
        "    _accel.guard.meter_stop()\n"
        "    print(language, tree.root_node.end_byte == len(source))\n"
    )
    run = [sys.executable, "-c", script]
    done = subprocess.run(run, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["python", "True", "bash", "True", "ruby", "True", "javascript", "True"]


def test_an_interrupt_while_the_parser_reads_comes_out_as_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """py-tree-sitter goes on parsing after its read callable raised, and raises a
    SystemError chained to what was raised: chunk() raises the original."""

    class Interrupting(bytearray):
        reads = 0

        def __setitem__(self, key: object, value: object) -> None:
            type(self).reads += 1
            if type(self).reads == 3:
                raise KeyboardInterrupt
            super().__setitem__(key, value)  # type: ignore[index]

    monkeypatch.setattr(code._buffers, "buffer", Interrupting(), raising=False)
    monkeypatch.setattr(code, "_READ_BYTES", 64)
    with pytest.raises(KeyboardInterrupt):
        Chunker(max_tokens=64).chunk("def f(x):\n    return x\n" * 200, language="python")
    monkeypatch.undo()
    text = "def f(x):\n    return x\n" * 200
    check_chunks(text, Chunker(max_tokens=64).chunk(text, language="python"), 64)


_MANY_THREADS = """
import sys
from pathlib import Path
from sdk.chunking import Chunker, _accel
folder = Path(sys.argv[1])
paths = sorted(folder.iterdir())
results = list(Chunker(max_tokens=32, isolate=False).chunk_many(paths, workers=4))
for path, got in zip(paths, results, strict=True):
    assert got.ok, (path, got.error)
    text = path.read_text(encoding="utf-8")
    assert "".join(c.text for c in got.chunks) == text, path
print(_accel.guard.stats()[0] if _accel.guard is not None else "no guard")
"""


def test_the_inputs_that_crashed_a_scanner_chunked_by_four_threads_over_files(tmp_path: Path) -> None:
    """chunk_many with four threads over files holding what crashed tree-sitter's
    scanners before the guard (Ruby's state past its buffer, bash's class table read
    past its end, bash's heredocs piling up), among ordinary files: every file tiled,
    no crash (``make sanitize`` runs this under AddressSanitizer and UBSan, the guard
    wrapping scanners that four threads run at once)."""
    bash = ["{" + chr(cp) + "\n{12" + chr(cp) + "\n" for cp in (0x100, 0x4E00, 0x10FFFF)]
    for i in range(4):
        (tmp_path / f"overflow{i}.rb").write_text(RUBY_OVERFLOW, encoding="utf-8")
        (tmp_path / f"far{i}.sh").write_text("".join(bash) * (i + 1), encoding="utf-8")
        (tmp_path / f"heredocs{i}.sh").write_text("a <<EOF b " * 500, encoding="utf-8")
        (tmp_path / f"tasks{i}.rb").write_text(
            (CORPUS / "tasks.rb").read_text(encoding="utf-8"), encoding="utf-8"
        )
    done = subprocess.run(
        [sys.executable, "-c", _MANY_THREADS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    if _accel.guard is not None:
        assert int(done.stdout) >= 4  # the guard dropped each file's overflowing state
