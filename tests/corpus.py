"""The regression corpus and its golden boundary snapshots.

Every file under ``corpora/<group>/`` is chunked with the kind its group names
(``prose`` -> text, ``code`` -> code, ``json`` -> json, ``jsonl`` -> jsonl,
``markdown`` -> markdown, ``mixed`` -> auto) at each budget in ``BUDGETS``; the chunk
boundaries are compared with ``corpora/_snapshots/<group>/<file>.json``.
Run with ``SEAM_UPDATE_SNAPSHOTS=1`` to (re)write snapshots, then review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

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
        return SNAPSHOTS / self.group / (self.path.name + ".json")


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


def load_snapshot(cf: CorpusFile) -> dict[str, list[int]] | None:
    if not cf.snapshot_path.exists():
        return None
    data: dict[str, list[int]] = json.loads(cf.snapshot_path.read_text(encoding="utf-8"))
    return data


def save_snapshot(cf: CorpusFile, data: dict[str, list[int]]) -> None:
    cf.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=0, sort_keys=True, separators=(",", ":"))
    cf.snapshot_path.write_text(text + "\n", encoding="utf-8")
