"""Which grammar reads a piece of code: names, aliases, file names, shebangs, content.

Grammars come only from the official offline wheels (``tree-sitter-python`` and
friends), imported on first use; nothing is fetched at run time. A language whose
wheel is missing raises :class:`GrammarUnavailable` naming the package to install.

:func:`detect_language` is deliberately cheap: it looks at the file name, the shebang
and a bounded prefix of the text, and says why it chose (or why it did not).
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import tree_sitter

from .._errors import GrammarUnavailable, UnknownLanguage
from . import _accel

__all__ = [
    "Grammar",
    "GrammarUnavailable",
    "UnknownLanguage",
    "detect_language",
    "grammar",
    "known_language",
    "language_for_filename",
    "languages",
    "load_language",
    "normalize_language",
]


@dataclass(frozen=True, slots=True)
class Grammar:
    """One language: where its grammar lives and how files announce it."""

    name: str
    package: str  # the pip distribution to install
    module: str  # its import name
    function: str  # the module function returning the language pointer
    aliases: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    filenames: tuple[str, ...] = ()
    interpreters: tuple[str, ...] = ()


_GRAMMARS: tuple[Grammar, ...] = (
    Grammar(
        "python",
        "tree-sitter-python",
        "tree_sitter_python",
        "language",
        ("py", "python3", "py3"),
        (".py", ".pyi", ".pyw"),
        ("SConstruct", "SConscript"),
        ("python", "python3", "python2", "pypy", "pypy3"),
    ),
    Grammar(
        "javascript",
        "tree-sitter-javascript",
        "tree_sitter_javascript",
        "language",
        ("js", "jsx", "node", "nodejs", "ecmascript"),
        (".js", ".mjs", ".cjs", ".jsx"),
        (),
        ("node", "nodejs"),
    ),
    Grammar(
        "typescript",
        "tree-sitter-typescript",
        "tree_sitter_typescript",
        "language_typescript",
        ("ts",),
        (".ts", ".mts", ".cts"),
        (),
        ("ts-node", "deno", "tsx", "bun"),
    ),
    Grammar("tsx", "tree-sitter-typescript", "tree_sitter_typescript", "language_tsx", (), (".tsx",)),
    Grammar("go", "tree-sitter-go", "tree_sitter_go", "language", ("golang",), (".go",)),
    Grammar("rust", "tree-sitter-rust", "tree_sitter_rust", "language", ("rs",), (".rs",)),
    Grammar("java", "tree-sitter-java", "tree_sitter_java", "language", (), (".java",)),
    Grammar("c", "tree-sitter-c", "tree_sitter_c", "language", (), (".c", ".h")),
    Grammar(
        "cpp",
        "tree-sitter-cpp",
        "tree_sitter_cpp",
        "language",
        ("c++", "cxx", "cc"),
        (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".ipp", ".tpp"),
    ),
    Grammar(
        "csharp",
        "tree-sitter-c-sharp",
        "tree_sitter_c_sharp",
        "language",
        ("c#", "cs", "c-sharp", "c_sharp"),
        (".cs", ".csx"),
    ),
    Grammar(
        "ruby",
        "tree-sitter-ruby",
        "tree_sitter_ruby",
        "language",
        ("rb",),
        (".rb", ".rake", ".gemspec", ".ru"),
        ("Rakefile", "Gemfile", "Guardfile", "Vagrantfile"),
        ("ruby", "jruby"),
    ),
    Grammar(
        "bash",
        "tree-sitter-bash",
        "tree_sitter_bash",
        "language",
        ("sh", "shell", "zsh", "ksh"),
        (".sh", ".bash", ".zsh", ".ksh"),
        (".bashrc", ".bash_profile", ".profile", ".zshrc"),
        ("bash", "sh", "zsh", "ksh", "dash"),
    ),
    Grammar("json", "tree-sitter-json", "tree_sitter_json", "language", (), (".json", ".jsonc", ".geojson")),
    # Known but not installed with the SDK: asking for one names the wheel to install.
    Grammar("php", "tree-sitter-php", "tree_sitter_php", "language_php", (), (".php",), (), ("php",)),
    Grammar("kotlin", "tree-sitter-kotlin", "tree_sitter_kotlin", "language", ("kt",), (".kt", ".kts")),
    Grammar("swift", "tree-sitter-swift", "tree_sitter_swift", "language", (), (".swift",)),
    Grammar("scala", "tree-sitter-scala", "tree_sitter_scala", "language", (), (".scala", ".sc")),
    Grammar("haskell", "tree-sitter-haskell", "tree_sitter_haskell", "language", ("hs",), (".hs",)),
    Grammar("ocaml", "tree-sitter-ocaml", "tree_sitter_ocaml", "language_ocaml", ("ml",), (".ml",)),
    Grammar("julia", "tree-sitter-julia", "tree_sitter_julia", "language", ("jl",), (".jl",), (), ("julia",)),
    Grammar("lua", "tree-sitter-lua", "tree_sitter_lua", "language", (), (".lua",), (), ("lua", "luajit")),
    Grammar("zig", "tree-sitter-zig", "tree_sitter_zig", "language", (), (".zig",)),
    Grammar(
        "elixir",
        "tree-sitter-elixir",
        "tree_sitter_elixir",
        "language",
        ("ex",),
        (".ex", ".exs"),
        (),
        ("elixir",),
    ),
)

_BY_NAME: dict[str, Grammar] = {}
for _g in _GRAMMARS:
    for _key in (_g.name, *_g.aliases):
        _BY_NAME[_key] = _g
_BY_EXTENSION = {ext: g for g in _GRAMMARS for ext in g.extensions}
_BY_FILENAME = {name: g for g in _GRAMMARS for name in g.filenames}
_BY_INTERPRETER = {name: g for g in _GRAMMARS for name in g.interpreters}


def languages() -> tuple[str, ...]:
    """Canonical names of every language the registry knows (grammar installed or not)."""
    return tuple(sorted(g.name for g in _GRAMMARS))


def known_language(name: str) -> str | None:
    """Canonical name for a language name or alias (case-insensitive), else ``None``."""
    g = _BY_NAME.get(name.strip().lower())
    return None if g is None else g.name


def normalize_language(name: str) -> str:
    """Canonical name for a language name or alias (case-insensitive)."""
    g = _BY_NAME.get(name.strip().lower())
    if g is None:
        raise UnknownLanguage(f"unknown language {name!r}; known languages: {', '.join(languages())}")
    return g.name


def grammar(name: str) -> Grammar:
    return _BY_NAME[normalize_language(name)]


@functools.cache
def load_language(name: str) -> tree_sitter.Language:
    """The tree-sitter language for ``name`` (an alias works), imported once."""
    g = grammar(name)
    try:
        module = importlib.import_module(g.module)
    except ImportError as exc:
        raise GrammarUnavailable(
            f"the {g.name} grammar is not installed; install it with `pip install {g.package}`"
        ) from exc
    make = getattr(module, g.function, None)
    if make is None:
        raise GrammarUnavailable(f"the installed {g.package} has no {g.function}(); try another version")
    try:
        capsule = make()
        if _accel.guard is not None:  # a scanner's state cannot overflow (see _guard.c)
            capsule = _accel.guard.guard(capsule, g.name)
        return tree_sitter.Language(capsule)
    except ValueError as exc:  # built for an ABI this tree-sitter cannot load
        raise GrammarUnavailable(
            f"the installed {g.package} does not load with this tree-sitter: {exc}"
        ) from (exc)


def language_for_filename(filename: str, text: str | None = None) -> str | None:
    """Language announced by a file name (extension or well-known name), if any.

    A ``.h`` header is C unless ``text`` (when given) shows C++ in its first 8 KiB.
    """
    base = os.path.basename(filename)
    g = _BY_FILENAME.get(base)
    if g is None:
        _, ext = os.path.splitext(base)
        g = _BY_EXTENSION.get(ext.lower())
    if g is None:
        return None
    if g.name == "c" and text is not None and base.lower().endswith(".h") and _looks_like_cpp(text):
        return "cpp"
    return g.name


def _looks_like_cpp(text: str) -> bool:
    prefix = text[:_PREFIX]
    return _score(_FEATURES["cpp"][:-1], prefix) >= _MIN_SCORE


_SHEBANG = re.compile(r"#![ \t]*(\S+)(?:[ \t]+(-\S+[ \t]+)*(\S+))?")


def _from_shebang(first_line: str) -> str | None:
    m = _SHEBANG.match(first_line)
    if m is None:
        return None
    program = os.path.basename(m.group(1))
    if program == "env" and m.group(3):
        program = os.path.basename(m.group(3))
    g = _BY_INTERPRETER.get(program)
    if g is None:
        # python3.12, ruby2.7, ...
        g = _BY_INTERPRETER.get(re.sub(r"[\d.]+$", "", program))
    return g.name if g is not None else None


# Content features: language -> (weight, needles, pattern over the prefix). Each matched
# feature counts once; the classifier needs a clear winner, not a popularity vote.
# Every match of a pattern contains one of its needles (literal substrings), so a
# pattern runs only around where one occurs (see _fires): ``str.find`` is a C substring
# search, where ``re`` steps through every position of the prefix.
_M = re.MULTILINE
_Feature = tuple[int, tuple[str, ...], re.Pattern[str]]
_FEATURES: dict[str, tuple[_Feature, ...]] = {
    "python": (
        # Only Python writes this.
        (4, ("def ",), re.compile(r"^[ \t]*def \w+\(.*\)( -> .+)?:[ \t]*(#.*)?$", _M)),
        (2, ("class ",), re.compile(r"^[ \t]*class \w+(\(.*\))?:[ \t]*$", _M)),
        (2, ("import ",), re.compile(r"^(from [\w.]+ import \w|import \w+( as \w+)?$)", _M)),
        (2, ("self.",), re.compile(r"\bself\.\w+")),
        (
            2,
            ("elif ", "else", "try", "except", "finally"),
            re.compile(r"^[ \t]*(elif .*|else|try|except.*|finally):[ \t]*$", _M),
        ),
        (
            2,
            ("__name__", "__init__", "None", "True", "False"),
            re.compile(r"__name__|__init__|\bNone\b|\bTrue\b|\bFalse\b"),
        ),
        (1, ("@",), re.compile(r"^[ \t]*@\w+", _M)),
        (1, ("#",), re.compile(r"^[ \t]*#", _M)),
        (2, ("print(",), re.compile(r"^[ \t]*print\(", _M)),
        # A bare assignment at the top level: no declaration keyword, type or semicolon.
        (
            2,
            ("=",),
            re.compile(r"^[A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]+=[ \t]+[^=\s][^;\n]*$", _M),
        ),
        (
            2,
            ('"""', "'''"),
            re.compile(r"^[ \t]*(?:[A-Za-z_]\w*[ \t]*=[ \t]*)?[rbuRBU]?(?:\"\"\"|\'\'\')", _M),
        ),
    ),
    "javascript": (
        (2, ("function",), re.compile(r"\bfunction\b\s*\w*\s*\(")),
        (2, ("const", "let", "var"), re.compile(r"\b(const|let|var)\s+[\w$]+\s*=")),
        (1, ("=>",), re.compile(r"=>")),
        (2, ("console.", "document.", "window."), re.compile(r"\bconsole\.\w+\(|\bdocument\.|\bwindow\.")),
        (
            2,
            ("require(", "module.exports", "export default", "import "),
            re.compile(r"\brequire\(['\"]|module\.exports|export default|import .* from ['\"]"),
        ),
        (1, ("===", "!=="), re.compile(r"===|!==")),
        (1, (";",), re.compile(r";[ \t]*$", _M)),
    ),
    "typescript": (
        (3, ("interface",), re.compile(r"\binterface\s+\w+\s*(<[^>]*>)?\s*\{")),
        (
            3,
            ("string", "number", "boolean", "any", "unknown", "void", "never"),
            re.compile(r"[\w)]\s*:\s*(string|number|boolean|any|unknown|void|never)\b"),
        ),
        (2, ("type",), re.compile(r"^\s*(export\s+)?type\s+\w+(<[^>]*>)?\s*=", _M)),
        (
            2,
            ("public", "private", "protected", "readonly"),
            re.compile(r"\b(public|private|protected|readonly)\s+\w+\s*[:(]"),
        ),
        (2, ("const", "let"), re.compile(r"\b(const|let)\s+\w+\s*:\s*\w")),
        (1, ("import ",), re.compile(r"\bimport .* from ['\"]")),
        (1, ("=>",), re.compile(r"=>")),
    ),
    "go": (
        (4, ("package",), re.compile(r"^package\s+\w+\s*$", _M)),
        (3, ("func",), re.compile(r"^func\s+(\([^)]*\)\s*)?\w+\(", _M)),
        (2, (":=",), re.compile(r":=")),
        (2, ("fmt.", "err != nil"), re.compile(r"\bfmt\.\w+\(|\berr != nil\b")),
        (1, ("import",), re.compile(r"^import\s+\(", _M)),
    ),
    "rust": (
        (3, ("fn",), re.compile(r"\b(pub(\([\w:]+\))?\s+)?fn\s+\w+\s*(<[^>]*>)?\(")),
        (2, ("mut",), re.compile(r"\blet\s+mut\b")),
        # (A header ends within three lines: "[^;{]*" ran on to the end of a prefix,
        # from every line start.)
        (
            2,
            ("impl", "trait", "mod", "use"),
            re.compile(r"^\s*(impl|trait|mod|use)\b[^;{\n]*(?:\n[^;{\n]*){0,2}[;{]", _M),
        ),
        (2, ("#[", "#!["), re.compile(r"#!?\[\w+")),
        (2, ("!(", "&self", "&mut"), re.compile(r"\b\w+!\(|&self\b|&mut\b")),
        (1, ("::",), re.compile(r"::")),
        (1, ("->",), re.compile(r"->")),
    ),
    "java": (
        (3, ("class",), re.compile(r"\b(public|private|protected)\s+(static\s+)?(final\s+)?class\s+\w+")),
        (3, ("System.out.", "java."), re.compile(r"\bSystem\.out\.|^import\s+java\.", _M)),
        (
            2,
            ("@Override", "public static void main(String"),
            re.compile(r"@Override|public static void main\(String"),
        ),
        (
            2,
            ("public", "private", "protected"),
            re.compile(r"\b(public|private|protected)\s+(static\s+)?(final\s+)?[\w<>\[\]]+\s+\w+\s*[;=(]"),
        ),
        (1, ("package",), re.compile(r"^package\s+[\w.]+;", _M)),
    ),
    "c": (
        (3, ("#include",), re.compile(r"^#include\s*<\w+\.h>", _M)),
        (
            2,
            ("printf", "malloc", "free", "sizeof", "memcpy"),
            re.compile(r"\b(printf|malloc|free|sizeof|fprintf|memcpy)\s*\("),
        ),
        (
            2,
            ("int", "void", "char", "unsigned", "long", "double"),
            re.compile(r"^(static\s+)?(int|void|char|unsigned|long|double)\s+\*?\w+\s*\(", _M),
        ),
        (1, ("struct",), re.compile(r"\bstruct\s+\w+\s*[{*]")),
        (1, ("#define", "#ifndef", "#ifdef", "#endif"), re.compile(r"^#(define|ifndef|ifdef|endif)\b", _M)),
        (1, ("->",), re.compile(r"->")),
    ),
    "cpp": (
        (
            3,
            ("#include",),
            re.compile(r"^#include\s*<(iostream|vector|string|memory|map|algorithm|utility)>", _M),
        ),
        (3, ("std::",), re.compile(r"\bstd::")),
        (
            2,
            ("template", "namespace"),
            re.compile(r"\btemplate\s*<|\bnamespace\s+\w+\s*\{|\busing namespace\b"),
        ),
        (2, ("public", "private", "protected"), re.compile(r"^\s*(public|private|protected):\s*$", _M)),
        (1, ("nullptr", "constexpr", "auto"), re.compile(r"\b(nullptr|constexpr|auto)\b")),
        (1, ("#include",), re.compile(r"^#include\b", _M)),
    ),
    "csharp": (
        (3, ("System",), re.compile(r"^using\s+System(\.[\w.]+)?;", _M)),
        (3, ("Console.Write",), re.compile(r"\bConsole\.Write(Line)?\(")),
        (2, ("get;",), re.compile(r"\{\s*get;\s*(private\s+)?set;\s*\}")),
        (2, ("namespace",), re.compile(r"^\s*namespace\s+[\w.]+\s*[{;]?\s*$", _M)),
        (2, ("class",), re.compile(r"\b(public|private|internal)\s+(static\s+)?(partial\s+)?class\s+\w+")),
    ),
    "ruby": (
        (3, ("def",), re.compile(r"^\s*def\s+(self\.)?\w+[?!]?(\(.*\))?\s*$", _M)),
        (2, ("end",), re.compile(r"^\s*end\s*$", _M)),
        (
            2,
            ("puts", "attr_accessor", "attr_reader", "require_relative"),
            re.compile(r"\b(puts|attr_accessor|attr_reader|require_relative)\b"),
        ),
        (2, ("|",), re.compile(r"\bdo\s*\|[\w, ]+\|")),
        (1, ("module", "class"), re.compile(r"^\s*(module|class)\s+[A-Z]\w*(\s*<\s*\w+)?\s*$", _M)),
    ),
    "swift": (
        # A function with a labelled parameter or a return arrow (Go's has neither).
        (
            4,
            ("func ",),
            re.compile(r"\bfunc \w+(?:<[^>\n]*>)?\((?:[^)\n]*\w: [^)\n]*)?\)[^{\n]*?(?:->[^{\n]*)?\{", _M),
        ),
        (4, ("guard ",), re.compile(r"^[ \t]*guard (?:let|var) \w+|^[ \t]*guard .* else \{", _M)),
        (
            3,
            ("import ",),
            re.compile(
                r"^import (?:Foundation|UIKit|SwiftUI|Combine|XCTest|AppKit|Dispatch|Observation)$", _M
            ),
        ),
        (2, ("if let ", "if var "), re.compile(r"\bif (?:let|var) \w+")),
        (
            2,
            ("@",),
            re.compile(
                r"@(?:State|Published|objc|IBOutlet|IBAction|escaping|MainActor|ObservedObject|Binding)\b"
            ),
        ),
        (2, ("\\(",), re.compile(r'"[^"\n]*\\\([^)"\n]*\)[^"\n]*"')),
        (
            1,
            ("let ", "var "),
            re.compile(
                r"^[ \t]*(?:(?:private|public|static|weak|lazy)[ \t]+)*"
                r"(?:let|var) \w+: [A-Z][\w<>\[\]?]*[^;\n]*$",
                _M,
            ),
        ),
    ),
    "kotlin": (
        (
            4,
            ("fun ",),
            re.compile(
                r"^[ \t]*(?:(?:public|private|internal|protected|override|suspend|inline|open|operator|infix)"
                r"[ \t]+)*fun (?:<[^>\n]*>[ \t]*)?(?:[\w.]+\.)?\w+\([^\n]*\)[^\n;]*(?:\{|=)",
                _M,
            ),
        ),
        (
            3,
            ("val ",),
            re.compile(
                r"^[ \t]*(?:(?:private|public|internal|protected|override|const|lateinit)[ \t]+)*"
                r"val \w+(?:[ \t]*:[ \t]*[\w<>?, .]+)?[ \t]*(?:=|by\b)",
                _M,
            ),
        ),
        (3, ("package ",), re.compile(r"^package \w+(?:\.\w+)+[ \t]*$", _M)),
        (
            2,
            ("import ",),
            re.compile(r"^import (?:kotlin|kotlinx|androidx?|org\.jetbrains)\.[\w.*]+[ \t]*$", _M),
        ),
        (
            2,
            ("data class", "sealed class", "sealed interface", "companion object", "object "),
            re.compile(
                r"\b(?:data class|sealed class|sealed interface|companion object)\b|^[ \t]*object \w+", _M
            ),
        ),
        (2, ("when",), re.compile(r"\bwhen[ \t]*(?:\([^\n]*\))?[ \t]*\{")),
        (2, ("?.let", "!!."), re.compile(r"\?\.let[ \t]*\{|\w!!\.")),
    ),
    "bash": (
        (3, ("fi", "done", "esac"), re.compile(r"^\s*(fi|done|esac)\s*$", _M)),
        (2, ("[",), re.compile(r"^\s*(if|while)\s+\[\[? ", _M)),
        (2, ("$",), re.compile(r"\$\{?\w+\}?|\$\(")),
        (2, ("echo", "export", "source", "local"), re.compile(r"^\s*(echo|export|source|local)\s", _M)),
        (1, ("()",), re.compile(r"^\s*\w+\(\)\s*\{", _M)),
    ),
}
_PREFIX = 8192
_MIN_SCORE = 4
_MARGIN = 2
_JSON_START = re.compile(r'\s*(\{\s*("|\})|\[\s*[\[{"\d\-tfn\]])')


