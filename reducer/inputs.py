"""Reading the user's script: checks that give one clear line for each kind of bad input, and whether a
failing run only wanted input the script was not given."""
from __future__ import annotations

import ast
from pathlib import Path

from oracles.base import final_exception
from oracles.outcome import RunResult
from reducer.errors import NOT_FOUND, NOT_TEXT, SYNTAX, ReducerError


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
    for entry in entries:
        named = entry.name in source or (entry.suffix == ".py" and entry.stem in source)
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


def read_input(path: Path) -> tuple[Path, str]:
    """The script to reduce and its text: a .py file, or a test's node id (FILE.py::Class::test) made standalone.

    For a node id the script's path is a name next to the test file (it is never written there), so
    that files the test reads from its folder are still found.
    """
    text = str(path)
    if "::" not in text:
        return Path(path), read_script(Path(path))
    from reducer.testcase import standalone_source

    file, *names = text.split("::")
    source = read_script(Path(file))
    script = Path(file).with_name(f"{Path(file).stem}__{'__'.join(names)}.py".replace("[", "_").replace("]", ""))
    return script, standalone_source(text, source)


def needs_input(run: RunResult) -> str | None:
    """A reason when the program failed because it wanted arguments or standard input."""
    ended = final_exception(run.output)
    text = run.output
    if "EOF when reading a line" in text or (ended and ended[0] == "EOFError"):
        return "the script reads standard input; give it its input inside the script"
    if "error: the following arguments are required" in text or (run.returncode == 2 and "usage:" in text):
        return "the script needs command-line arguments; give them defaults or set sys.argv inside the script"
    if ended and ended[0] == "IndexError" and "sys.argv" in text:
        return "the script reads sys.argv; give it its arguments inside the script"
    return None
