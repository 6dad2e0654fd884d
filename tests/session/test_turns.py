"""The turn log: estimates counted once, exact usage sums, groups and pins."""

from __future__ import annotations

from typing import Any

import pytest

import sdk.session._turns as turns_module
from sdk import Usage, count_tokens
from sdk.session import TurnLog
from sdk.session._turns import MESSAGE_OVERHEAD


def test_adding_a_turn_never_re_tokenizes_the_history(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str] = []
    real = turns_module.count_tokens

    def counting(text: str, encoding: str = "o200k_base") -> int:
        counted.append(text)
        return real(text, encoding)

    monkeypatch.setattr(turns_module, "count_tokens", counting)
    log = TurnLog()
    for i in range(300):
        before = len(counted)
        log.append("user" if i % 2 == 0 else "assistant", f"turn number {i}")
        assert counted[before:] == [f"turn number {i}"]  # its own text, once
    assert log.total_tokens == sum(t.estimate for t in log)
    assert log.tokens(100, 200) == sum(log[i].estimate for i in range(100, 200))


def test_estimate_is_the_text_count_plus_the_message_overhead() -> None:
    log = TurnLog()
    t = log.append("user", [{"type": "text", "text": "Hello there"}, {"type": "text", "text": "世界"}])
    assert t.estimate == count_tokens("Hello there") + count_tokens("世界") + MESSAGE_OVERHEAD
    assert t.kind == "user" and t.role == "user" and t.text == "Hello there世界"


def test_usage_totals_follow_the_servers_fields() -> None:
    u = Usage(
        input_tokens=12, output_tokens=30, cache_creation_input_tokens=1000, cache_read_input_tokens=5000
    )
    assert u.total_input == 6012
    v = u + Usage(input_tokens=3, output_tokens=None)
    assert v == Usage(15, 30, 1000, 5000)
    assert Usage() + Usage() == Usage()  # "not reported" stays None, not 0
    assert Usage(None, 1).total_input == 0


def test_tool_pairs_form_one_group_and_pins_hold_the_group() -> None:
    log = TurnLog()
    log.append("user", "q", estimate=10)
    call = log.append(
        "assistant",
        [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "a", "name": "f", "input": {}},
            {"type": "tool_use", "id": "b", "name": "g", "input": {"k": [1, 2]}},
        ],
        estimate=20,
    )
    assert call.kind == "tool_use" and call.tool_use_ids == ("a", "b")
    r1 = log.append("user", [{"type": "tool_result", "tool_use_id": "a", "content": "A"}], estimate=30)
    r2 = log.append(
        "user",
        [{"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "B"}]}],
        estimate=40,
    )
    assert r1.kind == r2.kind == "tool_result"
    log.append("assistant", "answer", estimate=50)
    assert [log.is_boundary(i) for i in range(6)] == [True, True, False, False, True, True]
    assert log.next_boundary(2) == 4
    assert log.pinned_tokens_before(5) == 0
    epoch = log.epoch
    log.set_pinned(3)  # one result pinned: the call and the other result stay with it
    assert log.epoch == epoch + 1
    assert [log.group_pinned(i) for i in range(5)] == [False, True, True, True, False]
    assert log.pinned_tokens_before(5) == 90 and log.pinned_count_before(5) == 3
    log.set_pinned(3, False)
    assert log.pinned_tokens_before(5) == 0


def test_a_result_without_its_call_stands_alone() -> None:
    log = TurnLog()
    log.append("user", [{"type": "tool_result", "tool_use_id": "missing", "content": "x"}])
    log.append("assistant", "ok")
    assert log.is_boundary(0) and log.is_boundary(1)


def test_content_is_copied_and_checked() -> None:
    log = TurnLog()
    block: dict[str, Any] = {"type": "text", "text": "original"}
    t = log.append("user", [block])
    block["text"] = "changed later"
    assert log[t.id].text == "original"
    with pytest.raises(TypeError, match="content block"):
        log.append("user", ["not a block"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one"):
        log.append("user", [])
    with pytest.raises(ValueError, match="role"):
        log.append("system", "x")
    with pytest.raises(ValueError, match="estimate"):
        log.append("user", "x", estimate=-1)
    with pytest.raises(TypeError):
        log.append("user", [{"type": "text", "text": object()}])
    assert len(log) == 1


def _state(log: TurnLog) -> tuple[Any, ...]:
    n = len(log)
    return (
        [(t.id, t.kind, t.estimate, t.pinned) for t in log],
        log.total_tokens,
        [log.group_start(i) for i in range(n)],
        [log.pinned_tokens_before(c) for c in range(n + 1)],
        [log.pinned_count_before(c) for c in range(n + 1)],
    )


def test_pop_leaves_the_log_as_if_the_turn_had_never_been_added() -> None:
    call = [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
    steps: list[tuple[str, Any, bool]] = [
        ("user", "question", True),
        ("assistant", call, False),
        ("user", "an aside between call and result", False),
        ("user", result, False),
        ("assistant", "answer", False),
    ]
    for k in range(1, len(steps) + 1):
        log = TurnLog()
        for role, content, pinned in steps[:k]:
            log.append(role, content, pinned=pinned)
        fresh = TurnLog()
        for role, content, pinned in steps[: k - 1]:
            fresh.append(role, content, pinned=pinned)
        epoch = log.epoch
        popped = log.pop()
        assert popped.id == k - 1 and popped.content == log_content(steps[k - 1][1])
        assert _state(log) == _state(fresh)  # the result's merge of groups is undone too
        assert log.epoch > epoch
        log.append(*steps[k - 1][:2], pinned=steps[k - 1][2])  # and it can be added again
    with pytest.raises(IndexError):
        TurnLog().pop()


def log_content(content: Any) -> Any:
    from sdk.session._turns import normalize_content

    return normalize_content(content)


def test_a_lone_surrogate_is_refused_when_added_not_at_the_next_save() -> None:
    from sdk.session._turns import normalize_content

    with pytest.raises(ValueError, match="lone surrogate at offset 3"):
        normalize_content("caf\udce9")
    with pytest.raises(TypeError, match=r"content\[0\]"):
        normalize_content([{"type": "text", "text": "caf\udce9"}])


def test_a_refused_block_is_named_not_repeated() -> None:
    from sdk.session._turns import normalize_content

    secret = "sk-ant-api03-" + "k" * 40
    with pytest.raises(TypeError) as e:
        normalize_content([{"text": secret + "x" * 1_000_000}])  # no 'type'
    assert secret not in str(e.value) and len(str(e.value)) < 200


def test_images_and_pdfs_are_estimated_by_what_the_api_charges_not_their_base64() -> None:
    import base64

    from sdk.session._turns import IMAGE_TOKENS, PDF_PAGE_TOKENS, block_tokens

    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "A" * 1_000_000},
    }
    assert block_tokens(image) == IMAGE_TOKENS
    pdf = b"%PDF-1.4\n" + b"1 0 obj << /Type /Pages /Count 2 >>\n" + b"2 0 obj << /Type /Page >>\n" * 2
    doc = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()},
    }
    assert block_tokens(doc) == 2 * PDF_PAGE_TOKENS
    text_doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hello world"},
    }
    assert block_tokens(text_doc) == 2
