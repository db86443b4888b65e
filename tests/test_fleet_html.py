"""`fleet report --format html`: one self-contained page, checked as text and in a real browser.

The browser is Debian's chromium (/usr/bin/chromium, installed by .ci/setup-chromium.sh),
driven headless through Playwright's Python package with executable_path (no browser
download). The fleet is the 1,000-node synthetic fleet of tests/test_fleet_report.py.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import require_module

from test_fleet_report import facts_doc, fleet_cli, gen, write

CHROMIUM = "/usr/bin/chromium"
HOSTILE = '<img src=x onerror="document.title=\'pwned\'">"><script>document.title="pwned"</script>'


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fleet-html")
    gen.write_fleet(root / "nodes", 1000)
    hostile = facts_doc(HOSTILE)
    hostile["facts"]["driver.version"]["value"] = "<b>580</b>"
    write(root / "nodes" / "zz-hostile.json", hostile)
    out = root / "fleet.html"
    code, stdout, _ = fleet_cli(str(root / "nodes"), "--format", "html", "--out", str(out))
    assert code == 1 and stdout == ""
    return out


class Cells(HTMLParser):
    """Rows of the matrix as [(text, attrs)] per cell; every external reference seen."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, dict]]] = []
        self.external: list[str] = []
        self.scripts_with_src = 0
        self._in_body = False
        self._cell: tuple[list[str], dict] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href"):
            if key in attrs:
                self.external.append(attrs[key])
        if tag == "script" and "src" in attrs:
            self.scripts_with_src += 1
        if tag == "link":
            self.external.append(str(attrs))
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag in ("td", "th") and self._in_body:
            self._cell = ([], attrs)

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(("".join(self._cell[0]), self._cell[1]))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0].append(data)


def parse(page: Path) -> Cells:
    parser = Cells()
    parser.feed(page.read_text())
    return parser


COLUMNS = ["node", "driver", "driver CUDA", "toolkit", "torch", "cuDNN", "NCCL", "GPU", "GPUs", "kernel smoke", "conv2d", "AMP",
           "GEMM TFLOP/s", "all-reduce busbw GB/s", "findings"]


def test_the_page_is_self_contained_and_escapes_every_value(page):
    text = page.read_text()
    parsed = parse(page)
    assert parsed.external == [] and parsed.scripts_with_src == 0  # no asset, no link, no network
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert len(parsed.rows) == 1001
    by_name = {row[0][0]: row for row in parsed.rows}
    hostile = by_name[HOSTILE]  # the name reads back as text, exactly
    assert hostile[1][0] == "<b>580</b>"
    assert "<script>document.title" not in text and "<b>580</b>" not in text
    assert "&lt;img src=x onerror=&quot;document.title=&#x27;pwned&#x27;&quot;&gt;" in text


def test_odd_cells_are_marked_with_what_the_rest_have(page):
    rows = {row[0][0]: row for row in parse(page).rows}
    odd = {(name, COLUMNS[i], text, attrs.get("title")) for name, row in rows.items() for i, (text, attrs) in enumerate(row)
           if "odd" in (attrs.get("class") or "").split()}
    assert odd == {
        ("node-0100", "NCCL", "2.27.3", "the rest (1000 nodes) have 2.30.7"),
        ("node-0200", "GPUs", "7", "the rest (1000 nodes) have 8"),
        ("node-0300", "all-reduce busbw GB/s", "30", "below 0.8 x the median of 999 peers (180; nccl, 16 ranks, 2 node(s))"),
        ("node-0417", "driver", "550.163.01", "the rest (999 nodes) have 580.95.05"),
        ("node-0417", "driver CUDA", "12.4", "the rest (1000 nodes) have 13.0"),
        (HOSTILE, "driver", "<b>580</b>", "the rest (999 nodes) have 580.95.05"),
    }
    # The hostile node has facts but no smoke document: its smoke cells say so.
    assert [text for text, _ in rows[HOSTILE][9:14]] == ["n/a"] * 5
    assert rows["node-0417"][14][0] == "error (2)"


# ----------------------------------------------------------------------------- in chromium
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no {CHROMIUM} (.ci/setup-chromium.sh installs it)")
    sync_api = require_module("playwright.sync_api", "pip install -e '.[dev]'")
    return sync_api.sync_playwright()


ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.mark.slow
def test_in_chromium_the_page_renders_without_errors_and_sorts_on_click(page, tmp_path):
    with browser() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            view = chromium.new_page(viewport={"width": 1400, "height": 900})
            console, errors, requests, dialogs = [], [], [], []
            view.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            view.on("pageerror", lambda e: errors.append(str(e)))
            view.on("request", lambda r: requests.append(r.url))
            view.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            view.goto(page.as_uri())
            view.wait_for_selector("#matrix[data-ready='1']")
            assert view.locator("#matrix tbody tr").count() == 1001
            assert view.title() == "fwdoctor fleet report: 1001 nodes"  # the hostile name ran nothing
            shot = tmp_path / "fleet.png"
            view.screenshot(path=str(shot))
            width, height, colours, inked = png_stats(shot.read_bytes())
            assert (width, height) == (1400, 900)
            assert colours > 20 and inked > 0.02  # text, the table's borders and the marked cells

            names = lambda: view.eval_on_selector_all("#matrix tbody th", "cells => cells.map(c => c.textContent)")  # noqa: E731
            busbw = view.locator("#matrix thead th[data-key='busbw']")
            busbw.click()
            order = names()
            assert order[0] == "node-0300" and busbw.get_attribute("aria-sort") == "ascending"
            assert order[-1] == HOSTILE  # no figure: last, whichever way the column sorts
            busbw.click()
            order = names()
            assert busbw.get_attribute("aria-sort") == "descending" and order[-2] == "node-0300" and order[-1] == HOSTILE
            view.locator("#matrix thead th[data-key='gpu_count']").click()
            assert names()[0] == "node-0200"
            node = view.locator("#matrix thead th").first
            node.click()
            node.click()  # descending by name, naturally: node-0999 before node-0998 ... node-0010 before node-0009
            order = names()
            assert order.index("node-0999") < order.index("node-0998") and order.index("node-0010") < order.index("node-0009")
        finally:
            chromium.close()
    assert errors == [] and dialogs == []
    assert [line for line in console if line.startswith(("error", "warning"))] == []
    assert requests == [page.as_uri()]


def png_stats(data: bytes) -> tuple[int, int, int, float]:
    """(width, height, distinct colours, share of pixels that are not white) of an 8-bit
    RGB/RGBA non-interlaced PNG, as chromium writes screenshots (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    colours: set[bytes] = set()
    inked = 0
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        if y % 3 == 0:  # a sample of rows is enough to tell a blank page from a table
            for x in range(0, stride, bpp):
                pixel = bytes(line[x:x + 3])
                colours.add(pixel)
                inked += pixel != b"\xff\xff\xff"
        previous = line
    sampled = ((height + 2) // 3) * width
    return width, height, len(colours), inked / sampled


def test_the_png_reader_tells_a_blank_page_from_a_table():
    def png(width, height, pixel_of) -> bytes:
        rows = b"".join(b"\x00" + b"".join(pixel_of(x, y) for x in range(width)) for y in range(height))
        chunk = lambda kind, body: struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))  # noqa: E731
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))

    assert png_stats(png(30, 30, lambda x, y: b"\xff\xff\xff")) == (30, 30, 1, 0.0)
    _, _, colours, inked = png_stats(png(30, 30, lambda x, y: bytes([x * 8, y * 8, 0]) if x % 2 else b"\xff\xff\xff"))
    assert colours > 20 and 0.4 < inked < 0.6
