"""The Python-source representation: parse, dump, verify and size of a script.

Size is counted in Python tokens, leaving out comments, newlines and indentation, so that
formatting does not count (the same measure as the benchmark's `measure.py`). `parse` gives the
work item source passes read: a `Script`, the text with its syntax tree parsed once.
"""
from __future__ import annotations

import ast
import io
import tokenize
import warnings

SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENDMARKER, tokenize.ENCODING}


def tokens(source: str) -> int:
    try:
        return sum(1 for t in tokenize.tokenize(io.BytesIO(source.encode()).readline) if t.type not in SKIP)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return len(source.split())


class Script:
    """A parsed script, shared by every pass: `tree` is read, never changed; a pass edits a
    `fresh()` tree of its own for each candidate (parsing is cheaper than copying a tree)."""

    def __init__(self, text: str):
        self.text = text
        self.tree = ast.parse(text)

    def fresh(self) -> ast.Module:
        return ast.parse(self.text)


class PythonSource:
    name = "python"

    def parse(self, source: str) -> Script:
        return Script(source)

    def dump(self, tree: ast.AST) -> str:
        return ast.unparse(tree) + "\n"

    def verify(self, source: str) -> bool:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(source, "<candidate>", "exec")
        except (SyntaxError, ValueError):
            return False
        return True

    def size(self, source: str) -> int:
        return tokens(source)

    def key(self, source: str) -> tuple:
        """The order candidates must descend in: tokens, then characters, then the magnitude of
        integer literals (so that shrinking a shape from 6 to 1 counts as progress)."""
        try:
            weight = sum(min(abs(n.value), 1 << 20) for n in ast.walk(ast.parse(source))
                         if isinstance(n, ast.Constant) and type(n.value) is int)
        except (SyntaxError, ValueError):
            weight = 0
        return tokens(source), len(source), weight

    def normalize(self, source: str) -> str:
        """The canonical text of a program: how every candidate is printed."""
        return self.dump(ast.parse(source))