# A feature's pattern is searched only near its needles, from the start of the line
# before one to the end of the line after it. A window ends at a line end, where ``$``
# and ``\b`` read as they do in the whole prefix, so a match in a window is a match in
# the prefix. Patterns that start with ``\b`` or ``^`` give ``re`` no literal to skip
# ahead by, so one search over 8 KiB costs 0.1-0.3 ms, where the needles of most
# features occur in a few places. Past _WINDOWS windows the rest is searched at once.
_WINDOWS = 6


def _fires(needles: tuple[str, ...], pattern: re.Pattern[str], prefix: str, at: int | None = None) -> bool:
    """Whether ``pattern`` matches around an occurrence of one of ``needles`` (the
    first of which is at ``at``, when the caller knows it: -1 for none)."""
    pos = 0
    size = len(prefix)
    for _ in range(_WINDOWS):
        if at is None:
            at = size
            for needle in needles:
                found = prefix.find(needle, pos)
                if 0 <= found < at:
                    at = found
            if at == size:
                return False
        elif at < 0:
            return False
        line = prefix.rfind("\n", 0, at)  # the end of the line before, or -1
        lo = prefix.rfind("\n", 0, line) + 1 if line > 0 else 0
        hi = prefix.find("\n", prefix.find("\n", at) + 1)
        if hi < 0:
            hi = size
        if pattern.search(prefix, lo, hi) is not None:
            return True
        if hi == size:
            return False
        pos = prefix.rfind("\n", 0, hi) + 1  # the next window may start on the last line
        at = None
    return pattern.search(prefix, pos) is not None


