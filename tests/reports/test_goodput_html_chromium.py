"""The goodput HTML timeline renders in real headless Chromium: one lane per start, a colour per bucket."""

from __future__ import annotations

import re
import subprocess

import pytest
from paths import TESTS
from test_profile_html_chromium import CHROMIUM, _png_pixels

from tpudoctor.cli import main

FIXTURE = TESTS / "fixtures" / "goodput" / "maxtext_restart.log"
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
    assert dom.count('aria-label="one lane per start of the job"') == 1 and "start 2" in dom and "10-25" in dom
    fills = dict((name.strip(), colour) for colour, name in re.findall(
        r'<rect fill="#(\w{6})" width="10" height="10"(?:/>|></rect>)</svg>([^<]+)', dom))  # the legend
    shot = tmp_path / "goodput.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1200,2400",
                    f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120, check=True)
    pixels = _png_pixels(shot.read_bytes())
    assert len(set(pixels)) > 20, "the page rendered blank"

    def count(group: str) -> int:
        rgb = tuple(int(fills[group][i:i + 2], 16) for i in (0, 2, 4))
        return sum(_near(p, rgb) for p in pixels)

    productive, compilation, recovery = (count("productive steps"), count("compilation / first step"),
                                         count("down between failure and restart"))
    assert len(set(fills.values())) == len(fills) >= 8  # a colour per bucket
    assert productive > 30 and compilation > 20 and recovery > 8, (productive, compilation, recovery)  # 1 pixel in 49
