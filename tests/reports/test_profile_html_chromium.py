"""The HTML profile report renders in headless Chromium, and the screenshot is not blank."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from paths import TESTS
from shared_data import SHARED_DATA

from tpudoctor.cli import main

FIXTURES = TESTS / "fixtures" / "profiles"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_report_screenshot_is_not_blank(tmp_path):
    report = tmp_path / "report.html"
    assert main(["profile", "analyze", str(FIXTURES / "jax_input_bound"), "--format", "html", "-o", str(report)]) == 1  # its FAIL findings
    shot = tmp_path / "shot.png"
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120, check=True).stdout
    assert "input-bound" in dom and "<svg" in dom
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1200,1600", f"--screenshot={shot}", report.as_uri()],
        capture_output=True, timeout=120, check=True)
    pixels = _png_pixels(shot.read_bytes())
    assert len(set(pixels)) > 20, "screenshot has almost one colour: the page rendered blank"
    # the step chart's input part, in the colour its legend gives it
    colour = re.search(r'fill="#([0-9a-f]{6})" width="10" height="10"/></svg> input', report.read_text())
    assert colour, "the step chart's legend has no input part"
    rgb = tuple(int(colour[1][i:i + 2], 16) for i in (0, 2, 4))
    shown = sum(1 for p in pixels if all(abs(p[i] - rgb[i]) < 24 for i in range(3)))
    assert shown > 200, f"the input bars of the step chart are missing ({shown} pixels of #{colour[1]})"


def _png_pixels(data: bytes) -> list[tuple[int, int, int]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) with zlib; every 7th row and column."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return [tuple(rows[y][x * channels:x * channels + 3]) for y in range(0, height, 7) for x in range(0, width, 7)]


V6E = SHARED_DATA / "xprof_tpu_inference_2.xplane.pb"  # ../shared/data, or TPUDOCTOR_SHARED_DATA


@pytest.mark.slow
@pytest.mark.needs_shared_data
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
@pytest.mark.skipif(not V6E.exists(), reason=f"real TPU capture not found at {V6E} (../shared/data is absent)")
def test_roofline_chart_renders(tmp_path):
    """The v6e report's roofline chart, cut out of the page, draws its roofs and op points."""
    report = tmp_path / "report.html"
    assert main(["profile", "analyze", str(V6E), "--format", "html", "-o", str(report)]) == 1  # its FAIL findings
    page = report.read_text()
    chart = tmp_path / "chart.html"
    chart.write_text(page[:page.index("<body>") + 6] + page[page.index("<h2>Roofline"):page.index("<h2>Host-side ops")]
                     + "</body></html>")
    shot = tmp_path / "chart.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1100,2400", f"--screenshot={shot}", chart.as_uri()],
        capture_output=True, timeout=120, check=True)
    pixels = _png_pixels(shot.read_bytes())
    # every 7th row is sampled: the long diagonal HBM roof (#1565c0) shows, the program's diamond
    # (#c62828) too; the flat compute roof is checked in the rendered DOM
    blue = sum(1 for p in pixels if p[0] < 60 and 80 < p[1] < 130 and p[2] > 170)
    red = sum(1 for p in pixels if p[0] > 170 and p[1] < 70 and p[2] < 70)
    assert blue > 20 and red > 0, (blue, red)
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--dump-dom", chart.as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    assert 'class="roof-compute"' in dom and dom.count('class="op"') == 4
