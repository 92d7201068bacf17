"""Code put at the top of a candidate before it runs: after its docstring and `from __future__`
imports (`with_prologue`), such as XLA's flags set before jax is imported (`xla_flags`)."""
from __future__ import annotations

import ast


def with_prologue(source: str, prologue: str) -> str:
    """`source` with `prologue` after its docstring and `from __future__` imports."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return prologue + source
    after = 0
    for k, node in enumerate(body):
        docstring = k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            after = node.end_lineno
        else:
            break
    lines = source.splitlines(keepends=True)
    return "".join(lines[:after]) + prologue + "".join(lines[after:])


def xla_flags(program: str, flags: str) -> str:
    """`program` with `flags` added to `XLA_FLAGS` before anything runs."""
    return with_prologue(program, "import os as _reducer_os\n_reducer_os.environ['XLA_FLAGS'] = "
                                  f"(_reducer_os.environ.get('XLA_FLAGS', '') + ' ' + {flags!r}).strip()\n")
