"""``chunk(kind="json"/"jsonl")``: cuts only between values, strings cut only when they must."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import count_tokens
from sdk.chunking import Chunk, Chunker, ChunkingWarning, chunk
from sdk.chunking._jsontok import Structure, scan_events
from tests.chunking import examples
from tests.corpus import corpus_files
from tests.invariants import check_chunks

CORPUS = corpus_files(("json", "jsonl"))
_ESCAPE = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S
)


def line_start(text: str, p: int) -> int:
    """The start of ``p``'s indentation when only whitespace precedes it on its line."""
    q = p
    while q > 0 and text[q - 1] in " \t":
        q -= 1
    return q if q == 0 or text[q - 1] in "\r\n" else p


def line_end(text: str, p: int, limit: int) -> int:
    """After the first line break in the whitespace ``text[p:limit]``, else ``limit``."""
    for q in range(p, limit):
        if text[q] == "\n" or (text[q] == "\r" and text[q + 1 : q + 2] != "\n"):
            return q + 1
    return limit


def value_parts(text: str) -> dict[int, tuple[int, int]]:
    """Value start -> the part the splitter keeps whole if it fits: a member's value from
    after the colon, an element from its indentation, both to their line end."""
    st = Structure(text)
    out: dict[int, tuple[int, int]] = {}
    todo = [a for a, _ in st.documents()]
    while todo:
        start = todo.pop()
        if text[start] not in "[{":
            continue
        kids, _ = st.children(start)
        for k in kids:
            a = (
                text.find(":", k.key_end, k.start) + 1
                if k.key_end > k.key_start
                else line_start(text, k.begin)
            )
            comma = text.find(",", k.end, k.next)
            out[k.start] = (a, line_end(text, comma + 1 if comma >= 0 else k.end, k.next))
            todo.append(k.start)
    return out


def check_json(text: str, chunks: list[Chunk], budget: int, lines: bool = False) -> None:
    """The invariants of the issue, on top of the shared ones."""
    check_chunks(text, chunks, budget)
    multi = lines or len(Structure(text).documents()) > 1
    parts = value_parts(text)
    cuts = [c.start for c in chunks[1:]]
    starts: dict[int, str] = {}
    cut_strings: list[tuple[int, int]] = []
    for e in scan_events(text):
        if e.type in ("start_object", "start_array"):
            continue
        inside = [p for p in cuts if e.start < p < e.end]
        if e.type == "key":
            starts[e.start] = f"/{e.doc}{e.pointer}" if multi else e.pointer
            key = text[e.start : e.end]
            assert not inside or count_tokens(key) > budget, ("cut inside a key that fits", key)
            if inside:
                cut_strings.append((e.start, e.end))
            continue
        if e.type in ("number", "literal"):
            assert not inside, ("cut inside a scalar", text[e.start : e.end])
        elif inside and count_tokens(text[e.start : e.end]) <= budget:
            # A value whose own text fits is opened only when its part (with the
            # separator and line end after it) does not.
            a, b = parts.get(e.start, (0, len(text)))
            assert count_tokens(text[a:b]) > budget, ("cut inside a value that fits", e.pointer)
        if e.type == "string":
            if inside:
                cut_strings.append((e.start, e.end))
            escapes = [m.span() for m in _ESCAPE.finditer(text, e.start + 1, e.end - 1)]
            for p in inside:
                assert not any(a < p < b for a, b in escapes), ("cut inside an escape", text[p - 8 : p + 8])
        starts.setdefault(e.start, f"/{e.doc}{e.pointer}" if multi else e.pointer)
    for c in chunks:
        p = c.start
        while p < c.end and text[p] in " \t\r\n\ufeff":
            p += 1
        if p in starts:
            assert c.path == starts[p], (c.text[:40], c.path, starts[p])
        overlaps = any(a < c.end and c.start < b for a, b in cut_strings)
        if any(a < c.start < b for a, b in cut_strings):
            assert c.partial, ("a piece of a cut string is not marked", c.text[:40])
        if c.partial:  # holds a piece of a cut string, or is the lone key of a string member
            assert overlaps or c.text.rstrip().endswith(":"), c.text[:40]


@pytest.mark.parametrize("cf", CORPUS, ids=[cf.name for cf in CORPUS])
@pytest.mark.parametrize("budget", [4, 12, 16, 40, 64, 256])
def test_corpus_invariants(cf: Any, budget: int) -> None:
    text = cf.read()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chunks = Chunker(budget).chunk(text, kind=cf.kind)
    check_json(text, chunks, budget, cf.kind == "jsonl")


