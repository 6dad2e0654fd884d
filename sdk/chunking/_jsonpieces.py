"""Standalone JSON pieces: :func:`json_pieces` and its inverse :func:`merge_pieces`.

Each piece is a valid JSON document, a verbatim slice of the input inside a small
wrapper that records where it belongs, and fits the token budget wrapper included.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sdk._errors import SDKError
from sdk.tokens import DEFAULT_ENCODING, EncodingSpec, checked_text

from ._engine import Engine, Sizer
from ._json import JSONSplitter, _Constant, _Duplicate, _no_constant, _no_duplicates, _strict_docs, _Text
from ._jsontok import (
    Child,
    JSONTokenizer,
    Structure,
    decode_key,
    escape_pointer,
)
from ._types import Section

__all__ = ["JSONPiece", "json_pieces", "merge_pieces"]


# -- standalone pieces ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JSONPiece:
    """One valid JSON document of :func:`json_pieces`, within the budget wrapper included.

    ``pointer`` is the RFC 6901 pointer of the first value in the piece; inside a string
    holding JSON (``expand_embedded``) it is relative to that embedded document, and
    ``embedded`` lists the pointers of the strings stepped into, outermost first.
    ``partial`` marks a part of a string.
    """

    text: str
    tokens: int
    pointer: str
    partial: bool = False
    embedded: tuple[str, ...] = ()


class _TooSmall(SDKError, ValueError):
    """The budget cannot hold one indivisible value with its path (a ``ValueError``, as
    documented, and an ``SDKError`` like every error the SDK raises on purpose)."""


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a value sits: the path array's items as JSON texts, and its pointer."""

    segments: tuple[str, ...]
    pointer: str
    embedded: tuple[str, ...]

    def child(self, segment: str, pointer_segment: str) -> _Where:
        return _Where((*self.segments, segment), f"{self.pointer}/{pointer_segment}", self.embedded)

    def path(self) -> str:
        return "[" + ",".join(self.segments) + "]"


_Job = Iterator["_Job"]


# A value longer than this (characters) is sized from one encoding of its document
# (``_estimate``); a shorter one is encoded by itself.
_LONG = 2048


