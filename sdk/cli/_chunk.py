"""``seam chunk`` and ``seam count``: files in, chunks (or counts) and a summary out.

The work is plain functions over :class:`~sdk.cli._files.SourceFile` values so the
tests and the HTML page use exactly what the command prints; the Typer layer only
parses options and picks the exit status.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ..chunking import Chunk, Chunker, ChunkKind, detect_kind
from ..tokens import count_tokens
from ._files import Skipped, SourceFile, find_files, read_text

__all__ = ["FileChunks", "Summary", "chunk_files", "chunk_record", "progress_bar", "summary_table"]


@dataclass(frozen=True, slots=True)
class FileChunks:
    """One file's chunks; ``kind`` is what ``kind="auto"`` decided for the whole file."""

    file: SourceFile
    text: str
    kind: str
    chunks: tuple[Chunk, ...]

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.chunks)

    @property
    def oversize(self) -> int:
        return sum(1 for c in self.chunks if c.oversize)


@dataclass(slots=True)
class _Row:
    files: set[str] = field(default_factory=set)
    chunks: int = 0
    tokens: int = 0
    oversize: int = 0
    partial: int = 0


@dataclass(slots=True)
class Summary:
    """Totals, and the same per (chunk kind, language)."""

    files: int = 0
    chunks: int = 0
    tokens: int = 0
    oversize: int = 0
    partial: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    rows: dict[tuple[str, str], _Row] = field(default_factory=dict)

    def add(self, fc: FileChunks) -> None:
        self.files += 1
        for c in fc.chunks:
            row = self.rows.setdefault((c.kind, c.language or "-"), _Row())
            row.files.add(fc.file.shown)
            row.chunks += 1
            row.tokens += c.tokens
            row.oversize += c.oversize
            row.partial += c.partial
            self.chunks += 1
            self.tokens += c.tokens
            self.oversize += c.oversize
            self.partial += c.partial


def progress_bar(console: Console) -> Progress:
    """Files and bytes done; drawn only on a terminal (``console`` decides)."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def chunk_files(
    paths: Sequence[str | os.PathLike[str]],
    chunker: Chunker,
    *,
    kind: ChunkKind = "auto",
    hidden: bool = False,
    console: Console,
    on_file: Callable[[FileChunks], None] | None = None,
) -> tuple[Summary, list[FileChunks]]:
    """Chunk every file under ``paths``; ``on_file`` sees each file's chunks as they come."""
    summary = Summary()
    found: list[SourceFile] = []
    for item in find_files(paths, hidden=hidden):
        if isinstance(item, Skipped):
            summary.skipped.append(item)
        else:
            found.append(item)
    done: list[FileChunks] = []
    with progress_bar(console) as progress:
        task = progress.add_task("chunking", total=sum(f.size for f in found))
        for n, f in enumerate(found, 1):
            progress.update(task, description=f"{n}/{len(found)} files {_short(f.shown)}")
            text = read_text(f)
            if isinstance(text, Skipped):
                summary.skipped.append(text)
            else:
                file_kind = kind if kind != "auto" else detect_kind(text, filename=f.path.name)[0]
                with warnings.catch_warnings():
                    # A fallback (an unknown language, an unparseable tail) loses no text.
                    warnings.simplefilter("ignore")
                    chunks = chunker.chunk(text, kind=kind, filename=os.fspath(f.path))
                fc = FileChunks(f, text, file_kind, tuple(chunks))
                summary.add(fc)
                done.append(fc)
                if on_file is not None:
                    on_file(fc)
            progress.advance(task, f.size)
    return summary, done


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def chunk_record(fc: FileChunks, index: int, c: Chunk) -> dict[str, Any]:
    """One JSON Lines record: where the chunk is in its file and what it holds.

    ``file`` is the file as shown; ``start``/``end`` are code-point offsets
    (``text[start:end]``), ``byte_start`` and ``byte_end`` UTF-8 offsets; ``path`` is the
    chunk's own path inside the file (a heading trail, a JSON Pointer, a definition's
    name) where its format has one: the same word and value as :attr:`Chunk.path`."""
    return {
        "file": fc.file.shown,
        "index": index,
        "start": c.start,
        "end": c.end,
        "byte_start": c.byte_start,
        "byte_end": c.byte_end,
        "tokens": c.tokens,
        "kind": c.kind,
        "language": c.language,
        "path": c.path,
        "oversize": c.oversize,
        "partial": c.partial,
        "text": c.text,
    }


