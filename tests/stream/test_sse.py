"""SSE decoder: WHATWG event-stream interpretation, fed whole, byte by byte and in random splits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import SSEEventTooLargeError
from sdk.stream import ServerSentEvent, SSEDecoder

from .helpers import raises_three_ways, run, splits, three_ways


def decode(data: bytes, **kw: int) -> list[ServerSentEvent]:
    return three_ways(lambda: SSEDecoder(**kw), data)


@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"])
def test_fields_and_line_endings(eol: str) -> None:
    raw = eol.join(
        [
            ": a comment",
            "event: add",
            "data: one",
            "data:two",
            "data:  three",
            "id: 7",
            "retry: 1500",
            "",
            "data: second",
            "",
            "",
        ]
    )
    assert decode(raw.encode()) == [
        ServerSentEvent("one\ntwo\n three", "add", "7", 1500),
        ServerSentEvent("second", "message", "7", 1500),  # the id persists, the event type does not
    ]


def test_mixed_line_endings_and_a_cr_at_the_end_of_a_feed() -> None:
    raw = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"
    assert decode(raw) == [ServerSentEvent("a\nb\nc"), ServerSentEvent("d")]
    dec = SSEDecoder()
    assert dec.feed(b"data: x\r") == []
    assert dec.feed(b"\n") == []  # the LF completes the CRLF, it is not a blank line
    assert dec.feed(b"\r\n") == [ServerSentEvent("x")]


def test_only_cr_and_lf_split_lines() -> None:
    text = "a\u2028b\u2029c\x85d\x0be\x0cf"
    assert decode(f"data: {text}\n\n".encode()) == [ServerSentEvent(text)]


def test_spec_corner_cases() -> None:
    raw = (
        b"data\n\n"  # a field with no colon: empty data line -> one event with data ""
        b"event: lonely\n\n"  # no data: nothing is dispatched and the type resets
        b"data: after\n\n"
        b"id: bad\x00id\ndata: x\n\n"  # an id with NUL is ignored
        b"retry: 12a\ndata: y\n\n"  # a non-digit retry is ignored
        b"unknown: field\ndata:z\n\n"
        b"data: a\ndata\ndata: b\n\n"
    )
    assert decode(raw) == [
        ServerSentEvent(""),
        ServerSentEvent("after"),
        ServerSentEvent("x"),
        ServerSentEvent("y"),
        ServerSentEvent("z"),
        ServerSentEvent("a\n\nb"),
    ]


def test_bom_only_at_stream_start() -> None:
    bom = b"\xef\xbb\xbf"
    # a second BOM makes "\ufeffdata" an unknown field: ignored, as the spec says
    assert decode(bom + b"data: a\n\n" + bom + b"data: b\n\n") == [ServerSentEvent("a")]
    assert decode(bom + b"data: \xef\xbb\xbfa\n\n") == [ServerSentEvent("\ufeffa")]
    assert decode(b"\xef\xbbdata: a\n\n") == []  # half a BOM is garbage in the field name


def test_multibyte_characters_split_across_feeds() -> None:
    text = "héllo ユーザー 😀 ok"
    assert decode(f"data: {text}\n\n".encode()) == [ServerSentEvent(text)]


def test_invalid_utf8_is_replaced_and_counted_never_raised() -> None:
    raw = b"data: a\xffb\xe2\x82c\n\ndata: ok\n\n"
    events = decode(raw)
    assert events == [ServerSentEvent("a\ufffdb\ufffdc"), ServerSentEvent("ok")]
    for _, chunks in splits(raw):
        _, dec = run(SSEDecoder, chunks)
        assert isinstance(dec, SSEDecoder) and dec.replaced == 2


def test_event_size_cap() -> None:
    raises_three_ways(lambda: SSEDecoder(max_event_bytes=100), b"data: " + b"x" * 200, SSEEventTooLargeError)
    many = b"".join(b"data: " + b"y" * 30 + b"\n" for _ in range(10)) + b"\n"
    raises_three_ways(lambda: SSEDecoder(max_event_bytes=100), many, SSEEventTooLargeError)
    # under the cap, and many small events that together exceed it, are fine
    ok = b"".join(b"data: " + b"z" * 60 + b"\n\n" for _ in range(10))
    assert len(decode(ok, max_event_bytes=100)) == 10
    with pytest.raises(ValueError):
        SSEDecoder(max_event_bytes=0)


def test_flush_keeps_a_whole_last_event_and_counts_a_cut_one() -> None:
    assert decode(b"data: a\n\ndata: last\n") == [ServerSentEvent("a"), ServerSentEvent("last")]
    assert decode(b"data: a\n\ndata: cut") == [ServerSentEvent("a")]
    _, dec = run(SSEDecoder, [b"data: a\n\ndata: b\ndata: cut"])
    assert isinstance(dec, SSEDecoder) and dec.truncated_bytes > 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "message_start", "delta", "ping"]),
            st.lists(
                st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"])),
                min_size=1,
                max_size=3,
            ),
        ),
        max_size=8,
    ),
    st.sampled_from(["\n", "\r", "\r\n"]),
    st.integers(0, 1000),
)
def test_round_trip_random_events(events: list[tuple[str, list[str]]], eol: str, seed: int) -> None:
    raw = "".join(
        (f"event: {name}{eol}" if name else "") + "".join(f"data: {line}{eol}" for line in lines) + eol
        for name, lines in events
    ).encode()
    out = three_ways(SSEDecoder, raw, seed)
    assert out == [ServerSentEvent("\n".join(lines), name or "message") for name, lines in events]
