"""What ``isolate=True`` costs ``Chunker.chunk_many`` over files, side by side.

``chunk_many`` over the files a repository holds: the corpus's code and Markdown
files, the source of the ``hypothesis`` package as installed (about 100 Python files,
when present), and ``sdk/`` itself, each read from disk. Every round chunks the whole
set once in process and once with ``isolate=True`` (every file that may be parsed sent
to a worker process with an address-space limit, its chunks pickled back), in
alternation, so that a slow spell of a shared machine slows both; the best wall time of
each is kept (the workers' CPU is not the caller's, so wall time is the measure), and
the ratio is what isolation costs. The workers are started before the first timed round
(a worker's start, about half a second, is paid once per process and per thread).

    python bench/isolate.py                  # budgets 64 and 256, workers 1 and 2
    python bench/isolate.py --rounds 5 --budgets 256 --workers 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sdk.chunking import Chunker  # noqa: E402
from tests.corpus import corpus_files  # noqa: E402


def files() -> list[Path]:
    found = [cf.path for cf in corpus_files() if cf.kind in ("code", "markdown")]
    try:
        import hypothesis

        found += sorted(Path(hypothesis.__file__).parent.rglob("*.py"))
    except ImportError:  # pragma: no cover - a dev install has it
        pass
    found += sorted((ROOT / "sdk").rglob("*.py"))
    return found


def run(chunker: Chunker, paths: list[Path], workers: int) -> tuple[float, int]:
    start = time.perf_counter()
    n = 0
    for got in chunker.chunk_many(paths, workers=workers):
        if got.error is not None:
            raise got.error
        n += len(got.chunks)
    return time.perf_counter() - start, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budgets", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    paths = files()
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} files, {size / 1e6:.2f} MB; best of {args.rounds} rounds, wall time\n")
    print("| budget | workers | in process | isolate=True | ratio |")
    print("|---:|---:|---:|---:|---:|")
    for budget in args.budgets:
        for workers in args.workers:
            plain, isolated = Chunker(budget), Chunker(budget, isolate=True)
            want = run(plain, paths, workers)[1]
            if run(isolated, paths, workers)[1] != want:  # (also starts the workers)
                raise SystemExit("isolate=True gave other chunks")
            best_plain = best_isolated = float("inf")
            for _ in range(args.rounds):
                best_plain = min(best_plain, run(plain, paths, workers)[0])
                best_isolated = min(best_isolated, run(isolated, paths, workers)[0])
            print(
                f"| {budget} | {workers} | {best_plain:.2f} s | {best_isolated:.2f} s "
                f"| {best_isolated / best_plain:.2f}x |"
            )


if __name__ == "__main__":
    main()
