"""Reading the user's script: checks that give one clear line for each kind of bad input, and whether a
failing run only wanted input the script was not given."""
from __future__ import annotations

import ast
import os
import re
import shutil
from pathlib import Path

from oracles.base import final_exception
from oracles.outcome import RunResult
from reducer.readers import user_code
from reducer.errors import NOT_FOUND, NOT_TEXT, SYNTAX, ReducerError
from reducer.readers.user_modules import module_source


def read_text(path: Path, kind: str) -> str:
    """The UTF-8 text of an input file (`kind`: "a script", "an MLIR module in text form" …)."""
    path = Path(path)
    if not path.exists():
        raise ReducerError(f"{path}: no such file", NOT_FOUND)
    if path.is_dir():
        raise ReducerError(f"{path}: is a directory, not {kind}", NOT_FOUND)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReducerError(f"{path}: cannot read: {exc.strerror}", NOT_FOUND) from None
    if not data.strip():
        raise ReducerError(f"{path}: the file is empty", NOT_TEXT)
    if b"\0" in data:
        raise ReducerError(f"{path}: binary file, not {kind}", NOT_TEXT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReducerError(f"{path}: not UTF-8 text (byte {exc.start})", NOT_TEXT) from None


def read_script(path: Path) -> str:
    text = read_text(path, "a Python script")
    try:
        ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise ReducerError(f"{path}:{exc.lineno}: syntax error: {exc.msg}", SYNTAX) from None
    return text


def data_files(script: Path, source: str, limit_bytes: int = 200 * 1024 * 1024) -> tuple[Path, ...]:
    """Files next to the script that it names, copied next to every candidate so it can read them."""
    folder = Path(script).resolve().parent
    picked, total = [], 0
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return ()
    components, imported = _named(source)
    for entry in entries:
        named = entry.name in components or entry.is_file() and entry.stem in components \
            or entry.stem in imported and (entry.suffix == ".py" or entry.is_dir())
        if entry.name == Path(script).name or entry.name.startswith(".") or not named:
            continue
        try:
            size = entry.stat().st_size if entry.is_file() else sum(
                p.stat().st_size for p in entry.rglob("*") if p.is_file())
        except OSError:
            continue
        if total + size > limit_bytes:
            continue
        total += size
        picked.append(entry)
    return tuple(picked)


def _named(source: str) -> tuple[set[str], set[str]]:
    """The path components of the string literals `source` writes (`"data/train.csv"`: `data`,
    `train.csv`), and the modules it imports (their first name): a file or folder next to the script
    is the program's where it is named so, not where its name is a substring of the text (a folder `p`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(), set()
    components, imported = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            components.update(part for part in re.split(r"[/\\]", node.value) if part)
        elif isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level:  # `from . import helpers`
            imported.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
    return components, imported


def read_input(path: Path, after_earlier: bool = False) -> tuple[Path, str]:
    """The script to reduce and its text: a .py file, a test's node id (FILE.py::Class::test) made
    standalone, a Jupyter notebook (.ipynb) made a script (`reducer.readers.notebook`), or the module that
    `python -m NAME` runs (the path spelt `-m NAME`, `reducer.readers.user_code.MODULE`).

    For a node id or a notebook the script's path is a name next to the test file or the notebook
    (it is never written there), so that files the program reads from its folder are still found;
    for a module it is `NAME.py` in the working directory, where `python -m` runs it. The user's own
    packages the program imports are made part of it (`reducer.readers.user_code.standalone`). With
    `after_earlier`, a test runs after the plain tests before it in its module, as pytest runs them.
    """
    text, package = str(path), None
    if text.startswith(user_code.MODULE):
        name = text[len(user_code.MODULE):]
        file, package = module_source(name)
        script, source = Path.cwd() / f"{name}.py", read_script(file)
    elif "::" not in text and Path(path).suffix == ".ipynb":
        from reducer.readers.notebook import script_from_notebook

        script, source = Path(path).with_suffix(".py"), script_from_notebook(Path(path))
    elif "::" not in text:
        script, source = Path(path), read_script(Path(path))
    else:
        from reducer.readers.testcase import standalone_source

        file, *names = text.split("::")
        # a case's id may hold any character (`test_x[a b/c]`): the name keeps letters, digits, `_`, `.`, `-`
        name = re.sub(r"[^\w.\-]+", "_", "__".join(names).replace("]", ""))
        script = Path(file).with_name(f"{Path(file).stem}__{name}.py")
        source = standalone_source(text, read_script(Path(file)), after_earlier)
    return script, user_code.standalone(script, source, package)


def after_earlier_tests(node_id: Path, args: list[str] | tuple[str, ...] = ()) -> str | None:
    """A test's node id made standalone after the plain tests before it in its module, as pytest runs
    them, with its arguments baked in (None for a script or a notebook: nothing runs before it)."""
    if "::" not in str(node_id):
        return None
    script, source = read_input(node_id, after_earlier=True)
    return with_arguments(source, script.name, args)


def _top(tree: ast.Module) -> int:
    """The index of the first statement after the module's docstring and `from __future__` imports."""
    index = 0
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
            isinstance(body[0].value.value, str):
        index = 1
    while index < len(body) and isinstance(body[index], ast.ImportFrom) and body[index].module == "__future__":
        index += 1
    return index


def with_arguments(source: str, script_name: str, args: list[str] | tuple[str, ...]) -> str:
    """`source` with its command-line arguments baked in: `sys.argv = [...]` before the program's
    own code (after its docstring and `from __future__` imports), so that every run (candidates,
    the traced level's capture, the final checks, the reproducer run alone) sees them."""
    if not args:
        return source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    index = _top(tree)
    at = tree.body[index].lineno - 1 if index < len(tree.body) else len(lines)
    if index and index < len(tree.body) and tree.body[index - 1].end_lineno > at:  # `"""doc"""; import x`
        at = tree.body[index - 1].end_lineno
    argv = [script_name, *map(str, args)]
    baked = f"import sys\nsys.argv = {argv!r}\n"
    if lines and at == len(lines) and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines[:at]) + baked + "".join(lines[at:])


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return 0


