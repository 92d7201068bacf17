"""Jupyter notebooks as scripts: the code cells in order, with IPython's own syntax made plain Python.

`script_from_notebook` reads a notebook with `nbformat` and joins its code cells (markdown and raw
cells are left out). What only IPython understands is handled so that the script runs as the
notebook did, top to bottom, in a plain interpreter:

- line magics (`%matplotlib inline`, `%pip install x`, `%load_ext …`), shell lines (`!ls`,
  `files = !ls`) and help lines (`np.sum?`, `??np.sum`) become comments; `%time STATEMENT` and
  `%timeit STATEMENT` keep their statement (run once);
- a cell magic that only measures or captures (`%%time`, `%%timeit`, `%%capture`, `%%prun`) runs
  the cell's body; `%%writefile [-a] FILE` becomes a Python write of that file; any other cell magic
  (`%%bash`, `%%sh`, `%%html`, `%%javascript` …) is left out as a comment;
- `display(...)`, which IPython provides as a builtin, is defined as `print` when the notebook
  calls it without importing it.

`notebook_of(code)` is the other way: a one-cell notebook holding a script (the `repro.ipynb`
written beside `repro.py`).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from reducer.errors import NOT_TEXT, SYNTAX, ReducerError

#: cell magics whose body is plain Python that runs once
RUN_BODY = {"time", "timeit", "capture", "prun", "debug"}
#: line magics whose argument is a statement that runs
RUN_STATEMENT = {"time", "timeit", "prun"}
_HELP = re.compile(r"^\s*(\?\??[\w.]+|[\w.]+\?\??)\s*$")
_ASSIGNED_MAGIC = re.compile(r"^\s*[\w.,\s\[\]()]+\s*=\s*[%!]")


def _comment(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}pass  # {line.strip()}" if indent else f"# {line.strip()}"


def _line(line: str) -> str:
    """One line of a cell, IPython syntax made plain Python."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith("%") and not stripped.startswith("%%"):
        name, _, rest = stripped[1:].partition(" ")
        if name in RUN_STATEMENT and rest.strip() and not rest.strip().startswith("-"):
            return indent + rest.strip()
        return _comment(line)
    if stripped.startswith("!") or _HELP.match(line) or _ASSIGNED_MAGIC.match(line):
        return _comment(line)
    return line


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
        return True
    except SyntaxError:
        return False


def _plain_lines(body: str) -> str:
    """Each line made plain, unless the body parses as it is (then a `%` or `!` at a line's start is
    inside a string or an expression's continuation, and stays)."""
    if _parses(body):
        return body
    return "\n".join(_line(line) for line in body.split("\n"))


def cell_code(source: str) -> str:
    """One code cell as plain Python."""
    text = source.rstrip()
    if not text.strip():
        return ""
    first, _, body = text.lstrip("\n").partition("\n")
    if first.startswith("%%"):
        name, _, args = first[2:].strip().partition(" ")
        if name in RUN_BODY:
            return _plain_lines(body)
        if name in ("writefile", "file"):
            words = args.split()
            append = "-a" in words or "--append" in words
            names = [w for w in words if not w.startswith("-")]
            if names:
                return (f"# {first.strip()}\nwith open({names[0]!r}, {'a' if append else 'w'!r}) as _f:\n"
                        f"    _f.write({(body + chr(10))!r})")
        return "\n".join(["# " + first.strip()] + ["# " + line for line in body.split("\n")])
    return _plain_lines(text)


def _calls_display(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    called = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "display"
                 for n in ast.walk(tree))
    bound = any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == "display" for n in ast.walk(tree)) or \
        any(isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == "display" for n in ast.walk(tree)) or \
        any(isinstance(n, ast.Name) and n.id == "display" and isinstance(n.ctx, ast.Store) for n in ast.walk(tree))
    return called and not bound


def read_notebook(path: Path):
    """The notebook at `path` (nbformat version 4); one clear line when it is no notebook."""
    import nbformat

    try:
        return nbformat.read(str(path), as_version=4)
    except FileNotFoundError:
        from reducer.errors import NOT_FOUND

        raise ReducerError(f"{path}: no such file", NOT_FOUND) from None
    except Exception as exc:  # nbformat raises JSON, validation and reader errors of several kinds
        raise ReducerError(f"{path}: not a readable Jupyter notebook ({type(exc).__name__})", NOT_TEXT) from None


def script_from_notebook(path: Path) -> str:
    """The notebook's code cells in order as one plain Python script."""
    nb = read_notebook(Path(path))
    parts = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        code = cell_code(cell.get("source", ""))
        if not code.strip():
            continue
        if not _parses(code):
            try:
                ast.parse(code)
            except SyntaxError as exc:
                raise ReducerError(f"{path}: code cell {index + 1}, line {exc.lineno}: syntax error: {exc.msg}",
                                   SYNTAX) from None
        parts.append(code.rstrip() + "\n")
    if not parts:
        raise ReducerError(f"{path}: the notebook has no code to run", NOT_TEXT)
    script = "\n".join(parts)
    if _calls_display(script):
        script = "display = print\n" + script
    return script


def notebook_of(code: str) -> str:
    """A one-cell notebook (nbformat 4, JSON text) whose cell is `code`."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(code.rstrip("\n")))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb) + "\n"
