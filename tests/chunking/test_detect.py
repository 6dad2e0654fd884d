"""kind="auto": one cheap decision per input, explicit hints first."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunker, ChunkingWarning, chunk, detect_kind
from tests.corpus import corpus_files
from tests.invariants import check_chunks

PY = "import os\n\n\ndef main():\n    print(os.getcwd())\n\n\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.parametrize(
    ("text", "kw", "kind"),
    [
        ('{"a": [1, 2, {"b": "c"}]}', {}, "json"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}\n', {}, "jsonl"),
        ("#!/usr/bin/env python3\nprint('hi')\n", {}, "code"),
        (PY, {}, "code"),
        ("anything", {"filename": "main.go"}, "code"),
        ("anything", {"filename": "data.ndjson"}, "jsonl"),
        ("anything", {"filename": "notes.txt"}, "text"),
        ("anything", {"filename": "README.md"}, "markdown"),
        ("anything", {"language": "rust"}, "code"),
        ("# Title\n\nSome text.\n\n## Usage\n\n```python\nprint(1)\n```\n\n- item\n- item\n", {}, "markdown"),
        ("これは普通の文章です。コードではありません。\n\n第二段落です。", {}, "text"),
    ],
)
def test_detect_kind(text: str, kw: dict[str, str], kind: str) -> None:
    assert detect_kind(text, **kw)[0] == kind


def test_prose_about_code_stays_prose() -> None:
    text = (
        "このメモでは Python の asyncio と trio で動くクライアントを def や import を使って説明する。"
        "読み取りループは await で待ち、return で結果を返す。\n\n"
        "  def 受信(データ: bytes) -> list[bytes]:\n      return []\n\n"
        "最後にテストについて書く。入力を一度に全部渡した場合と"
        "一バイトずつ渡した場合で結果は同じでなければならない。" * 3
    )
    assert detect_kind(text)[0] == "text"


def test_auto_chunks_every_corpus_file_losslessly() -> None:
    for cf in corpus_files():
        text = cf.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = Chunker(64).chunk(text, kind="auto", filename=cf.path.name)
        check_chunks(text, chunks, 64)


def test_auto_uses_the_chosen_rules() -> None:
    got = chunk(PY * 20, max_tokens=40, kind="auto")
    assert {c.kind for c in got} == {"code"}
    assert got[0].language == "python"


# -- code that is obviously code, prose that only looks busy ---------------------------

MINIFIED_JS = (
    '!function(e,t){"use strict";var n=function(e){return e&&e.__esModule?e:{default:e}};'
    "function r(e,t){for(var n=0;n<t.length;n++){var r=t[n];r.enumerable=r.enumerable||!1,"
    'r.configurable=!0,"value"in r&&(r.writable=!0),Object.defineProperty(e,r.key,r)}}'
    "var o=function(){function e(t){this.items=t||[],this.size=this.items.length}"
    "return e.prototype.push=function(e){return this.items.push(e),this.size++,this},"
    "e.prototype.map=function(t){return new e(this.items.map(t))},e}();"
    't.Queue=o,t.default=n(o)}(this,"undefined"!=typeof exports?exports:{});'
)

CODE = {
    "assignment and call": ("x = 1\nprint(x)", "python"),
    "imports and calls": (
        "import os\nimport sys\n\npath = os.path.join(sys.argv[1], 'out')\nprint(path)\n",
        "python",
    ),
    "a function and a loop": ("def f(x):\n    return x\n\n\nfor i in [1, 2]:\n    print(f(i))\n", "python"),
    "JavaScript without semicolons": (
        "const a = require('x')\nmodule.exports = function (b) {\n  return a(b)\n}\n",
        "javascript",
    ),
    "minified JavaScript on one line": (MINIFIED_JS * 20, "javascript"),
    "a Python module holding one long literal": (
        'HEADER = "short"\n\nTEMPLATE = """' + "lorem ipsum dolor sit amet " * 300 + '"""\n',
        "python",
    ),
}


@pytest.mark.parametrize("name", list(CODE))
def test_obvious_code_is_code(name: str) -> None:
    text, language = CODE[name]
    kind, why = detect_kind(text)
    assert kind == "code", why
    got = chunk(text, max_tokens=16)
    assert {c.kind for c in got} == {"code"}
    assert got[0].language == language


def test_code_in_a_language_without_a_grammar_is_said_to_be_code() -> None:
    css = "body {\n  margin: 0;\n  color: #333;\n}\n\n.nav > a {\n  display: none;\n}\n" * 4
    kind, why = detect_kind(css)
    assert kind == "code" and "no language recognized" in why
    with pytest.warns(ChunkingWarning, match="found code"):
        got = chunk(css, max_tokens=16)
    check_chunks(css, got, 16)


SWIFT = r"""import Foundation