def write_jsonl(out: TextIO, fc: FileChunks) -> None:
    for i, c in enumerate(fc.chunks):
        out.write(orjson.dumps(chunk_record(fc, i, c)).decode())
        out.write("\n")
    out.flush()


def summary_table(summary: Summary, *, max_tokens: int, encoding: str) -> Table:
    table = Table(
        title=f"{summary.files} files, {summary.chunks} chunks, {summary.tokens:,} tokens "
        f"(at most {max_tokens} per chunk, {encoding})",
        title_justify="left",
    )
    for name in ("kind", "language"):
        table.add_column(name)
    for name in ("files", "chunks", "tokens", "mean", "oversize", "partial"):
        table.add_column(name, justify="right")
    for (kind, lang), row in sorted(summary.rows.items()):
        table.add_row(
            kind,
            lang,
            str(len(row.files)),
            str(row.chunks),
            f"{row.tokens:,}",
            f"{row.tokens / row.chunks:.0f}",
            _flag(row.oversize),
            str(row.partial),
        )
    table.add_section()
    table.add_row(
        "all",
        "",
        str(summary.files),
        str(summary.chunks),
        f"{summary.tokens:,}",
        f"{summary.tokens / summary.chunks:.0f}" if summary.chunks else "-",
        _flag(summary.oversize),
        str(summary.partial),
        style="bold",
    )
    return table


def _flag(n: int) -> str:
    return f"[red]{n}[/red]" if n else "0"


def oversize_lines(files: Iterable[FileChunks], limit: int = 20) -> list[str]:
    """Where the oversize chunks are (the first ``limit``)."""
    out: list[str] = []
    for fc in files:
        for i, c in enumerate(fc.chunks):
            if c.oversize:
                out.append(
                    f"{fc.file.shown} chunk {i}: {c.tokens} tokens at {c.start}-{c.end} {c.text[:24]!r}"
                )
    if len(out) > limit:
        out = [*out[:limit], f"... and {len(out) - limit} more"]
    return out


@dataclass(frozen=True, slots=True)
class FileCount:
    shown: str
    chars: int
    tokens: int
    source: str  # "tiktoken o200k_base", "server" or "estimate"


def count_local(
    paths: Sequence[str | os.PathLike[str]], encoding: str, *, hidden: bool = False
) -> tuple[list[FileCount], list[Skipped]]:
    counts: list[FileCount] = []
    skipped: list[Skipped] = []
    for item in find_files(paths, hidden=hidden):
        text = item if isinstance(item, Skipped) else read_text(item)
        if isinstance(text, Skipped):
            skipped.append(text)
            continue
        assert isinstance(item, SourceFile)
        counts.append(FileCount(item.shown, len(text), count_tokens(text, encoding), encoding))
    return counts, skipped


def count_table(counts: Sequence[FileCount]) -> Table:
    table = Table(title_justify="left")
    table.add_column("file")
    table.add_column("chars", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("counted by")
    for fc in counts:
        table.add_row(fc.shown, f"{fc.chars:,}", f"{fc.tokens:,}", fc.source)
    if len(counts) > 1:
        table.add_section()
        table.add_row(
            f"{len(counts)} files",
            f"{sum(c.chars for c in counts):,}",
            f"{sum(c.tokens for c in counts):,}",
            "",
            style="bold",
        )
    return table
