"""SSE decoder: a long line costs O(its length) however it is split, the event-size cap
fires at the same size as ever, and any split of a stream decodes as the whole stream.

Work is measured in bytes allocated per feed (tracemalloc), never in time.
"""

from __future__ import annotations

import itertools
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import SSEEventTooLargeError
from sdk.stream import SSEDecoder

READ = 4096


def _peaks_per_feed(dec: SSEDecoder, chunks: list[bytes]) -> list[int]:
    """Peak bytes allocated during each feed, above what was held before it."""
    peaks = []
    tracemalloc.start()
    try:
        for c in chunks:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            dec.feed(c)
            peaks.append(tracemalloc.get_traced_memory()[1] - before)
    finally:
        tracemalloc.stop()
    return peaks


def test_a_long_unterminated_line_is_not_copied_per_feed() -> None:
    line = 2 * 1024 * 1024
    chunks = [b"data: "] + [b"x" * READ for _ in range(line // READ)]
    dec = SSEDecoder()
    peaks = _peaks_per_feed(dec, chunks)
    # Each feed keeps its own bytes; re-joining what is pending would be up to 2 MiB here.
    assert max(peaks) <= READ + 1024, max(peaks)
    assert sum(peaks) <= 2 * line, sum(peaks)
    # The line is joined once when it ends: the event is whole and nothing is left over.
    end = _peaks_per_feed(dec, [b"y\n\n"])
    assert end[0] <= 4 * line + 4096
    events = dec.feed(b"data: next\n\n")
    assert [e.data for e in events] == ["next"]


def test_many_lines_split_across_feeds_cost_linear() -> None:
    # Lines of 100 KB arriving in 1 KiB reads: per feed, only the new bytes are touched.
    body = b"".join(b"data: " + b"z" * 100_000 + b"\n\n" for _ in range(10))
    chunks = [body[i : i + 1024] for i in range(0, len(body), 1024)]
    dec = SSEDecoder()
    peaks = _peaks_per_feed(dec, chunks)
    assert sum(peaks) <= 6 * len(body), (sum(peaks), len(body))


@pytest.mark.parametrize("read", [1, 7, 64, 999, 1000, 1001, 4096])
def test_the_cap_fires_at_the_same_size_however_the_line_is_split(read: int) -> None:
    cap = 1000
    stream = b"data: " + b"x" * 3000
    dec = SSEDecoder(max_event_bytes=cap)
    fed = 0
    with pytest.raises(SSEEventTooLargeError, match=rf"over {cap} bytes \((\d+) so far\)") as e:
        for i in range(0, len(stream), read):
            piece = stream[i : i + read]
            fed += len(piece)
            dec.feed(piece)
    assert fed - len(piece) <= cap < fed  # the first feed that takes the line over the cap
    assert f"({fed} so far)" in str(e.value)


def test_the_cap_counts_earlier_data_lines_and_is_not_off_by_one() -> None:
    cap = 1000
    first = b"data: " + b"a" * 499 + b"\n"  # 500 characters of data so far (with its newline)
    dec = SSEDecoder(max_event_bytes=cap)
    assert dec.feed(first) == []
    assert dec.feed(b"b" * 500) == []  # 500 pending + 500: exactly at the cap
    with pytest.raises(SSEEventTooLargeError, match=r"\(1001 so far\)"):
        dec.feed(b"c")
    # After the error the decoder holds nothing of that line.
    ok = SSEDecoder(max_event_bytes=cap)
    ok.feed(b"data: " + b"d" * 900)
    assert [e.data for e in ok.feed(b"\n\n")] == ["d" * 900]


# Pieces chosen so that random cuts land inside CRLF pairs, multi-byte characters,
# invalid sequences, the BOM and field names.
PIECES = [
    b"data:",
    b"data: ",
    b"event: e",
    b"id: 7",
    b"id",
    b"retry: 12",
    b": note",
    b"\r",
    b"\n",
    b"\r\n",
    b"\r\n\r\n",
    b"\n\n",
    "é".encode(),
    "ユーザー".encode(),
    "😀".encode(),
    "\u2028".encode(),
    b"\xff",
    b"\xe2\x82",
    b"\xef\xbb\xbf",
    b"a",
    b" ",
]


def _decode(chunks: list[bytes]) -> tuple[Any, ...]:
    dec = SSEDecoder()
    out = []
    for c in chunks:
        out += dec.feed(c)
    out += dec.flush()
    return out, dec.replaced, dec.truncated_bytes, dec.last_event_id, dec.retry


@settings(max_examples=400, deadline=None)
@given(
    st.booleans(),
    st.lists(st.sampled_from(PIECES), max_size=40),
    st.lists(st.integers(0, 10_000), max_size=30),
)
def test_any_split_decodes_like_one_feed(bom: bool, pieces: list[bytes], cuts: list[int]) -> None:
    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(pieces)
    whole = _decode([data])
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]  # repeated cuts: empty feeds
    assert _decode([data[a:b] for a, b in itertools.pairwise(bounds)]) == whole
    assert _decode([data[i : i + 1] for i in range(len(data))]) == whole


def test_cr_lf_and_characters_split_at_every_point() -> None:
    data = "\ufeffdata: é\r\ndata: 😀\rdata: ユ\n\r\nid: 1\r\rdata: x\r\n\r\n".encode()
    whole = _decode([data])
    assert [e.data for e in whole[0]] == ["é\n😀\nユ", "x"]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert _decode([data[:i], data[i:j], data[j:]]) == whole


def test_the_last_event_id_is_the_last_dispatched_events() -> None:
    """A reconnection resumes after the last event delivered: the ``id:`` line of an event
    cut short must not count, or a server resumes after an event never delivered."""
    from sdk.stream._sse import SSEDecoder

    dec = SSEDecoder()
    assert [e.data for e in dec.feed(b"id: s:1\ndata: one\n\nid: s:2\ndata: tw")] == ["one"]
    assert dec.last_event_id == "s:1"
    dec.flush()  # the body ended there: the cut event is dropped
    assert dec.last_event_id == "s:1"
    again = SSEDecoder()
    again.feed(b"id: s:1\r\ndata: one\r\n\r\nid: s:2\r\n")  # CRLF: the line-by-line path
    assert again.last_event_id == "s:1"
