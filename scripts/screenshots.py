"""The screenshots in docs/, made from a real report: the one way to regenerate them.

    python scripts/screenshots.py [--out docs]

Writes the demo's report (`shardbudget demo`, the request `make demo` runs) to a scratch folder,
opens it in headless Chromium through selenium (tests/browser.py: Debian's chromium and
chromium-driver, nothing fetched; scripts/install-chromium.sh installs both) and saves

    report-screenshot.png              the top of the report, 900 px wide (the verdict, the table per
                                       system and batch, the fabric comparison)
    report-interactive-before.png      the interactive section at the report's own budget
    report-interactive-after.png       the same section after the budget slider has moved, one key
                                       press at a time, to its smallest budget

docs/commands.md shows them. Exit 1, saying what to install, where Chromium or selenium is missing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = (900, 1550)  # window of the report's top, px
INTERACTIVE = (1280, 1400)  # window of the interactive section, px (the browser test's)


def demo_report(folder: Path) -> Path:
    """The demo's report, written by the CLI as a user would write it."""
    out = folder / "report.html"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    subprocess.run(
        [sys.executable, "-m", "shardbudget", "demo", "--out", str(out)], env=env, check=True, stdout=subprocess.DEVNULL
    )
    return out


def browser(width_px: int, height_px: int):
    sys.path.insert(0, str(ROOT / "tests"))
    import pytest
    from browser import chromium

    try:
        return chromium(width_px, height_px)
    except pytest.skip.Exception as why:
        raise SystemExit(f"screenshots: {why}") from None


def shoot(report: Path, out: Path) -> list[Path]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url = report.resolve().as_uri()
    written = []
    drv = browser(*TOP)
    try:
        drv.get(url)
        drv.save_screenshot(str(out / "report-screenshot.png"))
        written.append(out / "report-screenshot.png")
    finally:
        drv.quit()
    drv = browser(*INTERACTIVE)
    try:
        drv.get(url)
        section = drv.find_element(By.ID, "explore")
        drv.execute_script("arguments[0].scrollIntoView()", section)
        section.screenshot(str(out / "report-interactive-before.png"))
        slider = drv.find_element(By.ID, "sb-budget")
        budget = int(section.get_attribute("data-selection").split(",")[3])
        for _ in range(budget):  # as a keyboard user moves it
            slider.send_keys(Keys.ARROW_LEFT)
        assert section.get_attribute("data-selection").split(",")[3] == "0"
        section.screenshot(str(out / "report-interactive-after.png"))
        written += [out / "report-interactive-before.png", out / "report-interactive-after.png"]
    finally:
        drv.quit()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="folder for the PNG files (default: docs)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sb-shots-") as tmp:
        for path in shoot(demo_report(Path(tmp)), args.out):
            print(f"screenshots: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
