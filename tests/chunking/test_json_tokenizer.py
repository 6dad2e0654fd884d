"""The JSON tokenizer: any slicing of the input gives the same events; errors say where."""

from __future__ import annotations

import contextlib
import json
import random
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.chunking import JSONChunkError, JSONTokenizer, _accel
from sdk.chunking._jsontok import JSONEvent, Structure, scan_events
from tests.chunking import examples
from tests.corpus import corpus_files

CORPUS = [cf for cf in corpus_files(("json", "jsonl"))]

Row = tuple[str, int, int, int, int, str]


def rows(events: list[JSONEvent]) -> list[Row]:
    return [(e.type, e.start, e.end, e.depth, e.doc, e.pointer) for e in events]


def feed_all(text: str, cuts: list[int], **kw: Any) -> list[Row]:
    """Feed ``text`` cut at ``cuts``; the one helper for whole / char by char / random splits."""
    tok = JSONTokenizer(**kw)
    events: list[JSONEvent] = []
    last = 0
    for p in [*cuts, len(text)]:
        events += tok.feed(text[last:p])
        last = p
    events += tok.close()
    return rows(events)


def slicings(text: str, seed: int = 0) -> list[list[int]]:
    rnd = random.Random(seed)
    n = len(text)
    out = [[], list(range(1, n))]
    for _ in range(3):
        out.append(sorted(rnd.sample(range(1, n), min(n - 1, rnd.randint(1, 12)))) if n > 1 else [])
    return out


def assert_same_everywhere(text: str, **kw: Any) -> list[Row]:
    whole = feed_all(text, [], **kw)
    for cuts in slicings(text)[1:]:
        assert feed_all(text, cuts, **kw) == whole, cuts
    return whole


def error_of(text: str, cuts: list[int], **kw: Any) -> tuple[str, int, int, int]:
    with pytest.raises(JSONChunkError) as info:
        feed_all(text, cuts, **kw)
    e = info.value
    return (e.reason, e.offset, e.line, e.column)


SAMPLE = (
    '\ufeff{"a~/b": [1, -2.5e+3, 0, 0.5E-2, "x\\ud83d\\ude00\\n\\"", {"k": null}, []],\n'
    ' "z": true, "": false, "é\\u00e9": {}} 7 "s"'
)


def test_sample_events_and_pointers() -> None:
    got = assert_same_everywhere(SAMPLE)
    assert got == rows(list(scan_events(SAMPLE)))
    by_type = [(t, p) for t, _, _, _, _, p in got]
    assert ("key", "/a~0~1b") in by_type
    assert ("string", "/a~0~1b/4") in by_type
    assert ("literal", "/a~0~1b/5/k") in by_type
    assert ("literal", "/") in by_type  # the empty key
    assert ("end_object", "/éé") in by_type
    # Spans are the value's own text.
    for t, a, b, _, _, _ in got:
        if t == "number":
            float(SAMPLE[a:b])
        if t in ("end_object", "end_array"):
            json.loads(SAMPLE[a:b])
    # Three documents: the object, 7, "s".
    assert [r for r in got if r[3] == 0 and r[0] not in ("start_object", "start_array")][-2:] == [
        ("number", SAMPLE.index(" 7") + 1, SAMPLE.index(" 7") + 2, 0, 1, ""),
        ("string", len(SAMPLE) - 3, len(SAMPLE), 0, 2, ""),
    ]


@pytest.mark.parametrize("cf", CORPUS, ids=[cf.name for cf in CORPUS])
def test_corpus_any_slicing_same_events(cf: Any) -> None:
    text = cf.read()
    got = assert_same_everywhere(text)
    assert got == rows(list(scan_events(text)))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=json_values,
    indent=st.sampled_from([None, 0, 2, "\t"]),
    ascii_=st.booleans(),
    seed=st.integers(0, 99),
)
def test_generated_values_any_slicing(value: Any, indent: Any, ascii_: bool, seed: int) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    tok = feed_all(text, [])
    assert tok == rows(list(scan_events(text)))
    for cuts in slicings(text, seed)[2:]:
        assert feed_all(text, cuts) == tok
    assert feed_all(text, list(range(1, len(text)))) == tok


def test_surrogate_pairs_and_lone_surrogates() -> None:
    for text in [
        '"\\ud83d\\ude00"',
        '"\\ud83d"',
        '"\\ude00\\ud83d"',
        '"\\ud83dx\\ud83d\\n"',
        '"\\ud83d\\u0041"',
    ]:
        got = assert_same_everywhere(text)
        assert got == [("string", 0, len(text), 0, 0, "")]
    assert error_of('"\\ud83d\\x"', [])[0] == "invalid escape '\\x'"