json_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",))
    | st.sampled_from(["\n", '"', "\\", "😀", "工", " "]),
    max_size=40,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | json_text,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(json_text, children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=json_values,
    indent=st.sampled_from([None, 2]),
    ascii_=st.booleans(),
    budget=st.sampled_from([3, 8, 16, 40]),
)
def test_generated_invariants(value: Any, indent: Any, ascii_: bool, budget: int) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    check_json(text, chunk(text, budget, kind="json"), budget)


def test_shallowest_level_first() -> None:
    small = {"id": 1, "ok": True}
    big = {"text": "word " * 60}
    text = json.dumps({"small": small, "big": big, "tail": [1, 2, 3]})
    chunks = chunk(text, 24, kind="json")
    check_json(text, chunks, 24)
    assert chunks[0].text == '{"small": {"id": 1, "ok": true}, '  # the small one stays whole
    # The key and the opening bracket stay with the first piece of what they open.
    assert chunks[1].text.startswith('"big": {"text": "word word') and chunks[1].path == "/big"
    assert [c.path for c in chunks][2:] == ["/big/text"] * (len(chunks) - 3) + ["/tail"]
    assert chunks[-1].text == '"tail": [1, 2, 3]}'


def test_long_string_cut_inside_and_marked() -> None:
    sentence = 'Ein Satz mit Wörtern \\"zitiert\\" und \\ud83d\\ude00 Emoji. '
    text = '{"a": 1, "long": "' + sentence * 12 + '", "b": 2}'
    json.loads(text)
    chunks = chunk(text, 20, kind="json")
    check_json(text, chunks, 20)
    partial = [c for c in chunks if c.partial]
    assert len(partial) > 2 and all(c.path == "/long" for c in partial)
    # Every chunk holding a piece of the string is marked, the one with the key too.
    a = text.index('"long"')
    b = text.index('", "b"')
    assert all(c.partial for c in chunks if c.start < b and a < c.end)
    assert not chunks[0].partial and chunks[0].text.startswith('{"a": 1, ')


def test_line_escapes_are_the_preferred_cut_in_strings() -> None:
    body = "\\n\\n".join(f"Paragraph {i}: some words that make it long enough to matter." for i in range(6))
    text = json.dumps({"body": "x"}).replace('"x"', '"' + body + '"')
    chunks = chunk(text, 30, kind="json")
    check_json(text, chunks, 30)
    assert len(chunks) >= 5
    assert all(c.text.endswith("\\n\\n") for c in chunks[:4])


def test_numbers_and_literals_are_never_cut() -> None:
    text = "[" + ", ".join(["12345678901234567890123456789.5e-300", "true", "null"] * 4) + "]"
    chunks = chunk(text, 2, kind="json")
    check_json(text, chunks, 2)
    assert any(c.oversize and c.text.startswith("1234") for c in chunks)


def test_jsonl_values_are_the_top_level() -> None:
    lines = [json.dumps({"i": i, "msg": "hello " * (i % 3)}) for i in range(10)]
    text = "\n".join(lines) + "\n"
    chunks = chunk(text, 30, kind="jsonl")
    check_json(text, chunks, 30, lines=True)
    assert chunks[0].path == "/0"
    assert all(c.text.endswith("\n") for c in chunks)
    assert {c.path for c in chunks} <= {f"/{i}" for i in range(10)}
    # Concatenated values in kind="json" are the same virtual array.
    concat = '{"a": 1}{"b": [2, 3]} 4 "five"'
    got = chunk(concat, 8, kind="json")
    assert got[0].path == "/0" and got[-1].text.endswith('4 "five"')
    assert any(c.path is not None and c.path.startswith("/1") for c in got)
    check_json(concat, got, 8)


def test_malformed_json_falls_back_to_prose_for_the_tail() -> None:
    good = json.dumps({"items": [{"id": i, "name": f"name {i}"} for i in range(8)]})
    text = good + "\n\nNote: the export was cut here, sorry. {broken"
    with pytest.warns(ChunkingWarning, match="line 3"):
        chunks = chunk(text, 16, kind="json")
    check_chunks(text, chunks, 16)
    json_part = [c for c in chunks if c.end <= len(good)]
    assert json_part and all(c.kind == "json" for c in json_part)
    assert any(c.kind == "text" and "sorry" in c.text for c in chunks)
    check_json(good, chunk(good, 16, kind="json"), 16)


