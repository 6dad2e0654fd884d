from collections.abc import Sequence
from typing import TypeVar, overload

from typing_extensions import Buffer

_T = TypeVar("_T")

def char_ends(
    text: str,
    ids: Sequence[int] | Buffer,
    lengths: Buffer,
    start: int,
    wide: bool,
    /,
) -> bytes: ...
@overload
def prefix_counts(ends: Sequence[int] | Buffer, edges: Sequence[int] | Buffer, out: None, /) -> list[int]: ...
@overload
def prefix_counts(ends: Sequence[int] | Buffer, edges: Sequence[int] | Buffer, out: Buffer, /) -> None: ...
def utf8_sizes(text: str, starts: Sequence[int] | Buffer, ends: Sequence[int] | Buffer, /) -> list[int]: ...
def build(
    cls: type[_T], names: tuple[str, ...], columns: tuple[Sequence[object], ...], n: int, /
) -> list[_T]: ...
def first_found(units: str | Buffer, kind: int, needles: tuple[str, ...], /) -> list[int]: ...
def json_value_end(units: str | Buffer, kind: int, pos: int, stop: int, /) -> int: ...
def json_front(units: str | Buffer, kind: int, pos: int, stop: int, /) -> tuple[bytes, int] | None: ...
def json_values(
    units: str | Buffer, kind: int, pos: int, lines: bool, width: int, limit: int, /
) -> tuple[bytes, int]: ...
def md_lines(
    units: str | Buffer,
    kind: int,
    start: int,
    end: int,
    heading_starts: Sequence[int] | Buffer,
    width: int = 8,
    /,
) -> tuple[bytes, bytes, bytes]: ...
def additive(units: str | Buffer, kind: int, p: int, rule: int, step: int, table: Buffer, /) -> int: ...
def level_cuts(
    units: str | Buffer,
    kind: int,
    start: int,
    end: int,
    level: int,
    table: Buffer,
    wide: bool,
    limit: int,
    pos: int,
    /,
) -> tuple[bytes, int]: ...
def fine_cuts(
    units: str | Buffer,
    kind: int,
    start: int,
    end: int,
    table: Buffer,
    wide: bool,
    limit: int,
    level: int,
    pos: int,
    aux: int,
    found: bool,
    /,
) -> tuple[bytes, int, int, int, bool] | None: ...
def unfilled(units: str | Buffer, kind: int, table: Buffer, /) -> list[int]: ...
def json_close(units: str | Buffer, kind: int, pos: int, /) -> int: ...
def json_children(
    units: str | Buffer, kind: int, pos: int, close: int, is_object: bool, limit: int, /
) -> bytes: ...
