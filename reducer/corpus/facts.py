"""What a `reducer reduce` output folder says of how its reproducer was made (sizes, seconds,
candidates, levels, the verification), read by `add` for a new case and by `report` when it
rewrites one, and the reproducer's code without its header."""
from __future__ import annotations

import re
from pathlib import Path

from reducer.levels.source.representation import tokens

_MADE = re.compile(r"\((?P<levels>[\w, -]+) level\) from `(?P<script>[^`]+)`: (?P<orig>\d+) → (?P<final>\d+) Python "
                   r"tokens in (?P<secs>\d+) s, (?P<tested>\d+) candidates tested, (?P<acc>\d+) accepted, "
                   r"(?P<hits>\d+) cache hits")
#: the same line for a module (`reducer reduce FILE.mlir`): sizes in operations
_MADE_MODULE = re.compile(r"\(IR level\) from `(?P<script>[^`]+)`: (?P<orig>\d+) → (?P<final>\d+) operations.*? in "
                          r"(?P<secs>\d+) s, (?P<tested>\d+) candidates tested \([^)]*\), (?P<acc>\d+) accepted, "
                          r"(?P<hits>\d+) cache hits")
_VERIFIED = re.compile(r"^Verified in a fresh interpreter: (?P<v>.*?)\.?$", re.M)


def strip_header(repro_text: str) -> str:
    """The reproducer's code without the comment header `reducer reduce` puts on top."""
    lines = repro_text.splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "\n".join(lines[i:]) + "\n"


def reduction_facts(out: Path, code: str) -> dict:
    """How the reproducer was made, read from the report `reducer reduce` wrote."""
    report = (out / "report.md").read_text() if (out / "report.md").is_file() else ""
    facts: dict = {}
    m, module = _MADE.search(report), _MADE_MODULE.search(report)
    if m:
        facts = {"script": m["script"], "original_tokens": int(m["orig"]), "reduced_tokens": int(m["final"]),
                 "seconds": int(m["secs"]), "tested": int(m["tested"]), "accepted": int(m["acc"]),
                 "cache_hits": int(m["hits"]), "levels": [w.strip() for w in m["levels"].split(",")]}
    elif module:
        facts = {"script": module["script"], "original_ops": int(module["orig"]), "reduced_ops": int(module["final"]),
                 "seconds": int(module["secs"]), "tested": int(module["tested"]), "accepted": int(module["acc"]),
                 "cache_hits": int(module["hits"]), "levels": ["IR"]}
    else:
        facts = {"reduced_tokens": tokens(code)}
    v = _VERIFIED.search(report)
    if v:
        facts["verified"] = v["v"]
    return facts
