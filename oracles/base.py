"""What an oracle is: it turns one run of a candidate into a failure `Signature`, or None.

A signature is the part of a failure that must stay fixed while reducing: the family, and a few
named fields (the operation, the kind of mismatch, the signal, the innermost library frame …).
Each oracle also decides when a candidate's signature counts as *the same failure* as the one
being reduced; by default every field must be equal.
"""
from __future__ import annotations

import re

from oracles.outcome import RunResult, Signature


class Oracle:
    """One failure family. Subclasses implement `classify`; `same` may be loosened per family."""

    name = "oracle"
    #: whether runs need the harness's gradient checks
    needs_gradient_checks = False
    #: which of the harness's watches its verdicts rest on (`reducer.cross_checks`): "gradients", "results"
    watches: tuple[str, ...] = ()
    #: whether the oracle judges its command's run of each candidate (the user's interestingness
    #: command, `argv` and `timeout`; the job runs it: `reducer.workers.command`) instead of the sandbox's
    runs_candidates = False
    #: fields a signature of this family records that do not tell two failures apart (`same` ignores
    #: them, and so does whatever else compares failures: `reducer.faults.attach`)
    loose: tuple[str, ...] = ()

    def classify(self, run: RunResult) -> Signature | None:
        raise NotImplementedError

    def owner(self, sig: Signature) -> str:
        """The project whose bug a failure of this family is (a key of `oracles.owners.PROJECTS`)."""
        return "jax"

    def why_own(self, sig: Signature) -> str:
        """Why a failure `owner` gives to the program is the program's own code's, in words."""
        return "no library raised the failure"

    def same(self, wanted: Signature, seen: Signature) -> bool:
        return wanted == seen

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        """Whether `run` shows the `wanted` failure, and what it showed. A run counts only when its
        process ended: one that printed the failure and then ran out of time shows only a hang."""
        seen = self.classify(run)
        if run.timed_out and not is_hang(seen):
            return False, None
        return (seen is not None and self.same(wanted, seen)), seen


def is_hang(seen: Signature | None) -> bool:
    """Whether a signature is the crash family's hang (`--hangs`): the one failure a run that
    did not end can show."""
    return seen is not None and seen.family == "crash" and seen.get("how") == "hang"


# -- helpers shared by the families --------------------------------------------------------------

TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)
FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.M)
LIBRARIES = ("jax", "jaxlib", "enzyme_ad", "jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin",
             "flax", "optax", "equinox")
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


def entered_library_call(text: str) -> str | None:
    """The library function the program called on its way to the failure: in the last traceback of
    `text`, the first library frame after the program's innermost own frame that is not JAX's
    transformation machinery (`jit`'s and `grad`'s wrappers, tracing; their outermost frame where
    nothing else follows), as `jax/_src/numpy/lax_numpy.py:searchsorted`. Frames of the standard
    library and other installed packages pass through. None where the program's own frames do not
    lead into a library. It tells JAX's own code failing where the program called it apart from the
    program building the same failing value itself."""
    start = text.rfind("Traceback (most recent call last)")
    if start < 0:
        return None
    entered = machinery = None
    program = False
    for f in TRACEBACK_FRAME.finditer(text, start):
        path, rel = f.group("file"), library_path(f.group("file"))
        if rel:
            if _MACHINERY.match(rel):
                machinery = machinery or f"{rel}:{f.group('func')}"
            else:
                entered = entered or f"{rel}:{f.group('func')}"
        elif not _PASSING_THROUGH.search(path) and not TOOL_FRAME.search(path):
            program, entered, machinery = True, None, None  # what the program's own frame calls next counts
    return (entered or machinery) if program else None


#: frames that are neither the program's nor a JAX library's: the standard library, other packages
_PASSING_THROUGH = re.compile(r"/python3\.\d+/|(?:site|dist)-packages/|^<frozen ")
#: JAX's transformation machinery, between a call and the function it transforms or traces
_MACHINERY = re.compile(r"jax/_src/(?:traceback_util|pjit|api|api_util|linear_util|core|profiler|util|"
                        r"interpreters/\w+)\.py$")


#: frames of reducer's own code around a candidate: never the place a program failed
TOOL_FRAME = re.compile(r"/reducer/(?:harness\.py$|cross_checks/|workers/|levels/|faults/)"
                        r"|^<frozen runpy>$|/threading\.py$")
_FAULT_BLOCK = re.compile(r"^(?P<head>Current thread|Thread|Stack)(?: 0x[0-9a-fA-F]+)? \(most recent call first\):\n"
                          r"(?P<body>(?:[ \t]+.*\n?)*)", re.M)
NATIVE_THREAD = "<native thread>"
NO_PYTHON_FRAME = "<no Python frame>"


def crashing_frame(text: str) -> str:
    """Where a process that died by a signal was, from faulthandler's dump: the innermost frame of
    the crashing thread ("Current thread", or "Stack" when only that thread was dumped) inside a JAX
    library, else its innermost frame that is not reducer's own; `<native thread>` when the crash
    happened on a thread with no Python frames (an XLA or Eigen worker), `<no Python frame>` when
    the crashing thread ran none of the program's."""
    start = text.rfind("Fatal Python error")
    blocks = list(_FAULT_BLOCK.finditer(text, max(start, 0)))
    current = next((b for b in blocks if b.group("head") in ("Current thread", "Stack")), None)
    if current is None:
        return NATIVE_THREAD
    frames = [f for f in FAULT_FRAME.finditer(current.group("body")) if not TOOL_FRAME.search(f.group("file"))]
    for f in frames:  # most recent call first
        rel = library_path(f.group("file"))
        if rel:
            return f"{rel}:{f.group('func')}"
    if not frames:
        return NO_PYTHON_FRAME
    stdlib = re.search(r"/python3\.\d+/(.+)$", frames[0].group("file"))
    return f"{stdlib.group(1) if stdlib else '<script>'}:{frames[0].group('func')}"


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


#: NumPy's testing helpers' message when two arrays differ: the program compared with `assert_allclose`
ALLCLOSE_MESSAGE = "Not equal to tolerance"


def program_exit(text: str) -> str:
    """How the program stopped, for a signature's `program-exit`: its exception's message (or type
    when it has none; `assert_allclose` for NumPy's comparison, whose message starts on the next
    line), or without a traceback its last line of output."""
    ended = final_exception(text)
    if ended is None:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""
    if ended[0] == "AssertionError" and not ended[1] and ALLCLOSE_MESSAGE in text:
        return "assert_allclose"
    return ended[1] or ended[0]


#: the fields of a signature that say how the program stopped (its own comparison, its exit)
PROGRAM_FIELDS = ("program-compares", "program-exit")


def same_but_how_it_stopped(seen: Signature | None, wanted: Signature) -> bool:
    """Whether `seen` is the `wanted` failure in every field but how the program stopped: what a
    replay of one traced call must show (a replay is no program: it has no check of its own)."""
    strip = lambda sig: {k: v for k, v in sig.fields if k not in PROGRAM_FIELDS}  # noqa: E731
    return seen is not None and seen.family == wanted.family and strip(seen) == strip(wanted)


def first_clause(message: str, limit: int = 90) -> str:
    """A message's first line up to its first sentence's end, at most `limit` characters: what a
    title says of it, in its own words."""
    line = message.strip().splitlines()[0].strip() if message.strip() else ""
    line = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"`\1`", line)  # a class by its own name
    line = re.split(r"(?<=[a-z0-9)'`\]])\. ", line, maxsplit=1)[0].rstrip(".:")
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"


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