struct User: Codable, Identifiable {
    let id: UUID
    var name: String
    var email: String?
}

final class UserStore {
    private var users: [UUID: User] = [:]
    private let queue = DispatchQueue(label: "store")

    func add(_ user: User) {
        queue.sync { users[user.id] = user }
    }

    func find(named name: String) -> User? {
        guard !name.isEmpty else { return nil }
        return users.values.first { $0.name == name }
    }

    func describe(_ user: User) -> String {
        if let email = user.email {
            return "\(user.name) <\(email)>"
        }
        return user.name
    }
}

enum LoadError: Error {
    case missing
    case malformed(String)
}

extension UserStore {
    func load(from url: URL) throws -> [User] {
        let data = try Data(contentsOf: url)
        return try JSONDecoder().decode([User].self, from: data)
    }
}
"""

KOTLIN = r"""package com.example.users

import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.map

data class User(val id: Long, val name: String, val email: String? = null)

sealed class Result<out T> {
    data class Ok<T>(val value: T) : Result<T>()
    data class Err(val message: String) : Result<Nothing>()
}

class UserRepository(private val api: UserApi) {
    private val cache = mutableMapOf<Long, User>()

    suspend fun find(id: Long): Result<User> {
        val cached = cache[id]
        if (cached != null) return Result.Ok(cached)
        return try {
            val user = api.fetch(id)
            cache[id] = user
            Result.Ok(user)
        } catch (e: Exception) {
            Result.Err(e.message ?: "unknown")
        }
    }

    fun describe(user: User): String = when (user.email) {
        null -> user.name
        else -> "${user.name} <${user.email}>"
    }

    fun names(users: Flow<List<User>>): Flow<List<String>> = users.map { list -> list.map { it.name } }

    companion object {
        const val TIMEOUT = 30
    }
}
"""


@pytest.mark.parametrize(("source", "name"), [(SWIFT, "swift"), (KOTLIN, "kotlin")])
def test_swift_and_kotlin_without_a_file_name_are_named_not_the_closest_language(
    source: str, name: str
) -> None:
    """With no file name, Swift was detected as Python and Kotlin as Java (then parsed
    by the wrong grammar); both are named now (no grammar installed here: prose rules,
    with the warning that says which to install)."""
    kind, why = detect_kind(source)
    assert kind == "code" and f"{name} features" in why, why
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ChunkingWarning)
        got = chunk(source, max_tokens=32)
    check_chunks(source, got, 32)
    assert any(f"the {name} grammar is not installed" in str(w.message) for w in seen)


def test_a_php_file_is_php_not_the_closest_language_the_classifier_knows() -> None:
    php = (
        "<?php\n/**\n * Bootstraps the runtime.\n */\nnamespace App;\n\n"
        "use google\\appengine\\runtime\\ApiProxy;\n\n"
        "function setup(array $options): void {\n    $proxy = new \\ApiProxy($options['host']);\n"
        "    ApiProxy::setApiProxy($proxy);\n}\n"
    ) * 3
    assert detect_kind(php) == ("code", "content: a PHP open tag")
    assert detect_kind("\ufeff  <?PHP echo 1;")[0] == "code"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)  # no PHP grammar here: prose rules
        got = chunk(php, max_tokens=16)
    check_chunks(php, got, 16)
    assert all(c.language in (None, "php") for c in got)


DOCKERFILE = """# syntax=docker/dockerfile:1.6
ARG PYTHON_VERSION=3.11
FROM python:${PYTHON_VERSION}-slim AS base

