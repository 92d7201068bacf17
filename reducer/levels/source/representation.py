"""The Python-source representation: parse, dump, verify and size of a script.

Size is counted in Python tokens, leaving out comments, newlines and indentation, so that
formatting does not count (the same measure as the benchmark's `measure.py`). `parse` gives the
work item source passes read: a `Script`, the text with its syntax tree parsed once.
"""
from __future__ import annotations

import ast
import io
import threading
import tokenize
import warnings

SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENDMARKER, tokenize.ENCODING}
_NOTING = threading.Lock()


def tokens(source: str) -> int:
    try:
        return sum(1 for t in tokenize.tokenize(io.BytesIO(source.encode()).readline) if t.type not in SKIP)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return len(source.split())


class Script:
    """A parsed script, shared by every pass: `tree` is read, never changed; a pass edits a
    `fresh()` tree of its own for each candidate (parsing is cheaper than copying a tree)."""

    def __init__(self, text: str, failure: tuple = (), original_calls: tuple = ()):
        self.text = text
        self.tree = ast.parse(text)
        self.failure = failure  # (line, function) of each of the script's frames in its failure's traceback
        self.original_calls = original_calls  # the JAX functions the user's program called, when this is a write-back

    def fresh(self) -> ast.Module:
        return ast.parse(self.text)


class PythonSource:
    name = "python"
    unit = "tokens"  # what `size` counts, as the progress display says it

    failures: dict[str, tuple] | None = None  # program text -> where it failed (`Script.failure`)
    original_calls: tuple = ()  # `Script.original_calls`

    def parse(self, source: str) -> Script:
        return Script(source, (self.failures or {}).get(source, ()), self.original_calls)

    def note_failure(self, source: str, output: str, script_name: str, ran: str | None = None) -> None:
        """Remember where `source` failed (for the last few programs), for the passes that read it:
        the frames of `script_name` in `output`, the output of a run of `source`, or of `ran` when
        `source` is the normalized print of `ran`."""
        from reducer.levels.source.passes._failure_site import where_failed

        frames = where_failed(source, ran or source, output, script_name)
        if frames:
            with _NOTING:
                if self.failures is None:
                    self.failures = {}
                self.failures[source] = tuple(frames)
                while len(self.failures) > 8:
                    self.failures.pop(next(iter(self.failures)))

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
