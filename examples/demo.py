"""Chunk every file under corpora/ and print what came out.

For each file and budget: the kind chosen by ``kind="auto"`` (with the file name as a
hint), the number of chunks, the token total, the largest chunk, and every oversize
chunk (a single indivisible unit over the budget) with its offset. It also checks the
promises the chunker makes: the chunks tile the file exactly and each count is exact.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from sdk import count_tokens
from sdk.chunking import Chunker, detect_kind

ROOT = Path(__file__).resolve().parent.parent / "corpora"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: corpora/)")
    parser.add_argument("--budgets", default="64,256,1024", help="comma-separated token budgets")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    roots = args.paths or [ROOT]
    files = sorted(
        p
        for root in roots
        for p in ([root] if root.is_file() else root.rglob("*"))
        if p.is_file() and "_snapshots" not in p.parts
    )
    chunkers = {b: Chunker(b) for b in budgets}
    header = f"{'file':48} {'kind':9} {'chars':>8} " + " ".join(f"{f'@{b}':>14}" for b in budgets)
    print(header)
    print("-" * len(header))
    problems = 0
    oversize_lines: list[str] = []
    started = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        kind, _why = detect_kind(text, filename=path.name)
        cells = []
        for budget, chunker in chunkers.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chunks = chunker.chunk(text, kind="auto", filename=path.name)
            total = sum(c.tokens for c in chunks)
            cells.append(f"{len(chunks):>5}ch {total:>6}t")
            if "".join(c.text for c in chunks) != text:
                problems += 1
                oversize_lines.append(f"  !! {name} @{budget}: chunks do not tile the file")
            for c in chunks:
                if c.tokens != count_tokens(c.text) or (c.tokens > budget and not c.oversize):
                    problems += 1
                    oversize_lines.append(f"  !! {name} @{budget}: bad count at offset {c.start}")
                if c.oversize:
                    oversize_lines.append(
                        f"  oversize {name} @{budget}: offset {c.start}, {c.tokens} tokens, {c.text[:24]!r}"
                    )
        print(f"{name:48} {kind:9} {len(text):>8} " + " ".join(f"{cell:>14}" for cell in cells))
    elapsed = time.perf_counter() - started
    print()
    if oversize_lines:
        print("Oversize chunks (single indivisible units over the budget) and problems:")
        print("\n".join(oversize_lines))
    else:
        print("No oversize chunks.")
    print(f"\n{len(files)} files x {len(budgets)} budgets in {elapsed:.2f}s; {problems} problems.")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
