"""Which files a command reads: paths and folders walked in order, ``.gitignore`` obeyed.

A folder is walked top-down in sorted order; ``.git`` is never entered, hidden files
and folders (names starting with ``.``) are left out unless asked for, and every
``.gitignore`` on the way applies to what is below it (the deepest file that has a
say wins, as in git; an ignored folder is not entered, so nothing inside it can be
re-included). The ``.gitignore`` files of the folders above a named folder apply too,
up to the root of the git work tree it is in. A file named on the command line is
always read. Files that are not text (a NUL byte near the start, or bytes that are not
UTF-8) are skipped with a note rather than guessed at.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

__all__ = ["Skipped", "SourceFile", "find_files", "read_text"]

_SNIFF = 8192


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to read: ``shown`` is how it is named in output (relative where it can be)."""

    path: Path
    shown: str
    size: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path left out, and why (``binary``, ``not UTF-8``, ``unreadable: ...``)."""

    shown: str
    reason: str


@dataclass(frozen=True, slots=True)
class _Ignore:
    base: Path
    spec: pathspec.GitIgnoreSpec

    def verdict(self, path: Path, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included (``!pattern``), None: no pattern matched."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            return None
        if is_dir:
            rel += "/"
        return self.spec.check_file(rel).include


def _load_ignore(folder: Path) -> _Ignore | None:
    f = folder / ".gitignore"
    try:
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _Ignore(folder, pathspec.GitIgnoreSpec.from_lines(lines))


def _ancestor_ignores(folder: Path) -> list[_Ignore]:
    """The ``.gitignore`` files above ``folder`` up to its git work tree's root (outermost first)."""
    out: list[_Ignore] = []
    for parent in folder.parents:
        ig = _load_ignore(parent)
        if ig is not None:
            out.append(ig)
        if (parent / ".git").exists():
            out.reverse()
            return out
    return []  # not inside a work tree: only the folder's own .gitignore files count


def _ignored(ignores: Sequence[_Ignore], path: Path, is_dir: bool) -> bool:
    for ig in reversed(ignores):  # the deepest .gitignore with a say decides
        v = ig.verdict(path, is_dir)
        if v is not None:
            return v
    return False


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path.as_posix()


def find_files(
    paths: Sequence[str | os.PathLike[str]], *, hidden: bool = False
) -> Iterator[SourceFile | Skipped]:
    """Every file under ``paths`` in order (each file once), or why a path was left out."""
    seen: set[Path] = set()
    for given in paths:
        p = Path(given).absolute()
        if p.is_dir():
            yield from _walk(p, seen, hidden)
        elif p.is_file():
            if p not in seen:
                seen.add(p)
                yield SourceFile(p, _shown(p), p.stat().st_size)
        else:
            yield Skipped(os.fspath(given), "no such file or folder")


def _walk(root: Path, seen: set[Path], hidden: bool) -> Iterator[SourceFile | Skipped]:
    base = _ancestor_ignores(root)
    stack: list[tuple[Path, list[_Ignore]]] = [(root, base)]
    while stack:
        folder, ignores = stack.pop()
        own = _load_ignore(folder)
        if own is not None:
            ignores = [*ignores, own]
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as err:
            yield Skipped(_shown(folder), f"unreadable: {err.strerror}")
            continue
        subdirs: list[Path] = []
        for e in entries:
            if not hidden and e.name.startswith("."):
                continue
            path = Path(e.path)
            if e.is_dir(follow_symlinks=False):
                if e.name != ".git" and not _ignored(ignores, path, True):
                    subdirs.append(path)
            elif e.is_file() and not _ignored(ignores, path, False) and path not in seen:
                seen.add(path)
                yield SourceFile(path, _shown(path), e.stat().st_size)
        stack.extend((d, ignores) for d in reversed(subdirs))


def read_text(f: SourceFile) -> str | Skipped:
    """The file's text (newlines as they are), or why it is not text."""
    try:
        data = f.path.read_bytes()
    except OSError as e:
        return Skipped(f.shown, f"unreadable: {e.strerror}")
    if b"\0" in data[:_SNIFF]:
        return Skipped(f.shown, "binary")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        return Skipped(f.shown, f"not UTF-8 (byte {e.start})")
