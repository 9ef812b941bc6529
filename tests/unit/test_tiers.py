"""The test tiers: every test has one, and the slow list of tests/conftest.py names real tests."""

import re
from pathlib import Path

from conftest import SLOW_UNIT, TIERS

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_name_is_a_test_of_its_file():
    for file, names in SLOW_UNIT.items():
        source = (ROOT / "tests" / "unit" / file).read_text(encoding="utf-8")
        defined = set(re.findall(r"^def (test_\w+)\(", source, re.M))
        assert set(names) <= defined, (file, sorted(set(names) - defined))


def test_every_test_folder_is_a_tier():
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/test_*.py")}
    assert folders <= set(TIERS), folders - set(TIERS)