# Install system deps
RUN apt-get update \\
 && apt-get install -y --no-install-recommends build-essential curl \\
 && rm -rf /var/lib/apt/lists/*

## Application layer
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt
COPY . .
EXPOSE 8000
CMD ["python", "-m", "app"]
"""


def test_a_dockerfile_without_its_name_is_lines_not_markdown() -> None:
    assert detect_kind(DOCKERFILE) == ("text", "content: Dockerfile instructions")
    # Prose that happens to start a line with an instruction's word stays what it was.
    assert detect_kind("# Title\n\nFROM the start, we run.\n\n## Part\n\nSome text.\n")[0] == "markdown"
    got = chunk(DOCKERFILE, max_tokens=24)
    check_chunks(DOCKERFILE, got, 24)
    assert all(c.path is None for c in got)  # no comment became a heading


def test_five_megabytes_of_minified_javascript_are_read_from_a_bounded_sample() -> None:
    class Sample(str):
        """Records how far into the text detection reads."""

        furthest = 0

        def __getitem__(self, key: object) -> str:
            stop = key.stop if isinstance(key, slice) else key
            Sample.furthest = max(Sample.furthest, len(self) if stop is None else int(stop))  # type: ignore[call-overload]
            return str.__getitem__(self, key)  # type: ignore[index]

    text = Sample(MINIFIED_JS * (5_000_000 // len(MINIFIED_JS)))
    assert len(text) > 4_900_000 and "\n" not in text
    assert detect_kind(text) == ("code", detect_kind(str(text[:8192]))[1])
    assert Sample.furthest <= 8192


PROSE = {
    "essay": (
        "The harbour was quiet that morning. Fishing boats (most of them older than their "
        "crews) rocked at their moorings; gulls argued over the nets. By nine o'clock the "
        "fog had lifted: the ferry to the island left on time, carrying 42 passengers, two "
        "cars and a crate of oranges.\n\n"
        "Nobody on board knew that the captain had been up all night. She had spent it "
        "reading old logbooks, looking for a pattern in the tides = or so she told the "
        "harbourmaster later (he did not believe her, and said so).\n\n"
        "In the end the inquiry found nothing wrong. The report, all 31 pages of it, "
        "concluded that the crossing had been 'uneventful, if slow'; the oranges arrived "
        "in perfect condition.\n"
    ),
    "hard-wrapped prose": (
        "When we first set up the build farm, every job ran on the same machine,\n"
        "which meant that a slow test (and there were many of them) held up every\n"
        "other team. We tried queues, priorities and, for one memorable week, a\n"
        "rota written on a whiteboard; none of it worked for long. What finally\n"
        "helped was boring: more machines, fewer tests, and a rule that nobody\n"
        "merges on Friday afternoon.\n"
    ),
    "prose that talks about code": (
        "To print a value in Python you call print(), e.g. print(x) after x = 1. In\n"
        "JavaScript the same thing is console.log(x); in Go it is fmt.Println(x). Each\n"
        "language has its own habits, but the idea is the same: the program writes the\n"
        "value where you can see it.\n"
    ),
    "contract clauses": (
        "The parties agree as follows:\n"
        "(a) the Supplier shall deliver the Goods to the Premises on the Delivery Date;\n"
        "(b) the Customer shall pay the Price within thirty (30) days of the invoice;\n"
        "(c) risk in the Goods passes to the Customer on delivery;\n"
        "(d) neither party shall be liable for delays caused by events beyond its control.\n"
    ),
    "a letter": (
        "Hi Anna,\n\nThanks for the photos (the one of the lighthouse is wonderful). We "
        "arrive on the 14th, around 6 pm; if the train is late I'll call.\n\n"
        "See you soon,\nBob\n\n-- \nBob Smith, 12 Harbour Road\n"
    ),
    "a poem": (
        "The tide comes in, the tide goes out,\nthe boats lie down, the boats get up,\n"
        "and no one asks what it's about,\nthe sea has never had enough.\n"
    ),
    "meeting notes": (
        "Standup, Tuesday\n10:00 - 10:15 round of updates\n10:15 - 10:30 release plan (Mia)\n"
        "Decisions: ship on Thursday; Leo owns the changelog.\n"
    ),
}
MARKDOWN = (
    "# Release notes\n\n## 2.4.0\n\n- The `chunk()` function takes `overlap=`.\n"
    "- Fixed a crash when `x = None` was passed.\n\n"
    "```python\nfrom sdk import chunk\nchunks = chunk(text, max_tokens=512)\nprint(len(chunks))\n```\n\n"
    "See the [docs](https://example.com) for details.\n"
)


@pytest.mark.parametrize("name", list(PROSE))
def test_prose_stays_prose(name: str) -> None:
    text = PROSE[name]
    assert detect_kind(text)[0] in ("text", "markdown"), detect_kind(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning about code either
        chunk(text, max_tokens=16)


def test_markdown_with_code_stays_markdown() -> None:
    assert detect_kind(MARKDOWN)[0] == "markdown"


def test_corpus_groups_are_told_apart() -> None:
    for cf in corpus_files():
        if cf.group not in ("prose", "markdown", "code"):
            continue
        kind, why = detect_kind(cf.read())
        if cf.group == "code":
            assert kind in ("code", "json"), (cf.name, why)
        else:
            assert kind in ("text", "markdown"), (cf.name, why)


_YAML = """# Deployment settings
# Edit with care.

server:
  # the port to listen on
  port: 8080
  host: 0.0.0.0
  tls:
    enabled: true

# Workers
workers:
  - name: ingest
    replicas: 3
"""
_TOML = (
    '# Project\n\n[project]\nname = "demo"\nversion = "1.0"\n\n# deps\n[project.dependencies]\nhttpx = "*"\n'
)
_INI = "; settings\n# comment\n[main]\nkey=value\nother = 2\n\n[db]\nurl = postgres://x\n"
_COMMENTED = (
    "# The login shell.\n# Default: DSHELL=/bin/bash\n#DSHELL=/bin/bash\n\n"
    "# Homes\n#DHOME=/home\n#SKEL=/etc/skel\n"
)


@pytest.mark.parametrize("text", [_YAML, _TOML, _INI, _COMMENTED], ids=["yaml", "toml", "ini", "commented"])
def test_configuration_without_a_file_name_is_lines_not_markdown(text: str) -> None:
    kind, why = detect_kind(text)
    assert kind == "text" and "configuration" in why
    assert all(c.path is None for c in chunk(text, 16))  # no "#" comment became a heading


@pytest.mark.parametrize(
    "text",
    [
        "# Changelog\n\n## 1.2\n\n- fixed: the parser\n- added: a flag\n\n## 1.1\n\n- first release\n",
        "# Title\n\nA paragraph of prose that explains the idea at some length.\n\n## Usage\n\nRun it.\n",
    ],
)
def test_markdown_with_colons_and_lists_stays_markdown(text: str) -> None:
    assert detect_kind(text)[0] == "markdown"


def test_every_feature_match_holds_one_of_its_needles() -> None:
    """The classifier runs a feature's pattern only when one of its needles occurs in
    the prefix; that is sound only if every match contains a needle. Checked on every
    match in the corpus, this package's own source and the samples above."""
    from pathlib import Path

    from sdk.chunking._languages import _FEATURES

    texts = [f.path.read_text(encoding="utf-8") for f in corpus_files()]
    texts += [p.read_text(encoding="utf-8") for p in Path(__file__).parents[2].joinpath("sdk").rglob("*.py")]
    texts += [text for text, _ in CODE.values()] + [PY]
    matches = 0
    for features in _FEATURES.values():
        for _weight, needles, pattern in features:
            for text in texts:
                for m in pattern.finditer(text):
                    matches += 1
                    assert any(n in m.group(0) for n in needles), (pattern.pattern, m.group(0))
    assert matches > 1000


def test_needles_change_no_verdict() -> None:
    """Scores with the needle windows equal scores from every pattern run over the
    whole prefix, on every corpus file."""
    from sdk.chunking._languages import _FEATURES, _score

    for f in corpus_files():
        prefix = f.path.read_text(encoding="utf-8")[:8192]
        for features in _FEATURES.values():
            full = sum(w for w, _n, p in features if p.search(prefix))
            assert _score(features, prefix) == full, f.path


_LINES = (
    "def f(x):",
    "    return x",
    "int main(void) {",
    "}",
    "let mut v = vec![];",
    "many people use this for anything",
    "  end",
    "fi",
    "const x: string = 'a';",
    "{",
    "    get; set;",
    "import os",
    "",
    "    if [[ -f x ]]; then echo done; fi",
    "interface Foo",
    "self.value = None",
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=40))
def test_a_feature_found_in_a_window_is_in_the_prefix(lines: list[str]) -> None:
    """A window ends at a line end and starts at a line start, so what matches in it
    matches in the whole prefix; and every match within one line is found."""
    from sdk.chunking._languages import _FEATURES, _fires

    prefix = "\n".join(lines)
    for features in _FEATURES.values():
        for _w, needles, pattern in features:
            matches = [m.group(0) for m in pattern.finditer(prefix)]
            fired = _fires(needles, pattern, prefix)
            assert not fired or matches, pattern.pattern
            if any("\n" not in m for m in matches):
                assert fired, pattern.pattern


def test_a_feature_past_many_spurious_needles_is_found() -> None:
    """Past its first few windows, the rest of the prefix is searched at once."""
    from sdk.chunking._languages import _fires

    pattern = re.compile(r"^\s*(fi|done|esac)\s*$", re.MULTILINE)
    prose = "\n".join(f"line {i}: the file is done with it and find finishes." for i in range(100))
    assert not _fires(("fi", "done", "esac"), pattern, prose)
    assert _fires(("fi", "done", "esac"), pattern, prose + "\nfi\n")
    # a match that starts on the line before its needle's
    brace = re.compile(r"\{\s*get;\s*(private\s+)?set;\s*\}")
    assert _fires(("get;",), brace, "class A\n{\n    get; set; }\n")


def _detect_texts() -> list[str]:
    from pathlib import Path

    texts = [f.path.read_text(encoding="utf-8") for f in corpus_files()]
    texts += [p.read_text(encoding="utf-8") for p in Path(__file__).parents[2].joinpath("sdk").rglob("*.py")]
    return texts + [text for text, _ in CODE.values()] + [PY]


def test_every_prefilter_passes_where_its_pattern_matches() -> None:
    """A feature's prefilter runs first and its False is taken as the pattern's: it must
    pass on every text and every line where the pattern matches (and it says no to
    most texts where the pattern does not, or it would only cost time)."""
    from sdk.chunking._languages import _EXACT, _FEATURES, _PREFILTERS

    patterns = {p for features in _FEATURES.values() for _w, _n, p in features}
    assert _PREFILTERS and set(_PREFILTERS) <= patterns
    assert not set(_PREFILTERS) & set(_EXACT)  # an exact test is not filtered first
    texts = _detect_texts()
    pieces = [ln for text in texts for ln in text.splitlines()] + texts
    pieces += [piece.replace("\n", "\r\n") for piece in texts] + ["  " + t for t in texts]
    rejected = 0
    for pattern, test in _PREFILTERS.items():
        for piece in pieces:
            if pattern.search(piece) is not None:
                assert test(piece), (pattern.pattern, piece[:200])
            elif not test(piece):
                rejected += 1
    assert rejected > 0.5 * len(pieces) * len(_PREFILTERS)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*_LINES, "\tfi  ", " \f end", "package main", "f() {", "x = 1  "]), max_size=30)
)
def test_prefilters_on_mixed_lines(lines: list[str]) -> None:
    from sdk.chunking._languages import _PREFILTERS

    for sep in ("\n", "\n\n  ", "\r\n"):
        prefix = sep.join(lines)
        for pattern, test in _PREFILTERS.items():
            if pattern.search(prefix) is not None:
                assert test(prefix), (pattern.pattern, prefix)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "# h",
                "   ## h",
                "    # no",
                "```py",
                " ~~~",
                "- a",
                "1. b",
                "> q",
                "|a|b|",
                "[x]:",
                "[x",
                "y]: z",
                "",
                "text",
            ]
        ),
        max_size=30,
    )
)
def test_markdown_marks_are_counted_as_at_line_starts(lines: list[str]) -> None:
    """The marks are searched from the newline before them (a faster search); the
    counts are those of the same patterns anchored with ``^`` in multi-line mode."""
    from sdk.chunking import _detect

    prefix = "\n".join(lines)
    anchored = [
        re.compile("^" + p.pattern.removeprefix("\\n"), re.M)
        for p in (_detect._MD_HEADING, _detect._MD_FENCE, _detect._MD_OTHER)
    ]
    heading, fence, other = (len(p.findall(prefix)) for p in anchored)
    assert _detect._markdown_signals("\n" + prefix) == 2 * heading + 3 * fence + min(other, 6)


def test_every_keyword_of_a_keyword_line_is_a_syntax_lead() -> None:
    """_SYNTAX_LEADS is written out apart from _KEYWORD_LINE: a keyword added to the
    pattern must be added to the leads, or its lines would never be matched."""
    from sdk.chunking import _detect

    keywords = re.findall(r"(?:\(\?:|\|)([A-Za-z]+)", _detect._KEYWORD_LINE.pattern)
    assert len(keywords) > 30 and all(k.startswith(_detect._SYNTAX_LEADS) for k in keywords)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \t=(){}[]#;:.abcdefiklmnoprstuyz_$-+*/<>?!\"'", max_size=60))