def _stage(source: Path, target: Path) -> None:
    """A copy of `source` (a file or folder) at `target`: hard links where the file system allows."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, copy_function=_link_or_copy, dirs_exist_ok=True)
    else:
        _link_or_copy(source, target)


def _link_or_copy(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def argument_files(args, cwd: Path | None = None, stage: Path | None = None,
                   limit_bytes: int = 200 * 1024 * 1024) -> tuple[list[str], tuple[Path, ...]]:
    """The arguments given after `--`, and the files they name, to copy next to every candidate.

    Candidates run in a scratch folder of their own, so a relative path in the arguments must
    resolve there: a file or folder named by a bare name (`cfg.yaml`, `--data=train.npz`) is copied
    next to the candidate; one inside folders (`data/train.npz`) is staged under `stage` at the same
    relative path, and that top folder (holding only what the arguments name) goes next to the
    candidate. A path that leaves the folder (`../x`), or what would pass `limit_bytes`, becomes the
    file's absolute path."""
    cwd = Path(cwd or Path.cwd())
    out, files, total = [], [], 0
    for arg in map(str, args):
        prefix, value = ("", arg)
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
            prefix = flag + "="
        parts = Path(value).parts if value and not value.startswith("-") and "\0" not in value else ()
        try:
            exists = bool(parts) and not Path(value).is_absolute() and (cwd / value).exists()
        except (OSError, ValueError):
            exists = False
        if not exists:
            out.append(arg)
            continue
        size = _size(cwd / value)
        if ".." in parts or total + size > limit_bytes or (len(parts) > 1 and stage is None):
            out.append(prefix + str((cwd / value).resolve()))
            continue
        total += size
        out.append(arg)
        if len(parts) == 1:
            if cwd / value not in files:
                files.append(cwd / value)
            continue
        try:
            _stage(cwd / value, Path(stage) / value)
        except OSError:
            out[-1] = prefix + str((cwd / value).resolve())
            continue
        if Path(stage) / parts[0] not in files:
            files.append(Path(stage) / parts[0])
    return out, tuple(files)


def needs_input(run: RunResult) -> str | None:
    """A reason when the program failed because it wanted arguments or standard input."""
    ended = final_exception(run.output)
    text = run.output
    if "EOF when reading a line" in text or (ended and ended[0] == "EOFError"):
        return "the script reads standard input; give it its input inside the script"
    if "error: unrecognized arguments" in text or ("usage:" in text and "error: argument" in text):
        line = next((ln.strip() for ln in text.splitlines() if "error:" in ln), "")
        return f"the script rejects its command-line arguments ({line[:200]})"
    if "error: the following arguments are required" in text or (run.returncode == 2 and "usage:" in text):
        return ("the script needs command-line arguments; give them after `--` (reducer reduce SCRIPT -- ARGS…), "
                "or give them defaults")
    if ended and ended[0] == "IndexError" and "sys.argv" in text:
        return ("the script reads sys.argv; give its arguments after `--` (reducer reduce SCRIPT -- ARGS…), "
                "or inside the script")
    return None
