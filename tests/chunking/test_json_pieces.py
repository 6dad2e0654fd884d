"""``json_pieces`` + ``merge_pieces``: valid standalone pieces within budget, exact round trip."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import count_tokens
from sdk.chunking import JSONChunkError, JSONPiece, json_pieces, merge_pieces
from sdk.chunking._engine import Sizer
from tests.chunking import examples
from tests.corpus import corpus_files

CORPUS = corpus_files(("json", "jsonl"))


def original(text: str) -> Any:
    values = []
    dec = json.JSONDecoder()
    pos = 1 if text.startswith("\ufeff") else 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos == len(text):
            break
        value, pos = dec.raw_decode(text, pos)
        values.append(value)
    return values[0] if len(values) == 1 else values


def check_pieces(text: str, pieces: list[JSONPiece], budget: int) -> None:
    assert pieces
    for p in pieces:
        obj = json.loads(p.text)
        assert isinstance(obj, dict) and isinstance(obj["path"], list)
        assert p.tokens == count_tokens(p.text) <= budget, p
    assert merge_pieces(pieces) == original(text)
    assert merge_pieces([p.text for p in pieces]) == original(text)


@pytest.mark.parametrize("cf", CORPUS, ids=[cf.name for cf in CORPUS])
@pytest.mark.parametrize("budget", [40, 100, 400])
def test_corpus_round_trip(cf: Any, budget: int) -> None:
    text = cf.read()
    check_pieces(text, json_pieces(text, budget), budget)
    check_pieces(text, json_pieces(text, budget, expand_embedded=True), budget)


json_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(["\n", '"', "\\", "😀"]),
    max_size=30,
)
# Keys stay short once escaped, so paths fit the budgets used here.
keys = st.text(st.sampled_from('ab~/é"工 '), max_size=4)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | json_text,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(keys, children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=json_values,
    indent=st.sampled_from([None, 1]),
    ascii_=st.booleans(),
    budget=st.sampled_from([48, 64, 128]),
)
def test_generated_round_trip(value: Any, indent: Any, ascii_: bool, budget: int) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    try:
        pieces = json_pieces(text, budget)
    except ValueError as exc:
        # Keys of a few CJK characters, escaped, make long paths: "too small" is right
        # only when some value that cannot be divided does not fit with its path.
        assert "too small" in str(exc)
        assert _least_piece([value], ascii_, numbered=False) > budget, exc
        return
    check_pieces(text, pieces, budget)


@settings(max_examples=examples(30), deadline=None)
@given(values=st.lists(json_values, min_size=2, max_size=5))
def test_json_lines_round_trip_as_a_list(values: list[Any]) -> None:
    text = "\n".join(json.dumps(v) for v in values) + "\n"
    try:
        pieces = json_pieces(text, 64)
    except ValueError as exc:
        # Escaped keys make long paths: "too small" is right only when some value
        # that cannot be divided does not fit with its path.
        assert "too small" in str(exc)
        assert _least_piece(values) > 64, exc
        return
    check_pieces(text, pieces, 64)


def test_a_number_whose_parent_wrapper_is_too_long_goes_alone_with_its_path() -> None:
    # With its parent's path and its key (escaped, as json.dumps writes it) the number
    # takes more than 64 tokens; alone with its own path it takes 62.
    values = [None, [{"ééé": {"ééé": {"/ééé": 1.0000000000000002e16}}}]]
    text = "\n".join(json.dumps(v) for v in values) + "\n"
    pieces = json_pieces(text, 64)
    check_pieces(text, pieces, 64)
    assert json.loads(pieces[-1].text) == {
        "path": [1, 0, "ééé", "ééé", "/ééé"],
        "value": 1.0000000000000002e16,
    }
    assert pieces[-1].pointer == "/1/0/ééé/ééé/~1ééé"


def test_members_go_alone_when_their_wrapper_leaves_no_room() -> None:
    # The array's wrapper with its escaped key takes 66 tokens at budget 64; each element
    # alone with its path takes at most 64.
    values = [None, {"é" * 13: list(range(1, 21))}]
    text = "\n".join(json.dumps(v) for v in values) + "\n"
    pieces = json_pieces(text, 64)
    check_pieces(text, pieces, 64)
    assert json.loads(pieces[1].text) == {"path": [1, "é" * 13, 0], "value": 1}
    assert _least_piece(values) == 64


def _least_piece(values: list[Any], ascii_: bool = True, numbered: bool = True) -> int:
    """Tokens of the largest piece that cannot be made smaller: an indivisible value
    (a number, a literal, an empty container, one character of a string) with its path
    (from the value's index among ``values`` when ``numbered``), written as json.dumps
    writes it (with ``ensure_ascii=ascii_``)."""
    from sdk import count_tokens

    worst = 0

    def walk(value: Any, path: list[Any]) -> None:
        nonlocal worst
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, [*path, k])
            return
        if isinstance(value, list) and value:
            for i, v in enumerate(value):
                walk(v, [*path, i])
            return
        field = ',"text":' if isinstance(value, str) else ',"value":'
        least = json.dumps(value[:1] if isinstance(value, str) else value, ensure_ascii=ascii_)
        written = json.dumps(path, separators=(",", ":"), ensure_ascii=ascii_)
        worst = max(worst, count_tokens('{"path":' + written + field + least + "}"))

    for i, v in enumerate(values):
        walk(v, [i] if numbered else [])
    return worst


def test_shape_and_readable_cjk() -> None:
    doc = {"items": [{"名前": f"商品{i}", "説明": "とても良い商品です。" * 3} for i in range(6)], "total": 6}
    text = json.dumps(doc, ensure_ascii=False)
    pieces = json_pieces(text, 60)
    check_pieces(text, pieces, 60)
    assert all("\\u" not in p.text for p in pieces)
    first = json.loads(pieces[0].text)
    assert first["path"] == ["items"] and first["index"] == 0 and first["elements"][0]["名前"] == "商品0"
    assert pieces[0].pointer == "/items/0"
    assert json.loads(pieces[-1].text) == {"path": [], "members": {"total": 6}}
    # Escapes in the input are kept as they were.
    escaped = json.dumps(doc)
    assert all("商品" not in p.text for p in json_pieces(escaped, 60))


def test_whole_document_that_fits_is_one_piece() -> None:
    pieces = json_pieces('{"a": [1, 2]}', 100)
    assert [json.loads(p.text) for p in pieces] == [{"path": [], "value": {"a": [1, 2]}}]
    assert pieces[0].pointer == ""


def test_long_string_parts() -> None:
    text = json.dumps({"log": 'line one\nline two "quoted" 😀\n' * 30}, ensure_ascii=True)
    pieces = json_pieces(text, 40)
    check_pieces(text, pieces, 40)
    parts = [p for p in pieces if p.partial]
    assert len(parts) > 3 and {p.pointer for p in parts} == {"/log"}
    for p in parts:
        json.loads(p.text)  # never cut inside an escape or a surrogate pair


def test_embedded_json_is_expanded_with_a_pointer_that_says_so() -> None:
    profile = json.dumps(
        {"role": "工程师", "lang": ["中文", "English"] * 6, "bio": "写代码。" * 20}, ensure_ascii=False
    )
    doc = {"user": "li", "profile": profile}
    text = json.dumps(doc, ensure_ascii=False)
    plain = json_pieces(text, 48)
    check_pieces(text, plain, 48)
    assert not any(p.embedded for p in plain)
    expanded = json_pieces(text, 48, expand_embedded=True)
    check_pieces(text, expanded, 48)
    inner = [p for p in expanded if p.embedded]
    assert inner and all(p.embedded == ("/profile",) for p in inner)
    assert any(p.pointer.startswith("/lang") for p in inner)
    assert json.loads(inner[0].text)["path"][:2] == ["profile", {"json": "spaced"}]
    # A string that would not reserialize to itself stays a string.
    odd = json.dumps({"s": '{"a":  1, "b": "' + "x" * 300 + '"}'})
    pieces = json_pieces(odd, 40, expand_embedded=True)
    check_pieces(odd, pieces, 40)
    assert not any(p.embedded for p in pieces)


@pytest.mark.parametrize(
    ("text", "reason", "line", "column"),
    [
        ('{"a": 1,\n "b": }', "expected a JSON value, found '}'", 2, 7),
        ('{"a": NaN}', "expected a JSON value, found 'N'", 1, 7),
        ("[1, 2] trailing", "invalid literal, expected 'true'", 1, 10),
        ("[1, 2] ]", "expected a JSON value, found ']'", 1, 8),
        ('{"a": 1, "b": {"x": 1, "x": 2}}', "duplicate key 'x'", 1, 24),
        ("", "no JSON value", 1, 1),
        ('{"a": "unterminated', "unexpected end of input", 1, 20),
    ],
)
def test_malformed_input_raises_with_location(text: str, reason: str, line: int, column: int) -> None:
    with pytest.raises(JSONChunkError) as info:
        json_pieces(text, 100)
    assert (info.value.reason, info.value.line, info.value.column) == (reason, line, column)
    assert str(line) in str(info.value)


def test_bom_is_whitespace_and_deep_input_fails_cleanly() -> None:
    assert merge_pieces(json_pieces('\ufeff{"a": 1}', 50)) == {"a": 1}
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ValueError, match="max_tokens=64 is too small"):
        json_pieces(deep, 64)
    with pytest.raises(ValueError, match="too small"):
        json_pieces("[123456789012345678901234567890]", 12)


def test_merge_rejects_pieces_that_do_not_fit_together() -> None:
    pieces = [p.text for p in json_pieces(json.dumps(list(range(40))), 30)]
    assert len(pieces) > 2
    with pytest.raises(ValueError, match="do not fit together"):
        merge_pieces([pieces[0], pieces[2]])
    with pytest.raises(ValueError, match="do not fit together"):
        merge_pieces([])
    with pytest.raises(ValueError, match="do not fit together"):
        merge_pieces(['{"path": ["a"], "value": 1}', '{"path": ["a"], "value": 2}'])


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.dictionaries(st.text(max_size=8), st.lists(st.integers() | st.text(max_size=20), max_size=8)))
def test_any_keys_round_trip(value: dict[str, Any]) -> None:
    text = json.dumps(value)
    check_pieces(text, json_pieces(text, 400), 400)


def test_every_budget_either_round_trips_or_says_too_small() -> None:
    value = {"a" * 30: {"b" * 30: "", "c": [""] * 3, "d": "x y " * 20}}
    text = json.dumps(value)
    worked = 0
    for budget in range(8, 60, 3):
        try:
            pieces = json_pieces(text, budget)
        except ValueError as exc:
            assert "too small" in str(exc)
            continue
        check_pieces(text, pieces, budget)
        worked += 1
    assert worked > 5


def test_deep_document_round_trips_without_recursion() -> None:
    depth = 20_000
    text = "[" * depth + '{"k": [1, "x"]}' + "]" * depth
    pieces = json_pieces(text, 100_000)
    value = merge_pieces(pieces)
    for _ in range(depth):  # compared level by level: == would recurse
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == {"k": [1, "x"]}


def test_a_deep_value_is_not_encoded_again_at_every_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each level of a value nested N deep used to count the whole value again (N times
    its size encoded); now it is sized from one encoding: the characters encoded stay a
    small multiple of the text's, whatever the depth."""
    encoded = [0]
    count, char_ends = Sizer.count, Sizer.char_ends

    def counting(self: Sizer, text: str) -> int:
        encoded[0] += len(text)
        return count(self, text)

    def counting_ends(self: Sizer, text: str, start: int = 0, code: str = "q") -> Any:
        encoded[0] += len(text)
        return char_ends(self, text, start, code)

    monkeypatch.setattr(Sizer, "count", counting)
    monkeypatch.setattr(Sizer, "char_ends", counting_ends)
    for depth in (50, 400):
        text = '{"a":' * depth + "[" + ",".join(['"' + "word " * 20 + '"'] * 200) + "]" + "}" * depth
        encoded[0] = 0
        pieces = json_pieces(text, 6 * depth)
        assert encoded[0] <= 5 * len(text), (depth, encoded[0] / len(text))
        check_pieces(text, pieces, 6 * depth)


def test_merge_refuses_a_negative_index() -> None:
    with pytest.raises(ValueError, match="index -1 does not continue"):
        merge_pieces(['{"path":[-1],"value":1}'])
    with pytest.raises(ValueError, match="index -1 does not continue"):
        merge_pieces(['{"path":[0],"value":[1]}', '{"path":[-1],"index":1,"elements":[2]}'])


def test_a_piece_that_cannot_be_read_is_named() -> None:
    with pytest.raises(ValueError, match="piece 2 cannot be read"):
        merge_pieces(['{"path":[],"value":1}', "{not json"])
    # An integer past Python's digit limit: as json.loads, with the piece named.
    pieces = json_pieces("[" + "7" * 4301 + ",1]", 20_000)
    with pytest.raises(ValueError, match="piece 1 cannot be read: Exceeds the limit"):
        merge_pieces(pieces)


def test_several_top_level_values_are_taken_as_the_array_of_them() -> None:
    """JSON Lines (or values one after another): their pieces merge to the list of the
    values, as documented."""
    for text in ['{"a":1}{"b":2}', '{"a":1}\n{"b":2}\n']:
        assert merge_pieces(json_pieces(text, 64)) == [{"a": 1}, {"b": 2}]


def test_a_lone_surrogate_is_refused_with_its_offset() -> None:
    """As chunk() refuses it: a piece holding it could not be written as UTF-8."""
    with pytest.raises(ValueError, match="lone surrogate U\\+D800 at offset 2"):
        json_pieces('["\ud800"]', 64)
