"""What the client knows of models: the server's model list read into :class:`ModelInfo`,
the context windows of hosted models by name, and :class:`TokenCount`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ModelInfo", "TokenCount", "known_window", "models_from", "positive"]


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Input tokens of a request. ``source`` says whether the server counted them
    (``"server"``, exact for that model) or the SDK estimated them locally with tiktoken
    (``"estimate"``: another tokenizer, so only an approximation)."""

    input_tokens: int
    source: Literal["server", "estimate"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model the server lists. ``context_window``: its window in tokens where the list
    says it (vLLM's ``max_model_len``, llama-server's ``meta.n_ctx``)."""

    id: str
    display_name: str | None = None
    owned_by: str | None = None
    context_window: int | None = None


def models_from(answer: Mapping[str, Any]) -> list[ModelInfo]:
    """The models of a ``/v1/models`` (or ``/models``) answer; malformed entries are
    skipped."""
    data = answer.get("data")
    out: list[ModelInfo] = []
    for m in data if isinstance(data, list) else ():
        if isinstance(m, Mapping) and isinstance(m.get("id"), str):
            dn, ob = m.get("display_name"), m.get("owned_by")
            meta = m.get("meta")
            window = positive(m.get("max_model_len")) or positive(
                meta.get("n_ctx") if isinstance(meta, Mapping) else None
            )
            out.append(
                ModelInfo(
                    m["id"],
                    dn if isinstance(dn, str) else None,
                    ob if isinstance(ob, str) else None,
                    window,
                )
            )
    return out


# Context windows of hosted models by name prefix (longest prefix first), for servers
# that do not say it.
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
)


def known_window(model: str) -> int | None:
    for prefix, n in sorted(_WINDOWS, key=lambda p: -len(p[0])):
        if model.startswith(prefix):
            return n
    return None


def positive(v: object) -> int | None:
    """A context window as a server states it: a positive integer of tokens, below 2**31
    (a larger one is no window: an answer that would overflow whatever stores or sends
    it on, a scheduling server's model list among them)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**31 else None
