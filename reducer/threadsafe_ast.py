"""`ast.parse` made safe to call from several threads at once, for the whole process.

CPython 3.11 keeps the recursion depth of its conversion of a parsed tree into Python objects in
state the interpreter's threads share. When the GIL passes to another thread during a conversion (a
finalizer the collector runs is enough) and that thread parses too, the first one ends with
`SystemError: AST constructor recursion depth mismatch (before=24, after=17)` (python/cpython
gh-106905 and the reports linked there). A reduction parses candidates in several threads (the
origin's fixed runs side by side, the engine's workers), and under load this stopped whole
reductions as "bug in reducer". `install()` puts every `ast.parse` of the process behind one lock;
parsing is fast, the runs it prepares are not, so nothing waits long.
"""
from __future__ import annotations

import ast
import functools
import threading

_lock = threading.Lock()


def install() -> None:
    """Replace `ast.parse` by the same function behind one lock (once)."""
    if getattr(ast.parse, "behind_a_lock", False):
        return
    parse = ast.parse

    @functools.wraps(parse)
    def locked(*args, **kwargs):
        with _lock:
            return parse(*args, **kwargs)

    locked.behind_a_lock = True
    ast.parse = locked
