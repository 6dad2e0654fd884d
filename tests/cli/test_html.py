"""``seam chunk --html``: the page rendered by headless Chromium.

The DOM Chromium builds (``--dump-dom``) must hold one chunk span per chunk, with the
forced cuts marked, and no element the files' text could have injected; the screenshot
must be a PNG of the window's size that is not blank.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from sdk.cli import EXIT_OVERSIZE

from .conftest import run

ZALGO = "e" + "\u0301\u0300\u0302\u0303" * 8  # one grapheme cluster of many tokens
WIDTH, HEIGHT = 1000, 700
ALLOWED_TAGS = set(
    [
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "header",
        "h1",
        "h2",
        "p",
        "span",
        "table",
        "tr",
        "th",
        "td",
        "nav",
        "a",
        "ul",
        "li",
        "main",
        "section",
        "pre",
        "b",
    ]
)

FILES = {
    "ja.txt": "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
    "ニャーニャー泣いていた事だけは記憶している。\n",
    "zh.md": "# 限流器\n\n令牌桶算法以固定速率向桶中添加令牌，请求到达时取走令牌。桶满时，新令牌被丢弃。\n",
    "app.py": 'def greet(name: str) -> str:\n    """Say hello."""\n    return f"<b>{name}</b> & co"\n',
    "long.json": json.dumps({"note": "word " * 60, "n": 1}),
    "inject.txt": "<script>document.title='pwned'</script><img src=x onerror=alert(1)> & \"quotes\"\n",
    "marks.txt": f"one letter {ZALGO} with marks\n",
}


class _Spans(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        a = dict(attrs)
        if tag == "span" and "chunk" in (a.get("class") or "").split():
            self.chunks.append(a)


def chromium_run(chromium: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def page(seam: CliRunner, tmp_path: Path) -> tuple[Path, list[dict[str, object]]]:
    src = tmp_path / "src"
    src.mkdir()
    for name, text in FILES.items():
        (src / name).write_text(text, encoding="utf-8")
    out = tmp_path / "chunks.html"
    status, stdout, err = run(seam, "chunk", str(src), "--max-tokens", "12", "--html", str(out), "--jsonl")
    assert status == EXIT_OVERSIZE, err  # the marked letter is one grapheme over 12 tokens
    return out, [json.loads(line) for line in stdout.splitlines()]


def test_page_is_self_contained_and_escaped(page: tuple[Path, list[dict[str, object]]]) -> None:
    path, _ = page
    html = path.read_text(encoding="utf-8")
    parsed = _Spans()
    parsed.feed(html)
    assert set(parsed.tags) <= ALLOWED_TAGS
    assert all(name != "src" and (name != "href" or str(v).startswith("#")) for name, v in parsed.attrs)
    style = html[html.index("<style>") : html.index("</style>")]
    assert "url(" not in style and "@import" not in style and "http" not in style
    assert "&lt;script&gt;" in html and "&lt;b&gt;{name}&lt;/b&gt; &amp; co" in html


def test_chromium_renders_one_span_per_chunk(
    chromium: str, page: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    path, records = page
    dom = chromium_run(chromium, tmp_path, "--dump-dom", path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = _Spans()
    parsed.feed(dom.stdout)
    assert len(parsed.chunks) == len(records) > len(FILES)
    assert "script" not in parsed.tags and "img" not in parsed.tags  # the file's markup stayed text
    assert [int(str(s["data-tokens"])) for s in parsed.chunks] == [r["tokens"] for r in records]
    oversize = [s for s in parsed.chunks if "oversize" in str(s["class"]).split()]
    partial = [s for s in parsed.chunks if "partial" in str(s["class"]).split()]
    assert len(oversize) == sum(1 for r in records if r["oversize"]) == 1
    assert len(partial) == sum(1 for r in records if r["partial"]) >= 2
    cuts = [s for s in parsed.chunks if "cut" in str(s["class"]).split()]
    assert 1 <= len(cuts) < len(partial)  # a scissors mark where the long string was cut
    assert "OVERSIZE" in str(oversize[0]["title"]) and "marks.txt" in str(oversize[0]["title"])
    first = parsed.chunks[0]
    assert "chunk 1 of" in str(first["title"]) and "tokens" in str(first["title"])
    # Neighbouring chunks of a file alternate colours.
    for a, b in itertools.pairwise(parsed.chunks):
        if b["data-index"] != "0":
            assert ("c0" in str(a["class"]).split()) != ("c0" in str(b["class"]).split())


def test_chromium_screenshot_is_a_picture(
    chromium: str, page: tuple[Path, list[dict[str, object]]], tmp_path: Path
) -> None:
    path, _ = page
    png = tmp_path / "page.png"
    shot = chromium_run(
        chromium, tmp_path, f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", path.as_uri()
    )
    assert shot.returncode == 0, shot.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png) as im:
        assert im.size == (WIDTH, HEIGHT)
        rgb = im.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 16)
        # Not blank: text, the two chunk colours and the marks give many distinct colours.
        assert colours is None or len(colours) > 20
        small = rgb.resize((50, 35)).getcolors(maxcolors=50 * 35)
        assert small is not None and len(small) > 5  # spread over the picture, not one spot