class _PieceMaker:
    __slots__ = ("_engines", "budget", "expand", "out", "sizer", "surely_over")

    def __init__(self, sizer: Sizer, budget: int, expand: bool) -> None:
        self.sizer = sizer
        self.budget = budget
        self.expand = expand
        self.out: list[JSONPiece] = []
        # A text with more UTF-8 bytes than this cannot fit: skip encoding it.
        self.surely_over = budget * sizer.max_token_bytes
        self._engines: dict[int, tuple[Structure, Engine]] = {}

    def _count(self, text: str) -> int:
        if len(text) > self.surely_over:
            return self.budget + 1
        return self.sizer.count(text)

    def _estimate(self, st: Structure, a: int, b: int) -> int:
        """The count of ``st.text[a:b]``: exact for a short range; for a long one, the
        tokens of one encoding of the whole document that lie inside it (off by the few
        next to its edges), so that a value nested N deep is not encoded again at each of
        its N levels (that cost its size times its depth)."""
        if b - a <= _LONG:
            return self._count(st.text[a:b])
        if b - a > self.surely_over:
            return self.budget + 1
        got = self._engines.get(id(st))
        if got is None:
            got = self._engines[id(st)] = (st, Engine(st.text, self.budget, self.sizer))
        return got[1].tokens_inside(a, b)

    def _hopeless(self, tokens: int) -> bool:
        """A wrapped value estimated at ``tokens`` cannot fit: it is over the budget by a
        sixteenth and 16 more (an estimate's edges and a wrapper's junctions change a
        few tokens, not that many), so the wrapped text is neither built nor encoded.
        Wrong, it would only cut a value that might have fitted: every piece is still
        counted exactly."""
        return tokens > self.budget + self.budget // 16 + 16

    def run(self, job: _Job) -> None:
        """Run jobs depth first with an explicit stack (no recursion in depth)."""
        stack = [job]
        while stack:
            try:
                sub = next(stack[-1])
            except StopIteration:
                stack.pop()
                continue
            stack.append(sub)

    def _emit(self, text: str, tokens: int, where: _Where, pointer: str, partial: bool = False) -> None:
        self.out.append(JSONPiece(text, tokens, pointer, partial, where.embedded))

    def _too_small(self, where: _Where, need: str) -> _TooSmall:
        return _TooSmall(
            f"max_tokens={self.budget} is too small for the value at {where.pointer!r}: {need} does not fit"
        )

    def value(self, st: Structure, start: int, end: int, where: _Where) -> _Job:
        text = st.text
        if end - start > _LONG and self._hopeless(self._estimate(st, start, end)):
            yield from self.descend(st, start, end, where)
            return
        piece = '{"path":' + where.path() + ',"value":' + text[start:end] + "}"
        n = self._count(piece)
        if n <= self.budget:
            self._emit(piece, n, where, where.pointer)
            return
        yield from self.descend(st, start, end, where)

    def descend(self, st: Structure, start: int, end: int, where: _Where) -> _Job:
        """Pieces for a value that does not fit whole."""
        c = st.text[start]
        if c == "{" or c == "[":
            kids, _ = st.children(start, end - 1)
            if kids:
                yield self.group(st, kids, c == "[", where)
                return
        elif c == '"':
            embedded = self._embedded(st.text[start:end]) if self.expand else None
            if embedded is not None:
                decoded, style = embedded
                inner = Structure(decoded)
                seg = '{"json":"' + style + '"}'
                nested = _Where((*where.segments, seg), "", (*where.embedded, where.pointer))
                yield self.value(inner, 0, len(decoded), nested)
            else:
                self.string(st, start, end, where)
            return
        # Indivisible (a number, a literal, an empty container): alone with its path,
        # which may fit where its parent's wrapper with its key did not.
        piece = '{"path":' + where.path() + ',"value":' + st.text[start:end] + "}"
        n = self._count(piece)
        if n > self.budget:
            need = "an empty container" if c in "{[" else f"the value {st.text[start:end][:40]!r}"
            raise self._too_small(where, f"{need} with its path ({where.path()[:60]})")
        self._emit(piece, n, where, where.pointer)

    def group(self, st: Structure, kids: Sequence[Child], is_array: bool, where: _Where) -> _Job:
        """Pack consecutive members/elements into pieces; descend into any that does not fit."""
        text = st.text
        count = self._count
        budget = self.budget
        costs: list[int] = []
        head_path = '{"path":' + where.path()
        i, n = 0, len(kids)
        while i < n:
            while len(costs) <= i:
                kid = kids[len(costs)]
                costs.append(self._estimate(st, kid.begin, kid.end))
            if is_array:
                head, tail = head_path + ',"index":' + str(i) + ',"elements":[', "]}"
            else:
                head, tail = head_path + ',"members":{', "}}"
            # A wrapper shorter than the budget in characters leaves room; only a longer
            # one is counted before a member that cannot fit anyway is descended into.
            hopeless = self._hopeless(costs[i])
            est = 0 if hopeless and len(head) + len(tail) < budget else count(head + tail)
            if hopeless and est < budget:
                k = kids[i]
                yield self.descend(st, k.start, k.end, self._kid_where(text, k, i, is_array, where))
                i += 1
                continue
            if est >= budget:
                # The wrapper alone leaves no room: each member goes alone with its own
                # path ({"path": [..., key], "value": ...} is shorter than the wrapper
                # with its key), and says "too small" only if it cannot.
                # Paths only grow with depth: once one with the least value does not fit,
                # nothing below it can (and deep nesting stops here, not at the bottom).
                for m in range(i, n):
                    kid = kids[m]
                    child = self._kid_where(text, kid, m, is_array, where)
                    if count('{"path":' + child.path() + ',"value":0}') > budget:
                        raise self._too_small(where, "the path")
                    yield self.value(st, kid.start, kid.end, child)
                return
            j = i
            while j < n:
                while len(costs) <= j:
                    kid = kids[len(costs)]
                    costs.append(self._estimate(st, kid.begin, kid.end))
                add = costs[j] + (j > i)
                if est + add > budget:
                    break
                est += add
                j += 1
            if j > i or kids[i].end - kids[i].begin <= _LONG or not self._hopeless(est + costs[i]):
                j = max(j, i + 1)  # a lone member is tried exactly, unless surely over
            while j > i:
                piece = head + ",".join(text[k.begin : k.end] for k in kids[i:j]) + tail
                tokens = count(piece)
                if tokens <= budget:
                    break
                j -= 1
            if j > i:
                self._emit(piece, tokens, where, self._kid_where(text, kids[i], i, is_array, where).pointer)
                i = j
                continue
            k = kids[i]
            yield self.descend(st, k.start, k.end, self._kid_where(text, k, i, is_array, where))
            i += 1

    @staticmethod
    def _kid_where(text: str, k: Child, i: int, is_array: bool, where: _Where) -> _Where:
        if is_array:
            return where.child(str(i), str(i))
        raw_key = text[k.key_start : k.key_end]
        return where.child(raw_key, escape_pointer(decode_key(raw_key)))

    def string(self, st: Structure, start: int, end: int, where: _Where) -> None:
        """Parts of a string, cut where ``chunk`` would cut it, each wrapped and exact."""
        text = st.text
        head, tail = '{"path":' + where.path() + ',"text":"', '"}'
        room = self.budget - self.sizer.count(head + tail)
        if start + 2 == end:  # the empty string: its piece is the wrapper alone
            if room < 0:
                raise self._too_small(where, "the path")
            self._emit(head + tail, self.budget - room, where, where.pointer)
            return
        splitter = JSONSplitter(st)
        while room >= 1:
            section = Section(start + 1, end - 1, splitter, _Text(start + 1, end - 1, 0), "json")
            raw = Engine(text, room, self.sizer).run(section)
            pieces = [head + text[r.start : r.end] + tail for r in raw]
            counts = [self.sizer.count(p) for p in pieces]
            over = max((c - self.budget for c in counts), default=0)
            if over <= 0 and not any(r.oversize for r in raw):
                for p, c in zip(pieces, counts):
                    self._emit(p, c, where, where.pointer, partial=True)
                return
            room -= max(over, 1)
        raise self._too_small(where, "one character of the string with its wrapper")

    @staticmethod
    def _embedded(raw: str) -> tuple[str, str] | None:
        """The decoded text and separator style of a string that holds a JSON container
        and reserializes to exactly itself (so the merge can rebuild the string)."""
        decoded = json.loads(raw)
        if not isinstance(decoded, str) or decoded[:1] not in ("{", "["):
            return None
        try:
            value = json.loads(decoded, parse_constant=_no_constant, object_pairs_hook=_pairs_unique)
        except (ValueError, _Duplicate, _Constant, RecursionError):
            return None
        for style, separators in (("compact", (",", ":")), ("spaced", (", ", ": "))):
            if json.dumps(value, ensure_ascii=False, separators=separators) == decoded:
                return decoded, style
        return None