def test_a_line_with_syntax_holds_what_the_cheap_test_looks_for(line: str) -> None:
    """_code_evidence runs _SYNTAX_START only on lines that hold "=", "(" and ")", or a
    keyword or closing bracket first (_SYNTAX_LEADS): every line it matches does."""
    from sdk.chunking import _detect

    samples = [line, *(ln for text in _detect_texts()[:40] for ln in text.splitlines())]
    for ln in samples:
        if _detect._SYNTAX_START.match(ln) is not None:
            assert (
                "=" in ln or ("(" in ln and ")" in ln) or ln.lstrip(" \t").startswith(_detect._SYNTAX_LEADS)
            )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["key: value", "a = 1", "[server]", "# note", "- item", "---", "", "plain words here", "x"]
        ),
        max_size=260,
    )
)
def test_configuration_is_judged_as_by_every_line(lines: list[str]) -> None:
    """_looks_like_config stops once the lines left could not make it configuration:
    the same answer as counting all 200 lines."""
    from sdk.chunking import _detect

    keyed = other = 0
    for ln in lines[:200]:
        if not ln.strip():
            continue
        if _detect._CONFIG_LINE.match(ln):
            keyed += 1
        elif not _detect._CONFIG_NEUTRAL.match(ln):
            other += 1
    expected = keyed >= _detect._CONFIG_MIN_LINES and keyed >= _detect._CONFIG_SHARE * (keyed + other)
    assert _detect._looks_like_config("\n".join(lines)) == expected


