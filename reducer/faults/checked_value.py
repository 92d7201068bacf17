"""The kind of the value a failing check read, told by the program's own process as it stops.

`watch()`, run before the program's first statement, wraps `sys.excepthook` (the harness reports an
uncaught exception through it). When the program stops on an exception, the innermost frame of the
program's own code is the check; the values its statement reads (the names it reads, and the
arguments of the calls it makes, or the calls themselves) are looked at, and the kinds of non-finite
values among them are printed as one line, `LINE_START nan 3` (or `+inf`, `-inf`, several joined by
commas; then how many non-finite elements they hold), before the traceback. A run under JAX's NaN
checks would stop at the first NaN anywhere, even one the program never checks (a gradient's, while
the check reads the loss's Inf); this reads the checked value.

It also prints how far the program got: the line of its own code it stopped at, and how many times
each line of its own file ran (`LINES_START 40 40:3,41:2`). A fix that takes the checked value away
lets the check pass where it failed, even when a training loop then fails on a later step: the
failing line then runs more often (`got_past`).
"""
from __future__ import annotations

import ast
import linecache
import re
import sys
import types

LINE_START = "[reducer] checked value:"
LINE = re.compile(re.escape(LINE_START) + r" (?P<kind>[-+a-z,]+)(?: (?P<count>\d+))?\s*$", re.M)
LINES_START = "[reducer] lines run:"
LINES = re.compile(re.escape(LINES_START) + r" (?P<at>\d+) (?P<runs>(?:\d+:\d+,)*\d+:\d+)\s*$", re.M)
_RUNS = re.compile(r"(\d+):(\d+)")
_LIBRARY = re.compile(r"site-packages|dist-packages|/lib/python3\.\d+/|^<|/reducer/(?:harness|workers)/")


def kind_in(output: str) -> str | None:
    """The kind a run printed with `watch()` on, or None."""
    found = list(LINE.finditer(output))
    return found[-1]["kind"] if found else None


def count_in(output: str) -> int | None:
    """How many non-finite elements the failing check read, as a run printed it with `watch()` on;
    None where it printed none."""
    found = list(LINE.finditer(output))
    return int(found[-1]["count"]) if found and found[-1]["count"] else None


def stopped_at(output: str) -> tuple[int, dict[int, int]] | None:
    """The line of its own code a run with `watch()` on stopped at, and how many times each line of
    the program's file ran; None where it printed none whole (a line cut by another thread's
    output does not match)."""
    found = list(LINES.finditer(output))
    if not found:
        return None
    return int(found[-1]["at"]), {int(line): int(n) for line, n in _RUNS.findall(found[-1]["runs"])}


def got_past(output: str, before: tuple[int, dict[int, int]] | None) -> bool:
    """Whether a run (its `output`, with `watch()` on) ran the line another run stopped at (`before`,
    from `stopped_at`) more times than that one did: the check passed where it had failed."""
    if before is None:
        return False
    after = stopped_at(output)
    line, runs = before
    return after is not None and after[1].get(line, 0) > runs.get(line, 0)


def watch() -> None:
    previous = sys.excepthook
    runs = _count_lines(sys._getframe(1))

    def hook(kind, value, tb):
        try:
            sys.settrace(None)
            kinds, count, line = _seen(tb)
            if kinds:
                print(f"{LINE_START} {named(kinds)} {count}", file=sys.stderr, flush=True)
            if line:
                ran = ",".join(f"{n}:{k}" for n, k in sorted(runs.items()))
                print(f"{LINES_START} {line} {ran}", file=sys.stderr, flush=True)
        except Exception:  # never in the way of the program's own report
            pass
        previous(kind, value, tb)

    sys.excepthook = hook


def _count_lines(program) -> dict[int, int]:
    """How many times each line of the file of the frame `program` runs, counted from now on."""
    path, runs = program.f_code.co_filename, {}

    def line(frame, event, arg):
        if event == "line":
            runs[frame.f_lineno] = runs.get(frame.f_lineno, 0) + 1
        return line

    sys.settrace(lambda frame, event, arg: line if frame.f_code.co_filename == path else None)
    program.f_trace, program.f_trace_lines = line, True
    return runs


def _seen(tb) -> tuple[set, int, int]:
    """The kinds of non-finite values the failing check read, how many elements held one, and the
    line of the check (0 where the program's own code is not on the traceback)."""
    frame, line = None, 0
    while tb is not None:
        if not _LIBRARY.search(tb.tb_frame.f_code.co_filename):
            frame, line = tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next
    if frame is None:
        return set(), 0, 0
    statement = _statement(frame.f_code.co_filename, line)
    if statement is None:
        return set(), 0, line
    kinds, count = set(), 0
    for value in _read(statement, frame):
        found, n = tally(value)
        kinds, count = kinds | found, count + n
    return kinds, count, line


def named(kinds: set) -> str:
    """The kinds of non-finite values seen, as one word: `nan`, `+inf`, `-inf`, or several joined
    by commas (`+inf,nan`: a loss's Inf beside its gradients' NaN)."""
    return ",".join(sorted(kinds))




def _statement(path: str, line: int) -> ast.stmt | None:
    try:
        tree = ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.With, ast.For, ast.While, ast.If, ast.Try)):
                found = node if found is None or node.lineno >= found.lineno else found
    return found


def _read(statement: ast.stmt, frame):
    """The values the statement reads: its names; where no name gave a non-finite value, the
    arguments of its calls, evaluated again; where none of those did either, its calls themselves
    (`all(jnp.isfinite(x) for x in jax.value_and_grad(f)(0.0))` reads the call's result)."""
    scope = {**frame.f_globals, **frame.f_locals}
    values = [scope[n.id] for n in ast.walk(statement) if isinstance(n, ast.Name) and n.id in scope]
    if any(kinds_of(v) for v in values):
        return values
    calls = [node for node in ast.walk(statement) if isinstance(node, ast.Call)]
    args = _evaluated([arg for call in calls for arg in call.args], frame)
    if any(kinds_of(v) for v in args):
        return values + args
    return values + _evaluated(calls, frame)


def _evaluated(nodes: list, frame) -> list:
    values = []
    for node in nodes:
        try:
            values.append(eval(compile(ast.Expression(node), "<check>", "eval"), frame.f_globals, dict(frame.f_locals)))
        except Exception:
            continue
    return values


def kinds_of(value) -> set:
    """The kinds of non-finite values in `value` (a pytree of arrays): `nan`, `+inf`, `-inf`."""
    return tally(value)[0]


def tally(value) -> tuple[set, int]:
    """The kinds of non-finite values in `value` (a pytree of arrays), and how many elements hold one."""
    import numpy as np

    if isinstance(value, types.GeneratorType):  # reading it would consume it
        return set(), 0
    try:
        if "jax" in sys.modules:  # a pytree of parameters or gradients
            leaves = sys.modules["jax"].tree_util.tree_leaves(value)
        else:
            leaves = list(value.values()) if isinstance(value, dict) else list(value) \
                if isinstance(value, (list, tuple)) else [value]
        found, count = set(), 0
        for leaf in leaves:
            if callable(leaf) or isinstance(leaf, (str, bytes)):
                continue
            a = np.asarray(leaf)
            if not np.issubdtype(a.dtype, np.inexact):
                continue
            if np.isnan(a).any():
                found.add("nan")
            if np.isposinf(a).any():
                found.add("+inf")
            if np.isneginf(a).any():
                found.add("-inf")
            count += int((~np.isfinite(a)).sum())
        return found, count
    except Exception:
        return set(), 0
