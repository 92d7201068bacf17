"""What an oracle is: it turns one run of a candidate into a failure `Signature`, or None.

A signature is the part of a failure that must stay fixed while reducing: the family, and a few
named fields (the operation, the kind of mismatch, the signal, the innermost library frame …).
Each oracle also decides when a candidate's signature counts as *the same failure* as the one
being reduced; by default every field must be equal.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from oracles.outcome import RunResult, Signature


class Oracle:
    """One failure family. Subclasses implement `classify`; `same` may be loosened per family."""

    name = "oracle"
    #: whether runs need the harness's gradient checks
    needs_gradient_checks = False

    def classify(self, run: RunResult) -> Signature | None:
        raise NotImplementedError

    def same(self, wanted: Signature, seen: Signature) -> bool:
        return wanted == seen

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        """Whether `run` shows the `wanted` failure, and what it showed."""
        seen = self.classify(run)
        return (seen is not None and self.same(wanted, seen)), seen


# -- helpers shared by the families --------------------------------------------------------------

TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)
FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.M)
LIBRARIES = ("jax", "jaxlib", "enzyme_ad", "jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin")
_LIB_PATH = re.compile(r"(?:site|dist)-packages/(?P<rel>(?P<top>[A-Za-z_0-9]+)/.*)$")


def library_path(path: str) -> str | None:
    """`jax/_src/api.py` for a file inside an installed jax/jaxlib/enzyme_ad, else None."""
    m = _LIB_PATH.search(path.replace("\\", "/"))
    if m and m.group("top") in LIBRARIES:
        return m.group("rel")
    return None


def innermost_library_frame(text: str, pattern: re.Pattern = TRACEBACK_FRAME) -> str | None:
    """The innermost frame of the last traceback in `text` that lies inside a JAX library."""
    frames = list(pattern.finditer(text))
    if not frames:
        return None
    last_tb = text.rfind("Traceback (most recent call last)")
    if pattern is TRACEBACK_FRAME and last_tb >= 0:
        frames = [f for f in frames if f.start() > last_tb] or frames
        ordered = reversed(frames)
    else:
        ordered = iter(frames)  # faulthandler prints the most recent call first
    first = None
    for f in ordered:
        rel = library_path(f.group("file"))
        if rel:
            return f"{rel}:{f.group('func')}"
        if pattern is TRACEBACK_FRAME:
            return None  # raised from the user's own code
        first = first or f
    if first is not None:  # a crash outside the JAX libraries: name the innermost module and function
        stdlib = re.search(r"/python3\.\d+/(.+)$", first.group("file"))
        where = stdlib.group(1) if stdlib else "<script>"
        return f"{where}:{first.group('func')}"
    return None


_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Warning|Interrupt)|AssertionError|"
                       r"[A-Za-z_][\w.]*Error)(?::\s?(?P<msg>.*))?$", re.M)


def final_exception(text: str) -> tuple[str, str] | None:
    """The exception type and first message line that ended the program, from its traceback."""
    idx = text.rfind("Traceback (most recent call last)")
    if idx < 0:
        return None
    tail = text[idx:]
    last = None
    for m in _EXC_LINE.finditer(tail):
        if not m.group(0).startswith(" "):
            last = m
    if last is None:
        return None
    name = last.group("type").split(".")[-1]
    return name, (last.group("msg") or "").strip()


def normalize_message(message: str) -> str:
    """Drop what changes while reducing: numbers, shapes, hex ids, paths, quoted values."""
    s = re.sub(r"0x[0-9a-fA-F]+", "ADDR", message)
    s = re.sub(r"(?:/[^\s:'\"]+)+", "<path>", s)
    s = re.sub(r"\b\w+\[[^\]]*\]", "<aval>", s)
    s = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", s)
    return re.sub(r"\s+", " ", s).replace("ADDR", "0x_").strip()[:200]


def excerpt(text: str, needle: str, before: int = 3, after: int = 6) -> str:
    """A few lines of `text` around the last line containing `needle`."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if needle in line]
    if not hits:
        return "\n".join(lines[-(before + after):])
    i = hits[-1]
    return "\n".join(lines[max(0, i - before): i + after])
