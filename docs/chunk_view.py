"""Make docs/chunk-view.png, the README's picture of ``seam chunk --html``.

python docs/chunk_view.py   (needs Debian's chromium and, for the CJK text, fonts-noto-cjk)

It chunks excerpts of corpora/ (Japanese prose, Chinese prose, Python with Japanese
identifiers, JSON with a string longer than the budget) at 40 tokens, writes the HTML
page, and has headless Chromium take a screenshot of it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / "corpora"
EXCERPTS = {
    "ja_dialogue.txt": (CORPORA / "prose" / "ja_dialogue_kinsoku.txt", 0, 5),
    "zh_tech.txt": (CORPORA / "prose" / "zh_hans_tech_mixed.txt", 0, 3),
    "shapes.py": (CORPORA / "code" / "shapes.py", 0, 26),
    "product.json": (CORPORA / "json" / "cjk_product.json", 0, 4),
}


def main() -> int:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (apt-get install chromium fonts-noto-cjk)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "examples"
        src.mkdir()
        for name, (path, first, last) in EXCERPTS.items():
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[first:last]
            text = "".join(lines)
            if name.endswith(".json"):
                text = text.rstrip().rstrip(",") + "\n}\n"
            (src / name).write_text(text, encoding="utf-8")
        page = Path(tmp) / "chunks.html"
        cmd = [
            sys.executable,
            "-m",
            "sdk",
            "chunk",
            "examples",
            "--max-tokens",
            "40",
            "--html",
            str(page),
            "-q",
        ]
        status = subprocess.run(cmd, cwd=tmp).returncode
        if status not in (0, 3):
            return status
        out = REPO / "docs" / "chunk-view.png"
        shot = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={Path(tmp) / 'profile'}", f"--screenshot={out}", "--window-size=1100,1180",
            page.as_uri(),
        ]  # fmt: skip
        return subprocess.run(shot, capture_output=True).returncode


if __name__ == "__main__":
    sys.exit(main())
