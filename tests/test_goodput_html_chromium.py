"""The goodput HTML timeline renders in real headless Chromium: one band per start, a colour per bucket."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_profile_html_chromium import CHROMIUM, _png_pixels

from tpudoctor.cli import main

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "goodput" / "maxtext_restart.log"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def _near(p: tuple[int, int, int], rgb: tuple[int, int, int], tol: int = 18) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(p, rgb, strict=True))


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_goodput_timeline_screenshot(tmp_path):
    report = tmp_path / "goodput.html"
    assert main(["goodput", str(FIXTURE), "--format", "html", "-o", str(report)]) == 0
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--dump-dom", report.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert dom.count('aria-label="goodput timeline"') == 1 and "start 2" in dom and "steps 10-25" in dom
    shot = tmp_path / "goodput.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1200,1400",
                    f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120, check=True)
    pixels = _png_pixels(shot.read_bytes())
    assert len(set(pixels)) > 20, "the page rendered blank"
    green = sum(_near(p, (0x2e, 0x7d, 0x32)) for p in pixels)      # productive steps
    purple = sum(_near(p, (0x6a, 0x1b, 0x9a)) for p in pixels)     # compilation / first step
    recovery = sum(_near(p, (0x26, 0x32, 0x38)) for p in pixels)   # down between failure and restart
    assert green > 200 and purple > 200 and recovery > 50, (green, purple, recovery)
