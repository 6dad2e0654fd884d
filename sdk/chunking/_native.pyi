from collections.abc import Callable, Sequence, Set
from typing import Any

from typing_extensions import Buffer

def json_setup(
    splitter_type: type,
    value_type: type,
    prefix_type: type,
    run_type: type,
    section_type: type,
    decode: Callable[[str], str],
    no_open: Set[int],
    run: int,
    gaps: object,
    /,
) -> None: ...
def json_split(splitter: object, text: str, section: tuple[object, ...], /) -> Sequence[Any]: ...
def flat_setup(types: tuple[type, ...], /) -> None: ...
def pack(
    engine: object,
    edges: Buffer | Sequence[int],
    parts: Sequence[tuple[object, ...]] | None,
    template: tuple[object, ...],
    view: object,
    lead: object,
    light: tuple[object, ...],
    meta: Callable[[Any], tuple[object, ...]],
    raw_type: type,
    rule: int,
    classes: Buffer,
    prose: tuple[object, ...] | None = None,
    /,
) -> None: ...
