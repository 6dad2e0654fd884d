"""Walking a repository: configuration files read as lines, binary and undecodable
files reported clearly, many files chunked in order with their errors as results."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sdk.chunking import BinaryFileError, Chunker, UndecodableFileError, detect_kind

CONFIG = {
    "Makefile": "# Build\n\nall: build\n\n# Compile it\nbuild:\n\tgcc -o app main.c\n",
    "pyproject.toml": "# the project\n[project]\nname = 'x'\n",
    "config.yaml": "# settings\nserver:\n  port: 80\n",
    "compose.yml": "# services\nservices:\n  web:\n    image: x\n",
    "Dockerfile": "# base image\nFROM python:3.11\n# deps\nRUN pip install x\n",
    "Dockerfile.dev": "# dev\nFROM python:3.11\n",
    "schema.sql": "-- tables\nCREATE TABLE t (id int);\n",
    "setup.cfg": "# cfg\n[metadata]\nname = x\n",
    "app.ini": "; comment\n# heading-like\n[section]\nkey=value\n",
    ".gitignore": "# build output\nbuild/\n*.pyc\n",
}


@pytest.mark.parametrize("name", sorted(CONFIG))
def test_configuration_files_are_lines_not_markdown(name: str) -> None:
    kind, why = detect_kind(CONFIG[name], filename=name)
    assert kind == "text" and "line-oriented" in why


def test_a_binary_file_is_named(tmp_path: Path) -> None:
    p = tmp_path / "image.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    with pytest.raises(BinaryFileError) as e:
        Chunker(64).chunk_file(p)
    assert e.value.path == str(p) and "binary" in str(e.value)


def test_undecodable_text_names_its_byte_or_is_replaced(tmp_path: Path) -> None:
    p = tmp_path / "latin1.txt"
    p.write_bytes("café au lait\n".encode() + "naïve".encode("latin-1"))
    with pytest.raises(UndecodableFileError) as e:
        Chunker(64).chunk_file(p)
    assert e.value.offset == len("café au lait\n".encode()) + 2
    chunks = Chunker(64).chunk_file(p, errors="replace")
    assert "".join(c.text for c in chunks) == "café au lait\nna\ufffdve"
    with pytest.raises(ValueError):
        Chunker(64).chunk_file(p, errors="ignore")


def test_a_byte_order_mark_is_not_content(tmp_path: Path) -> None:
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbfhello world\n")
    assert "".join(c.text for c in Chunker(64).chunk_file(p)) == "hello world\n"


def test_many_files_in_order_with_errors_as_results(tmp_path: Path) -> None:
    paths = []
    for i in range(12):
        p = tmp_path / f"f{i:02d}.py"
        p.write_text(f"def f{i}(x):\n    return x + {i}\n\n" * (i + 1))
        paths.append(p)
    bad = tmp_path / "blob.bin"
    bad.write_bytes(bytes(64))
    paths.insert(5, bad)
    paths.insert(7, tmp_path / "missing.py")
    chunker = Chunker(32)
    seen: list[str] = []
    one = list(chunker.chunk_many(paths, on_progress=lambda r: seen.append(r.path)))
    many = list(chunker.chunk_many(paths, workers=3))
    assert [r.path for r in one] == [str(p) for p in paths] == seen
    assert [(r.path, [c.text for c in r.chunks], type(r.error)) for r in one] == [
        (r.path, [c.text for c in r.chunks], type(r.error)) for r in many
    ]
    assert isinstance(one[5].error, BinaryFileError) and isinstance(one[7].error, FileNotFoundError)
    assert all(r.ok and r.chunks for i, r in enumerate(one) if i not in (5, 7))


def test_an_item_that_is_not_a_path_is_an_error_result_and_one_path_is_refused(tmp_path: Path) -> None:
    """A non-path item (an int, None) ended the run with a TypeError; a bytes path is a
    path. A single str was iterated a character at a time, each taken for a path."""
    good = tmp_path / "a.py"
    good.write_text("def f(x):\n    return x\n")
    items: list[Any] = [good, 5, None, os.fsencode(good)]
    results = list(Chunker(32).chunk_many(items))
    assert [r.ok for r in results] == [True, False, False, True]
    assert isinstance(results[1].error, TypeError) and results[1].path == "5"
    assert results[3].path == str(good) and results[3].chunks == results[0].chunks
    for one in (str(good), good, os.fsencode(good)):
        with pytest.raises(TypeError, match="not one path"):
            list(Chunker(32).chunk_many(one))  # type: ignore[arg-type]


def test_chunk_many_checks_its_arguments_when_called(tmp_path: Path) -> None:
    """Not when the first result is asked for: a bad ``errors`` mode had been every
    file's error, and ``workers="2"`` a comparison error on the first result."""
    good = tmp_path / "a.txt"
    good.write_text("hello\n")
    chunker = Chunker(32)
    for kwargs, error, match in [
        ({"errors": "bogus"}, ValueError, "errors must be"),
        ({"workers": 0}, ValueError, "workers must be"),
        ({"workers": "2"}, TypeError, "workers must be an int"),
        ({"workers": True}, TypeError, "workers must be an int"),
        ({"kind": "yaml"}, ValueError, "unknown kind"),
        ({"on_progress": 3}, TypeError, "on_progress"),
    ]:
        with pytest.raises(error, match=match):
            chunker.chunk_many([good], **kwargs)
    assert [r.ok for r in chunker.chunk_many([good], errors="replace", workers=2)] == [True]
