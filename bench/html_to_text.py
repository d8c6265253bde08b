# ruff: noqa: E501  (sample HTML kept on long lines, as mail is)
"""html_to_text speed: a typical 50 KB e-mail and a 5 MB one (goal: 5 MB under 200 ms).

    .venv/bin/python bench/html_to_text.py [--runs 15] [--smoke]

Both messages are newsletter-shaped (nested layout tables, inline styles, links, a hidden
preheader, an Outlook conditional comment, entities), built from the fixtures' patterns. Prints
the median and the slowest run for the default 4000-character limit, and, as the worst case,
the 5 MB message with no character limit (the walk stops at MAX_NODES nodes) next to the
bare parse.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from erp.html_text import html_to_text, parse_html

HEAD = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Boletín</title>
<style>.preheader{display:none!important} td{font-family:Arial} @media (max-width:600px){.d{display:none}}</style>
<!--[if mso]><xml><o:OfficeDocumentSettings><o:AllowPNG/></o:OfficeDocumentSettings></xml><![endif]-->
</head><body style="background-color:#f4f4f4"><span class="preheader">Vista previa oculta</span>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" bgcolor="#f4f4f4"><tr><td align="center">
<table width="600" style="background-color:#ffffff">"""
BLOCK = """<tr><td style="padding:16px 24px;font-size:15px;line-height:22px;color:#333333">
<h2 style="margin:0 0 8px;font-size:20px">Novedad n.º {i}: ofertas de temporada &amp; envíos</h2>
<p style="margin:0 0 12px">Descubre los productos de la semana con descuentos de hasta el 30&nbsp;%. Precio desde 9,99&nbsp;&euro;.
<a href="https://click.tienda.example/track?u=123&amp;l=oferta{i}" style="color:#0066cc">Ver oferta</a></p>
<table width="100%" cellpadding="4"><tr><th align="left">Producto</th><th>Precio</th></tr>
<tr><td>Artículo {i}-A</td><td>19,90&nbsp;&euro;</td></tr><tr><td>Artículo {i}-B</td><td>24,50&nbsp;&euro;</td></tr></table>
<div style="display:none;max-height:0;overflow:hidden">texto oculto {i}</div>
<img src="https://cdn.tienda.example/img/{i}.jpg" alt="Foto del producto {i}" width="552" height="300" style="display:block">
</td></tr>"""
TAIL = """</table></td></tr></table>
<img src="https://open.tienda.example/o.gif?u=123" width="1" height="1" alt="">
</body></html>"""


def message(size: int) -> str:
    parts, total, i = [HEAD], len(HEAD), 0
    while total < size - len(TAIL):
        block = BLOCK.format(i=i)
        parts.append(block)
        total += len(block)
        i += 1
    parts.append(TAIL)
    return "".join(parts)


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="one run, seconds (CI)")
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    small, big = message(50 * 1024), message(5 * 1024 * 1024)
    rows = [
        ("50 KB, limit 4000", small, lambda: html_to_text(small)),
        ("5 MB, limit 4000", big, lambda: html_to_text(big)),
        ("5 MB, whole (no limit)", big, lambda: html_to_text(big, limit=10**9)),
        ("5 MB, lxml parse only", big, lambda: parse_html(big)),
    ]
    print(f"html_to_text, median of {runs} runs (max in brackets)")
    for label, html, fn in rows:
        median, worst = timed(fn, runs)
        print(f"  {label:<26} {len(html) / 1024:>8.0f} KB  {median:8.1f} ms  [{worst:.1f} ms]")
    print(f"  output sample (5 MB, limit 4000): {len(html_to_text(big))} chars")


if __name__ == "__main__":
    main()