@pytest.mark.parametrize(
    ("text", "reason", "offset", "line", "column"),
    [
        ("", "no JSON value", 0, 1, 1),
        ("   \n ", "no JSON value", 5, 2, 2),
        ('{"a" 1}', "expected ':', found '1'", 5, 1, 6),
        ('{"a": 1,}', "expected a key string, found '}'", 8, 1, 9),
        ("[1,]", "expected a JSON value, found ']'", 3, 1, 4),
        ("[1 2]", "expected ',' or a closing bracket, found '2'", 3, 1, 4),
        ('{"a": [1}', "'}' does not close '['", 8, 1, 9),
        ("[01]", "leading zero in number", 2, 1, 3),
        ("[1.]", "invalid number, unexpected ']'", 3, 1, 4),
        ("-", "incomplete number", 1, 1, 2),
        ("[1e+]", "invalid number, unexpected ']'", 4, 1, 5),
        ("[tru]", "invalid literal, expected 'true'", 4, 1, 5),
        ("[NaN]", "expected a JSON value, found 'N'", 1, 1, 2),
        ('{\n  "a": "x\ty"\n}', "control character U+0009 in string", 11, 2, 10),
        ('["\\q"]', "invalid escape '\\q'", 3, 1, 4),
        ('["\\u12G4"]', "invalid \\u escape digit 'G'", 6, 1, 7),
        ('{"a": [1, 2', "unexpected end of input", 11, 1, 12),
        ('"abc', "unexpected end of input", 4, 1, 5),
        ("[1]\n\n  ]", "expected a JSON value, found ']'", 7, 3, 3),
        ("x", "expected a JSON value, found 'x'", 0, 1, 1),
        (" \ufeff1", "expected a JSON value, found '\\ufeff'", 1, 1, 2),
    ],
)
def test_errors_say_where_whatever_the_slicing(
    text: str, reason: str, offset: int, line: int, column: int
) -> None:
    for cuts in slicings(text):
        assert error_of(text, cuts) == (reason, offset, line, column)


def test_error_is_sticky() -> None:
    tok = JSONTokenizer()
    with pytest.raises(JSONChunkError):
        tok.feed("[1,,")
    with pytest.raises(JSONChunkError):
        tok.feed("2]")
    with pytest.raises(JSONChunkError):
        tok.close()


def test_options_nan_and_single_document() -> None:
    text = "[NaN, Infinity, -Infinity, -1]"
    got = assert_same_everywhere(text, allow_nan=True)
    assert [r[0] for r in got] == ["start_array", "literal", "literal", "literal", "number", "end_array"]
    assert error_of("1 2", [], multiple=False)[:2] == ("trailing data after the JSON value", 2)
    assert error_of("[-Inf]", [], allow_nan=True)[0] == "invalid literal, expected '-Infinity'"
    assert feed_all("\ufeff 1", [1]) == [("number", 2, 3, 0, 0, "")]


def test_accepts_exactly_what_json_accepts() -> None:
    """Mutations of valid documents: accepted by the tokenizer iff by ``json`` (strict)."""
    rnd = random.Random(5)
    base = [cf.read() for cf in CORPUS if cf.group == "json"]
    alphabet = '{}[]":,\\ 0123456789.eE+-tfnulrsa\n\tx'

    def reference(text: str) -> bool:
        try:
            dec = json.JSONDecoder(parse_constant=lambda s: (_ for _ in ()).throw(ValueError(s)))
            dec.decode(text.lstrip("\ufeff") if text.startswith("\ufeff") else text)
        except ValueError:
            return False
        return True

    checked = 0
    for text in base:
        for _ in range(60):
            pos = rnd.randrange(len(text))
            op = rnd.randrange(3)
            if op == 0:
                mutated = text[:pos] + text[pos + 1 :]
            elif op == 1:
                mutated = text[:pos] + rnd.choice(alphabet) + text[pos:]
            else:
                mutated = text[:pos] + rnd.choice(alphabet) + text[pos + 1 :]
            try:
                feed_all(mutated, [], multiple=False)
                ours = True
            except JSONChunkError:
                ours = False
            assert ours == reference(mutated), (mutated[max(0, pos - 20) : pos + 20], ours)
            checked += 1
    assert checked >= 300


