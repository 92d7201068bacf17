"""The benchmark's layout (benchmarks/README.md): every case has its hand-made minimum, a line of the
text-matching test a generic reducer would use, and a row or a paragraph of the README; every fix
belongs to a case. A case added without them cannot be measured against its minimum."""
from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def names(folder: str) -> set[str]:
    return {p.stem for p in (BENCH / folder).glob("*.py")}


def test_every_case_has_a_minimum_an_interestingness_line_and_a_mention():
    cases = names("cases")
    assert len(cases) >= 40
    interesting = set(re.findall(r"(?m)^  (\w+)\)", (BENCH / "interesting.sh").read_text()))
    readme = (BENCH / "README.md").read_text()
    assert sorted(cases - names("minimal")) == []
    assert sorted(cases - interesting) == []
    assert sorted(c for c in cases if c not in readme) == []


def test_every_fix_belongs_to_a_case():
    assert sorted(names("fixed") - names("cases")) == []