def _pairs_unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    _no_duplicates(pairs)
    return dict(pairs)


def json_pieces(
    text: str,
    max_tokens: int = 512,
    *,
    encoding: EncodingSpec = DEFAULT_ENCODING,
    expand_embedded: bool = False,
) -> list[JSONPiece]:
    """Standalone valid JSON documents, each within ``max_tokens`` (wrapper included).

    Raises :class:`JSONChunkError` for malformed JSON (also ``NaN``/``Infinity`` and
    duplicate keys) and ``ValueError`` when the budget cannot hold even one indivisible
    value (a number, a literal, one character of a string) with its path.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TypeError("max_tokens must be an int")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    text = checked_text(text, "json_pieces()")  # (a lone surrogate made pieces UTF-8 cannot hold)
    docs = _strict_docs(text)
    maker = _PieceMaker(Sizer(encoding), max_tokens, expand_embedded)
    st = Structure(text)
    root = _Where((), "", ())
    if len(docs) == 1:
        maker.run(maker.value(st, docs[0][0], docs[0][1], root))
    else:
        kids = [Child(a, a, a, a, b, b) for a, b in docs]
        maker.run(maker.group(st, kids, True, root))
    return maker.out


# -- merging --------------------------------------------------------------------------


class _Unset:
    __slots__ = ()


_UNSET = _Unset()


class _Parts:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []


class _Embedded:
    __slots__ = ("box", "style")

    def __init__(self, style: str) -> None:
        self.style = style
        self.box: list[Any] = [_UNSET]


def _bad(message: str) -> ValueError:
    return ValueError(f"pieces do not fit together: {message}")


def merge_pieces(pieces: Iterable[JSONPiece | str | Mapping[str, Any]]) -> Any:
    """The value :func:`json_pieces` was given, rebuilt from its pieces in their order."""
    box: list[Any] = [_UNSET]
    count = 0
    for piece in pieces:
        count += 1
        try:
            if isinstance(piece, JSONPiece):
                obj = _loads(piece.text)
            elif isinstance(piece, str):
                obj = _loads(piece)
            else:
                obj = piece
        except ValueError as exc:  # not JSON, or an integer past Python's digit limit
            raise ValueError(f"piece {count} cannot be read: {exc}") from exc
        if not isinstance(obj, Mapping) or not isinstance(obj.get("path"), list):
            raise _bad(f"piece {count} has no path")
        holder, key = _navigate(box, obj["path"])
        target = holder[key]
        if "value" in obj:
            if target is not _UNSET:
                raise _bad(f"piece {count} sets a value twice")
            holder[key] = obj["value"]
        elif "elements" in obj:
            if target is _UNSET:
                target = holder[key] = []
            if not isinstance(target, list) or obj.get("index") != len(target):
                raise _bad(f"piece {count}: elements do not continue the array")
            target.extend(obj["elements"])
        elif "members" in obj:
            if target is _UNSET:
                target = holder[key] = {}
            if not isinstance(target, dict) or any(k in target for k in obj["members"]):
                raise _bad(f"piece {count}: members repeat or the target is not an object")
            target.update(obj["members"])
        elif "text" in obj:
            if target is _UNSET:
                target = holder[key] = _Parts()
            if not isinstance(target, _Parts):
                raise _bad(f"piece {count}: text for a value that is not a string")
            target.parts.append(obj["text"])
        else:
            raise _bad(f"piece {count} holds no value")
    if count == 0:
        raise _bad("no pieces")
    return _finish(box)


def _loads(text: str) -> Any:
    """``json.loads``, and for nesting deeper than it can recurse, a build from the
    tokenizer's events with an explicit stack."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    tok = JSONTokenizer()
    events = tok.feed(text) + tok.close()
    stack: list[Any] = []
    keys: list[str] = []
    root: Any = None
    for e in events:
        if e.type == "key":
            keys.append(decode_key(text[e.start : e.end]))
            continue
        if e.type in ("start_object", "start_array"):
            stack.append({} if e.type == "start_object" else [])
            continue
        closing = e.type in ("end_object", "end_array")
        value = stack.pop() if closing else json.loads(text[e.start : e.end])
        if not stack:
            root = value
        elif isinstance(stack[-1], list):
            stack[-1].append(value)
        else:
            stack[-1][keys.pop()] = value
    return root