def test_deep_nesting_has_no_recursion() -> None:
    depth = 100_000
    text = "[" * depth + '{"k": 1}' + "]" * depth

    def spans(events: list[JSONEvent]) -> list[tuple[str, int, int, int]]:
        return [(e.type, e.start, e.end, e.depth) for e in events]  # no pointers: O(depth) each

    tok = JSONTokenizer()
    events = (
        tok.feed(text[: depth // 2]) + tok.feed(text[depth // 2 : depth + 3]) + tok.feed(text[depth + 3 :])
    )
    events += tok.close()
    assert len(events) == 2 * depth + 4
    assert spans(events[depth : depth + 3]) == [
        ("start_object", depth, depth + 1, depth),
        ("key", depth + 1, depth + 4, depth + 1),
        ("number", depth + 6, depth + 7, depth + 1),
    ]
    assert spans(list(scan_events(text))) == spans(events)
    # Pointers are built on demand only.
    assert events[depth + 2].pointer == "/0" * depth + "/k"


def test_progress_reports_open_containers() -> None:
    tok = JSONTokenizer()
    tok.feed('{"a": [1, {"b": "par')
    p = tok.progress()
    assert (p.containers, p.in_string, p.in_key, p.pointer, p.offset) == ("{[{", True, False, "/a/1/b", 20)
    assert [
        (k, start, None if path is None else path.pointer) for k, start, path in tok.open_containers()
    ] == [
        ("{", 0, None),
        ("[", 6, "/a"),
        ("{", 10, "/a/1"),
    ]
    tok.feed('tial"}, "k')
    p = tok.progress()
    assert (p.containers, p.in_string, p.in_key, p.pointer) == ("{[", True, False, "/a/2")
    tok.feed('"], "ke')
    p = tok.progress()
    assert (p.containers, p.in_string, p.in_key, p.pointer) == ("{", True, True, "")
    tok.feed('y": [')
    p = tok.progress()
    assert (p.containers, p.in_string, p.pointer) == ("{[", False, "/key/0")
    tok.feed("]}")
    assert tok.progress().containers == "" and tok.progress().docs == 1


def test_structure_children() -> None:
    text = '{"a" : [1 , "x,]" ], "b":{}}'
    st = Structure(text)
    kids, close = st.children(0)
    assert close == len(text) - 1
    assert [(text[k.begin : k.end], text[k.start : k.end]) for k in kids] == [
        ('"a" : [1 , "x,]" ]', '[1 , "x,]" ]'),
        ('"b":{}', "{}"),
    ]
    inner, _ = st.children(text.index("["))
    assert [text[k.start : k.end] for k in inner] == ["1", '"x,]"']
    assert [text[k.begin : k.next] for k in inner] == ["1 , ", '"x,]" ']


@contextlib.contextmanager
def _interpreted() -> Iterator[None]:
    kernels = _accel.kernels
    _accel.kernels = None  # type: ignore[assignment]
    try:
        yield
    finally:
        _accel.kernels = kernels


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("text", ['["a', '{"a": "b]', "[[]", '["\\"]', "[", '["a\\'])
def test_structure_rejects_unclosed_containers(text: str, compiled: bool) -> None:
    start = min(i for i in (text.find("["), text.find("{")) if i >= 0)
    with contextlib.ExitStack() as stack:
        if not compiled:
            stack.enter_context(_interpreted())
        with pytest.raises(ValueError, match="unbalanced"):
            Structure(text).close_of(start)


@pytest.mark.parametrize("compiled", [True, False])
def test_structure_finds_each_close_and_child(compiled: bool) -> None:
    """The closes and children the walk asks for, found by the kernels and by the
    regexes (which record the closes they pass, 64 levels deep at most) alike."""
    doc = json.dumps(
        [
            {"id": i, "tags": ["a", "b]"] * (i % 40), "k/\\~": {"n": [i]}, "note": "x{" * (i % 300)}
            for i in range(300)
        ]
    )
    with contextlib.ExitStack() as stack:
        if not compiled:
            stack.enter_context(_interpreted())
        st = Structure(doc)
        assert st.close_of(0) == len(doc) - 1
        todo = [0]
        seen = 0
        while todo:
            start = todo.pop()
            kids, close = st.children(start)
            assert json.loads(doc[start : close + 1]) is not None
            for k in kids:
                if doc[k.start] in "[{":
                    assert st.close_of(k.start) == k.end - 1
                    todo.append(k.start)
                seen += 1
        assert seen > 300 * 5
        # a run of children, as the splitter asks for one
        first, _ = st.children(0)
        assert st.children_from(0, first[3].begin, 5) == first[3:8]
        deep = "[" * 100 + "]" * 100
        st = Structure(deep)
        assert st.close_of(0) == 199
        assert st.close_of(70) == 129


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(alphabet='ab"\\[]{}字\n', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(alphabet='k"\\/~{', max_size=4), inner, max_size=5)
    ),
    max_leaves=30,
)


@given(value=_JSON_VALUES, indent=st.sampled_from([None, 1, 2]), before=st.sampled_from(["", " ", "\n\t"]))
@settings(max_examples=300, deadline=None)
def test_the_kernels_find_the_children_and_closes_the_regexes_find(
    value: Any, indent: int | None, before: str
) -> None:
    doc = before + json.dumps(value, indent=indent, ensure_ascii=False)
    with _interpreted():
        containers = [e.start for e in scan_events(doc) if e.type in ("start_object", "start_array")]
        regex = Structure(doc)
        expected = [(regex.close_of(i), regex.children(i)) for i in containers]
    kernels = Structure(doc)
    assert [(kernels.close_of(i), kernels.children(i)) for i in containers] == expected


def test_the_children_of_a_long_container_take_memory_by_children_not_by_length() -> None:
    """``children`` asks the kernel for all of a container's children: its buffer grows
    with what it finds, not with the container's length (a megabyte with one child
    once asked for 48 bytes a character)."""
    doc = '["' + "x" * 1_000_000 + '"]'
    st = Structure(doc)
    tracemalloc.start()
    try:
        kids, close = st.children(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert close == len(doc) - 1 and len(kids) == 1
    assert peak < 100_000