def test_truncated_document_keeps_its_complete_members() -> None:
    items = [{"id": i, "name": f"name {i}", "note": "word " * 9} for i in range(9)]
    good = json.dumps({"items": items}, indent=2)
    cut = good.index('"note"', len(good) // 2) + 10  # inside a string of a middle item
    text = good[:cut]
    with pytest.warns(ChunkingWarning, match="Unterminated string"):
        chunks = chunk(text, 64, kind="json")
    check_chunks(text, chunks, 64)
    # Complete elements before the cut stay whole, with their pointers.
    whole = json.dumps(items[1], indent=2).replace("\n", "\n    ")
    assert any(whole in c.text for c in chunks)
    assert {c.path for c in chunks} >= {"", "/items/1"}
    boundaries = {c.start for c in chunks}
    for i in range(4):
        start = text.index(f'"id": {i},') - 6  # the element's "{"
        end = text.index("}", start) + 1
        assert not any(start < b < end for b in boundaries)


def test_truncated_document_is_never_dropped() -> None:
    text = '{"a": [1, 2, 3], "b": "unterminated'
    with pytest.warns(ChunkingWarning):
        chunks = chunk(text, 4, kind="json")
    check_chunks(text, chunks, 4)


def test_jsonl_bad_line_only() -> None:
    text = '{"a": 1}\n{"b": oops}\n{"c": 3}\n'
    with pytest.warns(ChunkingWarning, match="line 2"):
        chunks = chunk(text, 1, kind="jsonl")
    check_chunks(text, chunks, 1)
    kinds = {c.text: (c.kind, c.path) for c in chunks}
    # (" 3" is two tokens: its space is cut off, and both keep the member's pointer)
    assert kinds['"c"'] == kinds[" "] == kinds["3"] == ("json", "/2/c")  # the bad line keeps its number
    assert all(c.kind == "text" for c in chunks if "oops" in c.text)


def test_nan_duplicates_and_bom_are_chunked() -> None:
    text = '\ufeff{"a": NaN, "a": -Infinity, "b": [Infinity]}'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chunks = chunk(text, 3, kind="json")
    check_chunks(text, chunks, 3)
    assert "NaN" in {c.text.strip(", ").split(": ")[-1] for c in chunks}
    assert chunks[0].text.startswith("\ufeff{")


def test_deep_nesting_does_not_recurse() -> None:
    depth = 100_000
    text = "[" * depth + '"leaf"' + "]" * depth
    chunks = chunk(text, 64, kind="json")
    check_chunks(text, chunks, 64)
    assert chunks[0].path == ""
    # A moderately deep document keeps exact pointers down to the flattened level.
    mid = json.dumps({"a": [[[[{"b": "x" * 200}]]]]})
    got = chunk(mid, 8, kind="json")
    # Every chunk holding a piece of the long string is marked, including the first
    # one, which opens at the root and runs into the string.
    assert {c.path for c in got if c.partial} == {"", "/a/0/0/0/0/b"}
    assert all(c.partial for c in got if "x" in c.text)


@pytest.mark.parametrize("kind", ["json", "jsonl"])
@pytest.mark.parametrize(
    ("key", "value"),
    [("long", "1"), ("long", '{"x": 1}'), ("long", "long"), ("k", "long")],
    ids=["key-number", "key-object", "key-and-value", "value"],
)
def test_long_strings_below_the_flattened_depth_are_cut_keys_included(
    kind: str, key: str, value: str
) -> None:
    """Below depth 64 a key over the budget was one oversize chunk (fuzzing found a
    362-token key at budget 167); a key and its string value are cut apart where they do
    not fit, then each inside, as above that depth."""
    cjk = "我第一次去外婆家所在的那个小镇，是在八岁那年的暑假，坐的是一趟慢得出奇的绿皮火车，" * 8
    words = "the quick brown fox jumps over the lazy dog " * 40
    k = cjk if key == "long" else key
    v = json.dumps(words) if value == "long" else value
    text = '{"a":' * 70 + "{" + json.dumps(k, ensure_ascii=False) + ": " + v + "}" * 71
    for budget in (32, 64, 167):
        chunks = chunk(text, budget, kind=kind)  # type: ignore[arg-type]
        check_chunks(text, chunks, budget)
        assert not any(c.oversize for c in chunks)


def test_keys_with_pointer_escapes_and_cjk() -> None:
    text = json.dumps({"a/b": {"~x": "v " * 30}, "ユーザー名": ["山田", "太郎"] * 10}, ensure_ascii=False)
    chunks = chunk(text, 12, kind="json")
    check_json(text, chunks, 12)
    paths = {c.path for c in chunks}
    assert "/a~1b/~0x" in paths
    assert any(p is not None and p.startswith("/ユーザー名") for p in paths)


@pytest.mark.parametrize(
    "unit",
    ['{"a": x}\n', '{"a": 1\n', " \t\u3000\x0b\n\r", '{"a":\n 1}\n'],
    ids=["bad value", "value cut short", "whitespace json does not know", "value over two lines"],
)
def test_json_lines_with_many_bad_lines_take_linear_work(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # json's errors count the lines before their position, so the work is the sum of
    # those positions within the documents handed to the decoder.
    from sdk.chunking import _json

    counted = 0
    decode = _json._LENIENT.raw_decode

    def raw_decode(s: str, idx: int = 0) -> tuple[object, int]:
        nonlocal counted
        try:
            return decode(s, idx)
        except json.JSONDecodeError as exc:
            counted += exc.pos
            raise

    monkeypatch.setattr(_json._LENIENT, "raw_decode", raw_decode)
    text = unit * (200_000 // len(unit))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = Chunker(64).chunk(text, kind="jsonl")
    check_chunks(text, chunks, 64)
    assert counted <= 4 * len(text)


@pytest.mark.parametrize("kind", ["json", "jsonl"])
def test_deep_nesting_cut_short_is_cut_without_recursing_per_level(kind: str) -> None:
    import warnings

    from sdk.chunking import _accel

    # "[1,\n" over and over is the front of arrays nested 5,000 deep, never closed: its
    # open containers were descended one level at a time (RecursionError); past depth
    # 64 they are cut as one level, as complete ones are.
    text = "[1,\n" * 5_000
    saved = _accel.native, _accel.kernels
    try:
        for native, kernels in (saved, (None, None)):
            _accel.native, _accel.kernels = native, kernels
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chunks = Chunker(64).chunk(text, kind=kind)
            assert "".join(c.text for c in chunks) == text
            assert all(c.tokens <= 64 for c in chunks)
    finally:
        _accel.native, _accel.kernels = saved


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ('{"' + "k" * 400 + '": 1}', 64),
        ('{"' + "k" * 20_000 + '": true}', 64),
        ('{"a": 1, "b": 2, "c": 3}', 6),
        ('{"longish_key_name": 1234567, "x": null}', 8),
        ('[{"' + "k" * 300 + '": null}, 2]', 32),
    ],
)
def test_a_member_with_a_scalar_value_is_cut_when_it_does_not_fit(
    text: str, budget: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member whose value is a number, true, false or null was one chunk, however long
    its key (50,004 tokens for a key of 200,000 characters): it is cut between key and
    value, and inside the key, as a member with a string value is."""
    from sdk.chunking import _accel

    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    for kind in ("json", "jsonl"):
        chunks = chunk(text, budget, kind=kind)
        check_chunks(text, chunks, budget)
        assert all(c.tokens <= budget for c in chunks), [(c.text[:40], c.tokens) for c in chunks]


_GAP_DOCS = [
    "[1{ws}]",
    "[{ws}1]",
    "[1,{ws}2]",
    "[1{ws},2]",
    '{{"a"{ws}:1}}',
    '{{"a":{ws}1}}',
    '{{{ws}"a":1}}',
    '{{"a":1{ws}}}',
    '{ws}{{"a":1}}',
    '{{"a":1}}{ws}',
    '["abc"{ws}]',
    '["a b c d"{ws},"e f"]',
    "[true{ws}]",
    "[[1{ws}],[2]]",
    "[{ws}]",
    '{{"k": [{ws}]}}',
    "{ws}7{ws}",
]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("ws", [" ", "\n", "\r\n", "\t", " \n"])
@pytest.mark.parametrize("budget", [1, 8, 64])
def test_long_whitespace_between_values_is_cut(native: bool, ws: str, budget: int) -> None:
    """Whitespace is no value: a long run of it is cut wherever it stands (a number and
    the megabyte of spaces after it was one chunk of thousands of tokens), and no value
    is cut for it."""
    from sdk.chunking import _accel

    saved = _accel.native, _accel.kernels
    _accel.native, _accel.kernels = saved if native else (None, None)
    try:
        for shape in _GAP_DOCS:
            text = shape.format(ws=ws * (4000 // len(ws)))
            for kind in ("json", "jsonl"):
                if kind == "jsonl" and "\n" in ws:
                    continue  # (a line break ends a JSON Lines value)
                chunks = Chunker(budget).chunk(text, kind=kind)
                check_chunks(text, chunks, budget)
                assert max(c.tokens for c in chunks if not c.oversize) <= budget
                for c in chunks:
                    if c.oversize:  # a value and what is glued to it: never much whitespace
                        assert len(c.text) - len(c.text.strip()) <= 2 * 32, (shape, c.text[:20])
                cuts = {c.start for c in chunks}
                for e in scan_events(text):
                    if e.type in ("number", "literal") or (e.type == "string" and e.end - e.start <= 3):
                        assert not any(e.start < p < e.end for p in cuts), (shape, e.type)
    finally:
        _accel.native, _accel.kernels = saved


def test_short_whitespace_stays_with_its_value() -> None:
    """A member cut only for its whitespace keeps short whitespace with what it follows,
    so the next member's chunk does not open with it under this member's pointer."""
    text = '{"0000": 0, "": null}'
    chunks = chunk(text, 3, kind="json")
    check_json(text, chunks, 3)
    assert [c.text for c in chunks][-1].startswith('""')


@pytest.mark.parametrize(
    "text",
    [
        '[\n  "hello world foo bar",\n  1\n]',
        '["hello world foo bar", 1]',
        '{"k": "hello world foo bar", "j": 2}',
    ],
)
def test_a_string_that_fits_is_not_cut_for_its_separator(text: str) -> None:
    # "hello world foo bar" is 6 tokens: with its comma and line end it did not fit
    # budget 6, and was cut inside (a string is cut only when it does not fit itself).
    string = '"hello world foo bar"'
    assert count_tokens(string) == 6
    chunks = chunk(text, 6, kind="json")
    check_json(text, chunks, 6)
    a = text.index(string)
    assert not any(a < c.start < a + len(string) for c in chunks)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("text", "budget", "kind"),
    [
        ("1 \u0301", 2, "json"),
        ('{"a": 1} \u0e33', 3, "json"),
        ("{}\n \u0e33", 2, "jsonl"),
        ('{"a": 1} \U0001f3fb\n{"b": 2}\n', 1, "jsonl"),
        ("1 \u0903x", 1, "json"),
    ],
)
def test_a_mark_after_a_value_and_a_space_is_not_cut_from_the_space(
    text: str, budget: int, kind: str, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The space was skipped as the value's trailing whitespace, and the unparseable
    # rest started on the mark that joins it: a cut inside a grapheme.
    from sdk.chunking import _accel

    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        chunks = chunk(text, budget, kind=kind)
    check_chunks(text, chunks, budget)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("body", ["(" * 3000, "「" * 3000, '(\\"' * 1000, "\\n(" * 1000])
def test_glued_graphemes_in_a_string_are_cut_as_in_prose(
    body: str, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of graphemes kinsoku glues (opening brackets) inside a JSON string is cut
    every 32 of them, as prose is, not left one oversize chunk of the whole string; a
    forced cut never falls inside an escape."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    text = '["' + body + '"]'
    chunks = chunk(text, 64, kind="json")
    check_chunks(text, chunks, 64)
    assert not any(c.oversize for c in chunks)
    inside = {m.start() + k for m in _ESCAPE.finditer(text) for k in range(1, m.end() - m.start())}
    assert not {c.start for c in chunks} & inside


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("joiner", ["\u0600", "x\u200d"])
@pytest.mark.parametrize("escape", ["\\n", "\\u0041"])
@pytest.mark.parametrize("budget", [1, 2, 3])
def test_a_cut_moved_out_of_an_escape_never_splits_what_joins_it(
    joiner: str, escape: str, budget: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forced grapheme cut inside an escape moves to the escape's start only where a
    cut is allowed there: not after a prepended mark (one cluster with the backslash) or
    a zero-width joiner."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    text = '["' + joiner + escape + '"]'
    chunks = chunk(text, budget, kind="json")
    check_chunks(text, chunks, budget)
    assert not any(c.text.endswith(("\u200d", "\u0600")) for c in chunks)