class _AtLineStart:
    """Whether ``body`` occurs at the start of a line, after spaces or tabs: a search
    for a newline, which ``re`` finds by its literal, then the body (and a match at the
    very start). A pattern that starts with ``^`` (or ``^\\s*``) gives ``re`` nothing to
    skip ahead by, and steps through every position of the prefix."""

    __slots__ = ("_after", "_first")

    def __init__(self, body: str, indent: str = r"[^\S\n]*") -> None:
        self._after = re.compile("\n" + indent + body, _M)
        self._first = re.compile(indent + body, _M)

    def __call__(self, text: str) -> bool:
        return self._after.search(text) is not None or self._first.match(text) is not None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every line that starts with ``body``, in order (the first line's included)."""
        first = self._first.match(text)
        if first is not None:
            yield first
        yield from self._after.finditer(text)


def _anywhere(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda text: compiled.search(text) is not None


# Cheap tests that every match of a feature's pattern passes (a part of the match with
# a literal or a line start to find it by, the leading ``\b`` or ``^\s*`` left off),
# run on the prefix before the pattern's windows: most features whose needles are
# common words ("string", "const", "fi", "class", "def") do not match, and their
# windows, then a search of the whole prefix, cost 20-120 us each (kind="auto" took
# 0.74 ms a file, on average over 3,000 files installed here; 0.47 ms with these tests
# and _detect's line-start searches). A test's False is the pattern's; its True runs
# the pattern. tests/chunking/test_detect.py checks that each passes wherever its
# pattern matches.
_PREFILTERS: dict[re.Pattern[str], Callable[[str], bool]] = {}


def _prefilter(language: str, index: int, test: Callable[[str], bool]) -> None:
    _PREFILTERS[_FEATURES[language][index][2]] = test


_prefilter("python", 4, _AtLineStart(r"(?:elif |else|try|except|finally)[^\n]*:[ \t]*(?:\n|\Z)", r"[ \t]*"))
_prefilter("javascript", 1, _anywhere(r"(?:const|let|var)\s+[\w$]+\s*="))
_prefilter("typescript", 1, _anywhere(r":\s*(?:string|number|boolean|any|unknown|void|never)\b"))
_prefilter("typescript", 2, _anywhere(r"type\s+\w+(?:<[^>]*>)?\s*="))
_prefilter("typescript", 4, _anywhere(r"(?:const|let)\s+\w+\s*:\s*\w"))
_prefilter("rust", 0, _anywhere(r"fn\s+\w+\s*(?:<[^>]*>)?\("))
_prefilter("rust", 2, _AtLineStart(r"(?:impl|trait|mod|use)\b[^;{\n]*(?:\n[^;{\n]*){0,2}[;{]"))
_prefilter("java", 0, _anywhere(r"(?:public|private|protected)\s+(?:static\s+)?(?:final\s+)?class\s+\w"))
_prefilter("c", 2, _AtLineStart(r"(?:static\s+)?(?:int|void|char|unsigned|long|double)\s+\*?\w+\s*\(", ""))
_prefilter("csharp", 4, _anywhere(r"(?:public|private|internal)\s+(?:static\s+)?(?:partial\s+)?class\s+\w"))
_prefilter("ruby", 0, _AtLineStart(r"def\s"))
_prefilter("bash", 0, _AtLineStart(r"(?:fi|done|esac)[^\S\n]*(?:\n|\Z)"))
_prefilter("bash", 3, _AtLineStart(r"(?:echo|export|source|local)\s"))
_prefilter("bash", 1, _AtLineStart(r"(?:if|while)\s+\[\[? "))
_prefilter("bash", 4, _AtLineStart(r"\w+\(\)\s*\{"))
_prefilter("python", 9, _AtLineStart(_FEATURES["python"][9][2].pattern.removeprefix("^"), ""))
_prefilter("java", 1, _anywhere(r"System\.out\.|import\s+java\."))
_prefilter("java", 4, _AtLineStart(r"package\s+[\w.]+;", ""))
_prefilter("go", 0, _AtLineStart(r"package\s+\w+\s*$", ""))
_prefilter("ruby", 1, _AtLineStart(r"end\s*$"))
_prefilter("c", 3, _anywhere(r"struct\s+\w+\s*[{*]"))


# Tests that give a feature's answer themselves, in time linear in the prefix, where the
# pattern backtracks: over every ")" and every ":" of a line (a Python def: 80 ms on an
# 8 KiB line of ") -> ") or over every "import " of a line (13 ms). Each answers as
# the pattern's search (tests/chunking/test_detect.py checks it on the corpus, this
# package and generated lines).
_EXACT: dict[re.Pattern[str], Callable[[str], bool]] = {}

_PY_DEF = _AtLineStart(r"def \w+\(([^\n]*)", r"[ \t]*")
_CLOSE_COLON = re.compile(r"\):[ \t]*(?:#|$)")
_COLON = re.compile(r":[ \t]*(?:#|$)")


def _python_def(text: str) -> bool:
    """``^[ \\t]*def \\w+\\(.*\\)( -> .+)?:[ \\t]*(#.*)?$`` (multi-line) anywhere: after
    ``def name(``, a ":" followed by blanks then the line's end or a comment, with ")"
    just before it or with ") -> " and a character between."""
    for m in _PY_DEF.finditer(text):
        rest = m.group(1)
        if _CLOSE_COLON.search(rest) is not None:
            return True
        arrow = rest.find(") -> ")
        if arrow >= 0 and _COLON.search(rest, arrow + 6) is not None:
            return True
    return False


_IMPORT_FROM = re.compile(r""" from ['"]""")
_WORD = re.compile(r"\w")


def _import_from(text: str, bounded: bool) -> bool:
    """``import .* from ['"]`` anywhere (``\\bimport`` where ``bounded``): on each line,
    the first "import " that may start a match, then " from " and a quote past it."""
    at = text.find("import ")
    while at >= 0:
        if bounded and at > 0 and _WORD.match(text, at - 1) is not None:
            at = text.find("import ", at + 1)
            continue
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        if _IMPORT_FROM.search(text, at + 7, end) is not None:
            return True
        at = text.find("import ", end)
    return False


_REQUIRE = re.compile(r"""require\(['"]""")


def _javascript_module(text: str) -> bool:
    """``\\brequire\\(['"]|module\\.exports|export default|import .* from ['"]``."""
    if "module.exports" in text or "export default" in text:
        return True
    for m in _REQUIRE.finditer(text):
        if m.start() == 0 or _WORD.match(text, m.start() - 1) is None:
            return True
    return _import_from(text, False)


_EXACT[_FEATURES["python"][0][2]] = _python_def
_EXACT[_FEATURES["javascript"][4][2]] = _javascript_module
_EXACT[_FEATURES["typescript"][5][2]] = functools.partial(_import_from, bounded=True)


# Every needle of every feature, found in one pass over the prefix (see first_found).
_NEEDLES: tuple[str, ...] = tuple(
    dict.fromkeys(n for features in _FEATURES.values() for _w, needles, _p in features for n in needles)
)
_NEEDLE_INDEX = {n: i for i, n in enumerate(_NEEDLES)}


def _first_found(prefix: str) -> list[int]:
    """Where each of _NEEDLES first occurs in ``prefix`` (-1 for nowhere)."""
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("first_found"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        units, kind = _accel.units(prefix, keep=False)
        return kernels.first_found(units, kind, _NEEDLES)
    return [prefix.find(n) for n in _NEEDLES]


def _score(features: tuple[_Feature, ...], prefix: str, first: Sequence[int] | None = None) -> int:
    """The summed weights of the ``features`` found in ``prefix`` (``first``: what
    _first_found gives for it, when the caller has it)."""
    if first is None:
        first = _first_found(prefix)
    score = 0
    for weight, needles, pattern in features:
        at = -1
        for needle in needles:
            found = first[_NEEDLE_INDEX[needle]]
            if found >= 0 and (at < 0 or found < at):
                at = found
        if at < 0:
            continue
        exact = _EXACT.get(pattern)
        if exact is not None:
            if exact(prefix):
                score += weight
            continue
        test = _PREFILTERS.get(pattern)
        if (test is None or test(prefix)) and _fires(needles, pattern, prefix, at):
            score += weight
    return score


def detect_language(text: str, filename: str | None = None) -> tuple[str | None, str]:
    """Guess the language of ``text``: ``(name or None, why)``.

    File name first, then a shebang, then weighted content features over the first
    8 KiB. Returns ``None`` (with the reason) rather than a weak guess.
    """
    if filename:
        name = language_for_filename(filename, text)
        if name is not None:
            return name, f"file name {os.path.basename(filename)!r}"
    prefix = text[:_PREFIX]
    first_line = prefix.split("\n", 1)[0]
    if first_line.startswith("#!"):
        name = _from_shebang(first_line)
        if name is not None:
            return name, f"shebang {first_line.strip()!r}"
    if _JSON_START.match(prefix):
        return "json", "content: starts like a JSON object or array"
    first = _first_found(prefix)
    scores = {lang: _score(feats, prefix, first) for lang, feats in _FEATURES.items()}
    # TypeScript and C++ are supersets: their own features only add to the base score.
    scores["typescript"] += scores["javascript"] if scores["typescript"] >= 3 else 0
    scores["cpp"] += scores["c"] if scores["cpp"] >= 3 else 0
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    (best, top), (second, runner_up) = ranked[0], ranked[1]
    if top < _MIN_SCORE:
        return None, f"content: no language recognized (best {best} scored {top} < {_MIN_SCORE})"
    if top - runner_up < _MARGIN:
        return None, f"content: ambiguous between {best} ({top}) and {second} ({runner_up})"
    return best, f"content: {best} features scored {top} (next {second} {runner_up})"
