"""The partial tool-JSON scan costs the same per delta at any nesting depth.

Work is measured, never timed: Python operations are counted with an opcode tracer, and
the memory a single ``advance`` allocates (which is where C-level copies of a
depth-sized string would show) is measured with tracemalloc.
"""

from __future__ import annotations

import functools
import gc
import json
import sys
import tracemalloc
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from sdk.stream._partial_json import MAX_DEPTH, JSONPrefix, partial_value

T = TypeVar("T")

UNIT = '[{"a":[1,'  # three brackets, a key, a comma per unit: every kind of safe cut
DELTA = 16


class OverBudget(Exception):
    pass


def count_opcodes(fn: Callable[[], T], limit: int) -> tuple[T, int]:
    """Run ``fn`` counting the bytecode instructions executed in Python frames it enters
    (raises :class:`OverBudget` past ``limit``, so a quadratic scan fails fast)."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
            if count > limit:
                raise OverBudget(f"over {limit} operations")
        return tracer

    # A collection inside fn would run other objects' finalizers (an earlier test's
    # connections, say) in traced frames and count their operations as fn's.
    enabled = gc.isenabled()
    gc.disable()
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(old)
        if enabled:
            gc.enable()
    return result, count


def test_operations_per_delta_do_not_grow_with_depth() -> None:
    gc.collect()  # earlier tests' garbage goes now, not inside a counted call
    text = UNIT * 5000  # 15,000 open brackets
    deltas = [text[i : i + DELTA] for i in range(0, len(text), DELTA)]
    p = JSONPrefix()
    counts = []
    limit = 10_000
    for i, d in enumerate(deltas):
        p, n = count_opcodes(functools.partial(p.advance, d), limit)
        counts.append(n)
        if i == 2 * len(UNIT) - 1:  # every alignment of the unit to a delta seen twice, shallow
            limit = 2 * max(counts) + 20
    assert max(counts) <= 2 * max(counts[: 2 * len(UNIT)]) + 20
    # The stack holds what orjson could parse; brackets past that are counted.
    assert p.stack == ("[{[" * 5000)[:MAX_DEPTH]
    assert p.deep == 15_000 - MAX_DEPTH
    assert p == JSONPrefix().advance(text)
    assert partial_value(text, p) is None  # no view of a text nested past the parser's depth


def test_brackets_past_the_parsers_depth_hold_no_object_each_and_close_back() -> None:
    """A megabyte of ``[`` (a server's choice) costs a counter, not a frame per bracket;
    closing them returns to the stack below, whose view works again."""
    gc.collect()
    tracemalloc.start()
    try:
        p = JSONPrefix().advance('{"a": ').advance("[" * 1_000_000)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert p.deep == 1_000_000 + 1 - MAX_DEPTH
    assert held < 200_000, held  # MAX_DEPTH frames, not a million
    text = '{"a": ' + "[" * 1_000_000 + "]" * 1_000_000 + ', "b": "x'
    q = JSONPrefix().advance(text)
    assert q.deep == 0 and q.stack == "{" and q.in_string
    shallow = '{"a": [], "b": "x'
    assert partial_value(shallow, JSONPrefix().advance(shallow)) == {"a": [], "b": "x"}


def _alloc_peak_of_one_advance(depth_units: int) -> int:
    p = JSONPrefix().advance(UNIT * depth_units)
    delta = (UNIT * 2)[:DELTA]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        p.advance(delta)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_memory_one_delta_allocates_does_not_grow_with_depth() -> None:
    shallow = _alloc_peak_of_one_advance(300)  # 900 open brackets
    deep = _alloc_peak_of_one_advance(4000)  # 12,000 open brackets
    assert deep <= shallow + 512, (shallow, deep)  # a copy of the stack would be 11,000+ bytes more


def test_stack_views_match_a_plain_scan_and_old_states_keep_theirs() -> None:
    text = json.dumps({"a": [1, {"b": [[], {}, "x]\\"]}], "c": {"d": [True]}, "e": "{"})
    states = [JSONPrefix()]
    for ch in text:
        states.append(states[-1].advance(ch))
    for cut, state in enumerate(states):
        expected = ""
        in_string = escaped = False
        for ch in text[:cut]:
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                expected += ch
            elif ch in "]}":
                expected = expected[:-1]
        assert state.stack == expected
        assert state.safe_closers == expected[::-1].translate(str.maketrans("[{", "]}"))
        view = partial_value(text[:cut], state)
        assert view is None or isinstance(view, dict)
    assert partial_value(text, states[-1]) == json.loads(text)
    assert len({*states}) == len(states)  # hashable, and distinct states differ