_EXACT_BITS = [
    "def f(",
    "def g(x",
    ")",
    ") -> ",
    ":",
    " # c",
    "  ",
    "\t",
    "x",
    "\n",
    "import ",
    "import a",
    " from '",
    ' from "x',
    "from ",
    "require('",
    '_require("',
    "module.exports",
    "export default",
    "é",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_EXACT_BITS), max_size=40))
def test_a_linear_test_answers_as_its_pattern(bits: list[str]) -> None:
    """The tests that stand in for a feature's pattern (_EXACT) give the pattern's own
    answer: on generated lines of the pieces they look for, and on every text and line
    of the corpus and this package."""
    from sdk.chunking._languages import _EXACT

    assert _EXACT
    text = "".join(bits)
    for pattern, test in _EXACT.items():
        assert test(text) == (pattern.search(text) is not None), (pattern.pattern, text)


def test_the_linear_tests_on_real_text() -> None:
    from sdk.chunking._languages import _EXACT

    texts = _detect_texts()
    pieces = [ln for text in texts for ln in text.splitlines()] + texts
    for pattern, test in _EXACT.items():
        for piece in pieces:
            assert test(piece) == (pattern.search(piece) is not None), (pattern.pattern, piece[:200])
    # the shapes that made the patterns backtrack: still their answers
    for text in ["def f(" + ") -> " * 1600 + "x", "import a from " * 600, "def f(" + "):" * 4000 + "x"]:
        for pattern, test in _EXACT.items():
            assert test(text) == (pattern.search(text) is not None)
