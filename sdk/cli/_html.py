"""``seam chunk --html``: one self-contained page that shows where every cut fell.

Each file is one ``<pre>`` holding its text as consecutive ``<span class="chunk">``
elements (the spans tile the text, so the page shows it exactly once), in alternating
colours; hovering a span shows its file, index, tokens and offsets. A cut the chunker
was forced to make is marked: an ``oversize`` chunk (one unit over the budget) is
outlined, and where a value its format treats as one (a long JSON string) was cut,
between two chunks that each hold part of one (``partial``), a scissors mark follows the
first. The markers are CSS pseudo-elements, so
copying text from the page copies the file's text only.

Everything is escaped and inline: no script, no external stylesheet, font or image,
so the page opens offline and shows nothing a file could inject.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ._chunk import FileChunks, Summary

__all__ = ["render_html"]

_CSS = """
:root { color-scheme: light; }
body { margin: 0; padding: 1.5rem 2rem; background: #fafafa; color: #1a1a1a;
  font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK JP", "Noto Sans CJK SC",
    "Hiragino Sans", "Yu Gothic", "Microsoft YaHei", "PingFang SC", "WenQuanYi Zen Hei", sans-serif; }
h1 { font-size: 1.3rem; margin: 0 0 .4rem; }
h2 { font-size: 1rem; margin: 1.6rem 0 .4rem; word-break: break-all; }
.meta { font-weight: normal; color: #555; font-size: .85rem; margin-left: .6rem; }
.legend span { display: inline-block; margin-right: 1rem; padding: 0 .3rem; }
table.summary { border-collapse: collapse; font-size: .85rem; margin: .6rem 0 1rem; }
table.summary th, table.summary td { border: 1px solid #ddd; padding: .15rem .6rem; text-align: right; }
table.summary th:nth-child(-n+2), table.summary td:nth-child(-n+2) { text-align: left; }
nav { font-size: .85rem; columns: 3 18rem; margin-bottom: 1rem; }
nav a { color: #245; text-decoration: none; display: block; }
pre.src { margin: 0; padding: .6rem; background: #fff; border: 1px solid #ddd; border-radius: 4px;
  white-space: pre-wrap; overflow-wrap: anywhere; tab-size: 4; line-height: 1.45; font-size: 13px;
  font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", "Noto Sans Mono", "Noto Sans Mono CJK JP",
    "Noto Sans CJK JP", "Noto Sans CJK SC", "Source Han Sans", "Hiragino Sans", "Yu Gothic", "MS Gothic",
    "Microsoft YaHei", "PingFang SC", "WenQuanYi Zen Hei", monospace; }
.chunk { border-radius: 2px; box-shadow: inset 2px 0 0 rgba(0, 0, 0, .35); }
.c0 { background: #dbeafe; }
.c1 { background: #fef3c7; }
.chunk:hover { background: #bbf7d0; }
.oversize { background: #fecaca; outline: 2px solid #b91c1c; outline-offset: -1px; }
.oversize::before { content: "\\26A0\\00A0oversize\\00A0"; color: #b91c1c; font-weight: bold;
  font-size: .75em; user-select: none; }
.cut::after { content: "\\2702"; color: #b91c1c; font-weight: bold; padding: 0 .15em;
  user-select: none; }
.empty { color: #777; font-style: italic; }
.skipped { color: #666; font-size: .85rem; }
"""


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _title(fc: FileChunks, i: int) -> str:
    c = fc.chunks[i]
    parts = [
        fc.file.shown,
        f"chunk {i + 1} of {len(fc.chunks)}",
        f"{c.tokens} tokens",
        f"chars {c.start}-{c.end}",
        f"bytes {c.byte_start}-{c.byte_end}",
        c.kind + (f" ({c.language})" if c.language else ""),
    ]
    if c.path:
        parts.append(c.path)
    if c.oversize:
        parts.append("OVERSIZE: one unit over the budget")
    if c.partial:
        parts.append("cut inside one value (forced)")
    return " · ".join(parts)


def _file(fc: FileChunks, n: int) -> str:
    out = [
        f'<section class="file" id="f{n}"><h2>{_e(fc.file.shown)}'
        f'<span class="meta">{_e(fc.kind)} · {len(fc.chunks)} chunks · {fc.tokens:,} tokens'
        + (f' · <b style="color:#b91c1c">{fc.oversize} oversize</b>' if fc.oversize else "")
        + "</span></h2>",
    ]
    if not fc.chunks:
        out.append('<p class="empty">(empty file)</p></section>')
        return "".join(out)
    out.append('<pre class="src">')
    for i, c in enumerate(fc.chunks):
        cls = f"chunk c{i % 2}"
        if c.oversize:
            cls += " oversize"
        if c.partial:
            cls += " partial"
            nxt = fc.chunks[i + 1] if i + 1 < len(fc.chunks) else None
            if nxt is not None and nxt.partial:
                cls += " cut"  # the next chunk holds the rest of the value cut here
        out.append(
            f'<span class="{cls}" data-index="{i}" data-tokens="{c.tokens}" '
            f'data-start="{c.start}" data-end="{c.end}" title="{_e(_title(fc, i))}">{_e(c.text)}</span>'
        )
    out.append("</pre></section>")
    return "".join(out)


def render_html(files: Sequence[FileChunks], summary: Summary, *, max_tokens: int, encoding: str) -> str:
    """The whole page as one string (UTF-8 when written)."""
    rows = "".join(
        f"<tr><td>{_e(kind)}</td><td>{_e(lang)}</td><td>{len(r.files)}</td><td>{r.chunks}</td>"
        f"<td>{r.tokens:,}</td><td>{r.oversize}</td><td>{r.partial}</td></tr>"
        for (kind, lang), r in sorted(summary.rows.items())
    )
    nav = "".join(f'<a href="#f{n}">{_e(fc.file.shown)} ({len(fc.chunks)})</a>' for n, fc in enumerate(files))
    skipped = "".join(f"<li>{_e(s.shown)}: {_e(s.reason)}</li>" for s in summary.skipped)
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>seam chunk: {summary.files} files, {summary.chunks} chunks</title>",
            f"<style>{_CSS}</style></head><body>",
            "<header><h1>seam chunk</h1>",
            f"<p>{summary.files} files, {summary.chunks} chunks, {summary.tokens:,} tokens; "
            f"at most {max_tokens} tokens per chunk ({_e(encoding)}); "
            f"{summary.oversize} oversize, {summary.partial} holding part of a value cut inside.</p>",
            '<p class="legend"><span class="c0">a chunk</span><span class="c1">the next chunk</span>'
            '<span class="oversize">one unit over the budget</span>'
            '<span class="c0 cut">cut inside a value</span> hover a chunk for its place and size</p>',
            '<table class="summary"><tr><th>kind</th><th>language</th><th>files</th><th>chunks</th>'
            f"<th>tokens</th><th>oversize</th><th>partial</th></tr>{rows}</table>",
            f"<nav>{nav}</nav>" if len(files) > 1 else "",
            f'<ul class="skipped">{skipped}</ul>' if skipped else "",
            "</header><main>",
            *(_file(fc, n) for n, fc in enumerate(files)),
            "</main></body></html>\n",
        ]
    )