def _navigate(box: list[Any], path: list[Any]) -> tuple[Any, Any]:
    holder: Any = box
    key: Any = 0
    for seg in path:
        cur = holder[key]
        if cur is _UNSET:
            if isinstance(seg, bool) or not isinstance(seg, (int, str, dict)):
                raise _bad(f"bad path step {seg!r}")
            if isinstance(seg, dict):
                cur = _Embedded(str(seg.get("json", "")))
            else:
                cur = [] if isinstance(seg, int) else {}
            holder[key] = cur
        if isinstance(seg, dict):
            if not isinstance(cur, _Embedded):
                raise _bad(f"path step {seg!r} into a value that is not embedded JSON")
            holder, key = cur.box, 0
        elif isinstance(seg, int) and not isinstance(seg, bool):
            if not isinstance(cur, list) or not 0 <= seg <= len(cur):
                raise _bad(f"index {seg} does not continue the array")
            if seg == len(cur):
                cur.append(_UNSET)
            holder, key = cur, seg
        elif isinstance(seg, str):
            if not isinstance(cur, dict):
                raise _bad(f"key {seg!r} into a value that is not an object")
            cur.setdefault(seg, _UNSET)
            holder, key = cur, seg
        else:
            raise _bad(f"bad path step {seg!r}")
    return holder, key


def _finish(box: list[Any]) -> Any:
    """Replace string parts and embedded documents by their values (iteratively)."""
    # Post-order over containers that may hold holders.
    stack: list[tuple[Any, bool]] = [(box, False)]
    while stack:
        node, done = stack.pop()
        if not done:
            stack.append((node, True))
            values: Iterable[Any]
            if isinstance(node, dict):
                values = node.values()
            else:
                values = node.box if isinstance(node, _Embedded) else node
            stack.extend((v, False) for v in values if isinstance(v, (list, dict, _Embedded)))
            continue
        if isinstance(node, _Embedded):
            continue
        keys = node.keys() if isinstance(node, dict) else range(len(node))
        for k in list(keys):
            v = node[k]
            if v is _UNSET:
                raise _bad(f"missing value at {k!r}")
            if isinstance(v, _Parts):
                node[k] = "".join(v.parts)
            elif isinstance(v, _Embedded):
                inner = v.box[0]
                if inner is _UNSET:
                    raise _bad("empty embedded document")
                seps = (",", ":") if v.style == "compact" else (", ", ": ")
                node[k] = json.dumps(inner, ensure_ascii=False, separators=seps)
    return box[0]
