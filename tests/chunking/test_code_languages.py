"""Grammar registry and language detection: names, aliases, files, shebangs, content."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from sdk.chunking import GrammarUnavailable, UnknownLanguage, chunk, detect_language, languages
from sdk.chunking._languages import known_language, language_for_filename, load_language, normalize_language

LISTED = (
    *("bash", "c", "cpp", "csharp", "go", "java", "javascript"),
    *("json", "python", "ruby", "rust", "tsx", "typescript"),
)


def test_every_listed_language_is_known_and_loads() -> None:
    assert set(LISTED) <= set(languages())
    for name in LISTED:
        assert load_language(name) is load_language(name)  # loaded once


def test_known_languages_without_a_wheel_name_the_package() -> None:
    for name in set(languages()) - set(LISTED):
        package = "tree-sitter-" + name
        if importlib.util.find_spec(package.replace("-", "_")) is not None:
            continue  # installed here after all
        with pytest.raises(GrammarUnavailable, match=rf"pip install {package}\b"):
            load_language(name)


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("py", "python"),
        ("JS", "javascript"),
        ("ts", "typescript"),
        ("golang", "go"),
        ("rs", "rust"),
        ("c++", "cpp"),
        ("C#", "csharp"),
        ("rb", "ruby"),
        ("sh", "bash"),
        ("tsx", "tsx"),
        (" Python ", "python"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert normalize_language(alias) == name
    assert known_language(alias) == name


def test_known_language_answers_none_for_a_name_without_a_grammar_entry() -> None:
    for name in ("cobol", "mermaid", "text", "yaml", "", "console"):
        assert known_language(name) is None


def test_unknown_language_is_a_typed_error_listing_the_known_ones() -> None:
    with pytest.raises(UnknownLanguage, match=r"cobol.*known languages: bash"):
        normalize_language("cobol")
    with pytest.raises(UnknownLanguage):
        chunk("IDENTIFICATION DIVISION.", 5, kind="code", language="cobol")
    assert issubclass(UnknownLanguage, ValueError)


def test_missing_grammar_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def no_ruby(name: str, package: str | None = None) -> object:
        if name == "tree_sitter_ruby":
            raise ModuleNotFoundError("No module named 'tree_sitter_ruby'")
        return real_import(name, package)

    load_language.cache_clear()
    monkeypatch.setattr(importlib, "import_module", no_ruby)
    try:
        with pytest.raises(GrammarUnavailable, match=r"pip install tree-sitter-ruby"):
            chunk("def f\n  1\nend\n" * 20, 5, kind="code", language="ruby")
        with pytest.raises(GrammarUnavailable):
            chunk("def f\n  1\nend\n" * 20, 5, kind="code", filename="tasks.rb")
        assert issubclass(GrammarUnavailable, ImportError)
    finally:
        monkeypatch.setattr(importlib, "import_module", real_import)
        load_language.cache_clear()


@pytest.mark.parametrize(
    ("filename", "name"),
    [
        ("a.py", "python"),
        ("x/y/z.PYI", "python"),
        ("m.mjs", "javascript"),
        ("a.jsx", "javascript"),
        ("s.ts", "typescript"),
        ("w.tsx", "tsx"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("A.java", "java"),
        ("h.h", "c"),
        ("m.hpp", "cpp"),
        ("g.cs", "csharp"),
        ("Rakefile", "ruby"),
        ("run.sh", "bash"),
        ("/home/u/.bashrc", "bash"),
        ("c.json", "json"),
        ("notes.txt", None),
        ("Makefile", None),
        ("noext", None),
    ],
)
def test_filenames(filename: str, name: str | None) -> None:
    assert language_for_filename(filename) == name


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("#!/usr/bin/env python3", "python"),
        ("#!/usr/bin/python3.12 -u", "python"),
        ("#!/bin/bash", "bash"),
        ("#!/usr/bin/env -S node --harmony", "javascript"),
        ("#!/usr/bin/env ruby", "ruby"),
        ("#! /bin/sh", "bash"),
        ("#!/usr/bin/env deno", "typescript"),
    ],
)
def test_shebangs(line: str, name: str) -> None:
    got, why = detect_language(line + "\nwhatever\n")
    assert got == name
    assert why.startswith("shebang")


def test_filename_beats_shebang_and_content() -> None:
    got, why = detect_language("#!/usr/bin/env python3\nprint(1)\n", "tool.rb")
    assert (got, why) == ("ruby", "file name 'tool.rb'")


SAMPLES = {
    "python": "import os\n\nclass A(Base):\n    def run(self, x):\n"
    "        if x is None:\n            return self.y\n",
    "javascript": "const fs = require('fs');\nfunction load(p) {\n  return fs.readFileSync(p) === null;\n}\n",
    "typescript": "interface User {\n  name: string;\n}\nexport const f = (u: User): string => u.name;\n",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tx := 1\n\tfmt.Println(x)\n}\n',
    "rust": 'use std::io;\n\npub fn main() {\n    let mut s = String::new();\n    println!("{}", s);\n}\n',
    "java": "import java.util.List;\n\npublic class App {\n    public static void main(String[] a) {\n"
    "        System.out.println(a);\n    }\n}\n",
    "c": '#include <stdio.h>\n\nint main(void) {\n    printf("hi\\n");\n    return 0;\n}\n',
    "cpp": "#include <vector>\n\nnamespace n {\n"
    "template <typename T> T f(std::vector<T> v) { return v[0]; }\n}\n",
    "csharp": "using System;\n\nnamespace Demo {\n    class P {\n        static void Main() {"
    " Console.WriteLine(1); }\n    }\n}\n",
    "ruby": "require 'json'\n\nclass A\n  def call(x)\n    puts x\n  end\nend\n",
    "bash": 'set -e\nif [ -f x ]; then\n  echo "$HOME"\nfi\nfor f in *; do\n  echo $f\ndone\n',
    "json": '{\n  "a": [1, 2, {"b": null}]\n}\n',
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_content_classifier(name: str) -> None:
    got, why = detect_language(SAMPLES[name])
    assert got == name, why
    assert why.startswith("content")


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog. It was a sunny day.\n",
        "",
        "日本語の文章です。コードではありません。",
        "x = 1\n",
    ],
)
def test_classifier_says_when_unsure(text: str) -> None:
    got, why = detect_language(text)
    assert got is None
    assert why.startswith("content:")


def test_classifier_reads_only_a_bounded_prefix() -> None:
    # Rust features hidden past the prefix do not count.
    text = "x" * 20_000 + '\npub fn main() { let mut a = 1; println!("{}", a); }\n'
    assert detect_language(text)[0] is None
    assert detect_language(text[20_000:])[0] == "rust"


def test_a_header_is_c_unless_it_reads_as_cpp() -> None:
    c_header = "#ifndef A_H\n#define A_H\nstruct point { int x, y; };\nint area(struct point *p);\n#endif\n"
    cpp_header = "#pragma once\n#include <vector>\nnamespace geo {\ntemplate <typename T>\n"
    cpp_header += "class Box {\npublic:\n    std::vector<T> items;\n};\n}\n"
    assert language_for_filename("a.h") == "c"
    assert language_for_filename("a.h", c_header) == "c"
    assert language_for_filename("box.h", cpp_header) == "cpp"
    assert detect_language(cpp_header, "include/box.h")[0] == "cpp"
    assert language_for_filename("box.c", cpp_header) == "c"  # only headers are ambiguous
    assert {c.language for c in chunk(cpp_header, 8, kind="code", filename="box.h")} == {"cpp"}
