"""Prose rules: levels, CJK sentence/clause marks, kinsoku, identifiers, API contract."""

from __future__ import annotations

import itertools
import pickle
import warnings
from pathlib import Path

import pytest

import sdk
import sdk.chunking
from sdk import count_tokens
from sdk.chunking import Chunk, Chunker, ChunkingWarning, chunk
from tests.invariants import check_chunks


def texts(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def test_public_names_are_sorted_and_exported() -> None:
    for module in (sdk, sdk.chunking):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), name


def test_empty_input() -> None:
    assert chunk("", max_tokens=5) == []


def test_fits_whole() -> None:
    (c,) = chunk("Short text.", max_tokens=100)
    assert (c.text, c.start, c.end, c.kind, c.path, c.oversize) == ("Short text.", 0, 11, "text", None, False)
    assert c.tokens == count_tokens("Short text.")


@pytest.mark.parametrize("bad", [0, -3])
def test_budget_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk("x", max_tokens=bad)


def test_type_errors() -> None:
    with pytest.raises(TypeError):
        chunk(b"bytes", max_tokens=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        chunk("x", max_tokens=True)


def test_lone_surrogate_names_offset() -> None:
    with pytest.raises(ValueError, match=r"lone surrogate U\+D800 at offset 3"):
        chunk("abc\ud800def", max_tokens=5)


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        chunk("x", kind="yaml")


def test_arguments_of_the_wrong_type_are_named() -> None:
    for kwargs, name in [
        ({"language": 3}, "language"),
        ({"filename": b"x.py"}, "filename"),
        ({"kind": ["text"]}, "kind"),
    ]:
        with pytest.raises(TypeError, match=f"^{name} must be a str"):
            chunk("a b c d", 1, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^language must be a str"):
        Chunker(4, language=3)  # type: ignore[arg-type]
    # A path names the file as its string does.
    text = "def f():\n    return 1\n"
    assert chunk(text, 4, filename=Path("m.py")) == chunk(text, 4, filename="m.py")


def test_a_chunker_pickles_and_chunks_alike() -> None:
    """(For process pools: it holds its encoder, whose buffer encoder is an object.)"""
    chunker = Chunker(16, overlap=2)
    text = "Hello world. " * 40 + "日本語の文章です。" * 20
    again = pickle.loads(pickle.dumps(chunker))
    assert again.chunk(text) == chunker.chunk(text)


def test_overlap_must_leave_room() -> None:
    with pytest.raises(ValueError, match="overlap"):
        Chunker(10, overlap=10)


def test_paragraphs_before_lines_before_sentences() -> None:
    para1 = "One sentence here. Another one follows.\nA second line.\n\n"
    para2 = "Second paragraph. It is short."
    text = para1 + para2
    got = chunk(text, max_tokens=count_tokens(para1))
    assert texts(got) == [para1, para2]
    smaller = chunk(text, max_tokens=count_tokens("One sentence here. Another one follows.\n"))
    assert smaller[0].text == "One sentence here. Another one follows.\n"
    check_chunks(text, smaller, count_tokens("One sentence here. Another one follows.\n"))


def test_japanese_sentences_keep_closing_quotes() -> None:
    text = "彼は「行きます。」と言った。私は待った！本当に？"
    got = chunk(text, max_tokens=8)
    check_chunks(text, got, 8)
    for c in got:
        assert c.text[0] not in "」。、！？"
    assert "".join(texts(got)) == text
    assert any(c.text.endswith("」と言った。") or c.text.endswith("。」") for c in got)


def test_katakana_han_compound_stays_whole() -> None:
    text = "ユーザー名を入力してください。パスワード変更画面で確認します。"
    for budget in (3, 4, 5, 8):
        got = chunk(text, max_tokens=budget)
        check_chunks(text, got, budget)
        joined_cuts = {c.end for c in got[:-1]}
        # Never inside ユーザー名 (offsets 0..5) if it fits the budget.
        if count_tokens("ユーザー名") <= budget:
            assert not joined_cuts & {1, 2, 3, 4}


def test_kinsoku_no_start_with_closers_small_kana_or_prolonged_mark() -> None:
    text = "ちょっと待ってください、コーヒーを（ホットで）お願いします。" * 4
    for budget in (1, 2, 3, 5):
        got = chunk(text, max_tokens=budget)
        check_chunks(text, got, budget)
        for c in got[1:]:
            assert c.text[0] not in "、。）ーょっ", c.text
        for c in got[:-1]:
            assert c.text[-1] != "（", c.text


def test_chinese_clauses() -> None:
    text = "我们首先安装依赖，然后运行测试；如果失败，就查看日志：一切正常。接着部署。"
    got = chunk(text, max_tokens=6)
    check_chunks(text, got, 6)
    for c in got[1:]:
        assert c.text[0] not in "，；：。"


def test_single_grapheme_over_budget_is_oversize() -> None:
    family = "👨\u200d👩\u200d👧\u200d👦"
    text = "a " + family + " b"
    got = chunk(text, max_tokens=2)
    check_chunks(text, got, 2)
    (big,) = [c for c in got if c.oversize]
    assert big.text == family
    assert big.tokens > 2


def test_flags_and_combining_marks_are_never_split() -> None:
    text = "🇯🇵🇫🇷🇩🇪 e\u0301\u0302 न्दी 👍🏽"
    got = chunk(text, max_tokens=1)
    check_chunks(text, got, 1)
    assert "🇯🇵" in texts(got) or any("🇯🇵" in t for t in texts(got))


def test_no_cut_after_zero_width_joiner() -> None:
    text = "\u2701\u200d\u2701 x"
    got = chunk(text, max_tokens=1)
    for c in got[:-1]:
        assert not c.text.endswith("\u200d")


def test_line_separator_is_a_line_break() -> None:
    text = "first line\u2028second line\u2029third paragraph"
    got = chunk(text, max_tokens=3)
    check_chunks(text, got, 3)
    assert got[0].text == "first line\u2028"


def test_crlf_is_never_split() -> None:
    text = "a\r\n" * 50
    got = chunk(text, max_tokens=1)
    check_chunks(text, got, 1)
    for c in got[:-1]:
        assert not c.text.endswith("\r")


def test_long_word_falls_back_to_graphemes_without_loss() -> None:
    blob = "aGVsbG8" * 500
    text = f"see {blob} end"
    got = chunk(text, max_tokens=16)
    check_chunks(text, got, 16)


def test_byte_offsets() -> None:
    text = "héllo wörld ユーザー名 😀 end. " * 10
    got = chunk(text, max_tokens=5)
    check_chunks(text, got, 5)
    raw = text.encode()
    for c in got:
        assert raw[c.byte_start : c.byte_end].decode() == c.text


def test_overlap_carries_previous_tail_within_budget() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    got = Chunker(20, overlap=5).chunk(text)
    plain = Chunker(15).chunk(text)
    assert [c.end for c in got] == [c.end for c in plain]
    assert got[0].start == 0
    for prev, cur in itertools.pairwise(got):
        assert cur.tokens <= 20
        assert cur.tokens == count_tokens(cur.text)
        assert text[cur.start : cur.end] == cur.text
        assert prev.start <= cur.start < prev.end  # carries part of the previous chunk
        carried = text[cur.start : prev.end]
        assert count_tokens(carried) <= 5
        assert cur.text.startswith(carried)


def test_chunker_is_reusable_and_kind_fallback_warns() -> None:
    ch = Chunker(8)
    a = ch.chunk("Erste Zeile.\nZweite Zeile.\n")
    b = ch.chunk("Erste Zeile.\nZweite Zeile.\n")
    assert a == b
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ch.chunk("# Title\n\ntext", kind="markdown")
    if any(issubclass(w.category, ChunkingWarning) for w in caught):
        assert "".join(texts(got)) == "# Title\n\ntext"


def test_cl100k_budget_is_exact() -> None:
    text = "Tokens differ by encoding: ユーザー名 and 😀.\n" * 20
    got = chunk(text, max_tokens=12, encoding="cl100k_base")
    check_chunks(text, got, 12, encoding="cl100k_base")


@pytest.mark.parametrize("native", [True, False])
def test_a_single_windows_line_break_is_a_line_not_a_paragraph(native: bool) -> None:
    from sdk.chunking import _accel
    from sdk.chunking._prose import boundaries

    lf = "Line one\nline two\n\nNext paragraph\nits second line\n  \n\nlast\r\rmac"
    crlf = lf.replace("\n", "\r\n")
    saved = _accel.native
    if not native:
        _accel.native = None
    try:
        for text in (lf, crlf):
            level, cuts = boundaries(text, 0, len(text), 0)
            assert level == 0
            # after the blank line, after the blank lines with spaces, after "\r\r"
            assert [text[c - 1 : c + 4] for c in cuts] == ["\nNext", "\nlast", "\rmac"]
            level, cuts = boundaries(text, 0, len(text), 1)
            assert level == 1 and len(cuts) == 5  # a run of breaks is one cut
    finally:
        _accel.native = saved
