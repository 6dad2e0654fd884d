"""The regression corpus and its golden boundary snapshots.

Every file under ``corpora/<group>/`` is chunked with the kind its group names
(``prose`` -> text, ``code`` -> code, ``json`` -> json, ``jsonl`` -> jsonl,
``markdown`` -> markdown, ``mixed`` -> auto) at each budget in ``BUDGETS``; the chunks are
compared with ``corpora/_snapshots/<group>/<file>.txt``, a file meant to be read: per
budget, one line per chunk with its offsets, token count, flags, path and its first and
last few characters, so a diff says which chunk moved and where it now starts and ends.
Run with ``SEAM_UPDATE_SNAPSHOTS=1`` to (re)write snapshots, then review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent / "corpora"
SNAPSHOTS = ROOT / "_snapshots"
BUDGETS = (16, 64, 256)
GROUP_KINDS = {
    "prose": "text",
    "code": "code",
    "json": "json",
    "jsonl": "jsonl",
    "markdown": "markdown",
    "mixed": "auto",
}


@dataclass(frozen=True)
class CorpusFile:
    group: str
    path: Path

    @property
    def kind(self) -> str:
        return GROUP_KINDS[self.group]

    @property
    def name(self) -> str:
        return f"{self.group}/{self.path.name}"

    def read(self) -> str:
        with open(self.path, encoding="utf-8", newline="") as f:
            return f.read()

    @property
    def snapshot_path(self) -> Path:
        return SNAPSHOTS / self.group / (self.path.name + ".txt")


def corpus_files(groups: tuple[str, ...] | None = None) -> list[CorpusFile]:
    out = []
    for group in sorted(GROUP_KINDS):
        if groups is not None and group not in groups:
            continue
        folder = ROOT / group
        if folder.is_dir():
            out.extend(CorpusFile(group, p) for p in sorted(folder.iterdir()) if p.is_file())
    return out


def updating() -> bool:
    return os.environ.get("SEAM_UPDATE_SNAPSHOTS") == "1"


def _edge(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def render_snapshot(chunks_by_budget: dict[int, list[Any]]) -> str:
    """The readable snapshot: ``start-end tokens [flags] path | first…last``."""
    lines: list[str] = []
    for budget, chunks in sorted(chunks_by_budget.items()):
        lines.append(f"## max_tokens={budget}: {len(chunks)} chunks")
        for c in chunks:
            flags = "".join(f for f, on in (("O", c.oversize), ("P", c.partial)) if on) or "-"
            head, tail = c.text[:12], c.text[-12:] if len(c.text) > 24 else c.text[12:]
            edge = _edge(head) + (f" … {_edge(tail)}" if len(c.text) > 24 else _edge(tail))
            lines.append(f"{c.start}-{c.end} {c.tokens}t {flags} {c.path or '-'} | {edge}")
        lines.append("")
    return "\n".join(lines)


def load_snapshot(cf: CorpusFile) -> str | None:
    if not cf.snapshot_path.exists():
        return None
    return cf.snapshot_path.read_text(encoding="utf-8")


def save_snapshot(cf: CorpusFile, text: str) -> None:
    cf.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
    cf.snapshot_path.write_text(text, encoding="utf-8")
    old = cf.snapshot_path.with_suffix(".json")
    if old.exists():
        old.unlink()  # the earlier boundary-only snapshot
