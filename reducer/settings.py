"""A project's own defaults for reducer's options: `[tool.reducer]` in its `pyproject.toml`.

    [tool.reducer]
    max-time = 120
    oracle = "jax-error"
    jobs = 2

The keys are the commands' long options without their dashes (`max-time`, `oracle`, `timeout`,
`platform`, `jobs`, `runs`, `stall`, `memory-mb`, `hangs`, `cold`, `runner`, `pass-order`,
`levels`, `quiet`, `json`, `bisect`; `out` and `resume`, which name one run, are not taken). The
file read is the nearest `pyproject.toml` above the input (a script, a test's node id's file, a
module), else above the working directory; one without a `[tool.reducer]` table gives no defaults.
A key applies to each command that has that option (`reduce` and `check`), and is passed over by
one that has not (`max-time` for `check`); an option given on the command line wins. A key neither
command has, or a value its option cannot take, is one line naming the file and the key, exit 2.

`reducer reduce` and `reducer check` read it through `project_defaults`, the callback of their
SCRIPT argument, which fills the command's `default_map` (click's own mechanism for defaults from
a configuration file); the pytest plugin (`reducer.pytest_plugin`) reads it to know the time a
reduction may take.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from reducer.errors import USAGE, ReducerError

FILE = "pyproject.toml"
#: options that name one run's files, never a project's default
PER_RUN = frozenset({"out", "resume", "help", "module"})
#: the commands that take their defaults from [tool.reducer] (the callback of their SCRIPT argument)
COMMANDS = ("reduce", "check")


@dataclass
class Settings:
    """The `[tool.reducer]` table found (key: option name without dashes), and the file it came from."""

    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def start_for(script: str | os.PathLike | None) -> Path:
    """Where the search starts for an input: the folder of a script (of a node id's file, `FILE.py::test`),
    or the working directory when there is no input or its folder does not exist."""
    if script is None or not str(script):
        return Path.cwd()
    folder = Path(str(script).split("::", 1)[0]).expanduser().resolve().parent
    return folder if folder.is_dir() else Path.cwd()


def find_pyproject(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest pyproject.toml in `start` (a folder, default the working directory) or above it."""
    here = Path(start) if start is not None else Path.cwd()
    here = here.resolve()
    for folder in (here, *here.parents):
        candidate = folder / FILE
        if candidate.is_file():
            return candidate
    return None


def read_table(path: Path) -> dict[str, Any]:
    """The `[tool.reducer]` table of `path` ({} when it has none); an unreadable file is a USAGE error."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ReducerError(f"{path}: cannot read it for [tool.reducer]: {exc}", USAGE) from None
    tool = data.get("tool", {})
    table = tool.get("reducer", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ReducerError(f"{path}: tool.reducer must be a table ([tool.reducer]), not a {type(table).__name__}",
                           USAGE)
    return table


def load(start: str | os.PathLike | None = None, known: Iterable[str] | None = None) -> Settings:
    """The settings of the nearest pyproject.toml above `start`; with `known` (the keys any command
    takes), a key outside it, or a table given as a value, is a USAGE error naming the file and the key."""
    path = find_pyproject(start)
    if path is None:
        return Settings()
    table = read_table(path)
    allowed = None if known is None else set(known)
    for key, value in table.items():
        if allowed is not None and key not in allowed:
            raise ReducerError(f"{path}: unknown key {key!r} in [tool.reducer] (known: {', '.join(sorted(allowed))})",
                               USAGE)
        if isinstance(value, dict):
            raise ReducerError(f"{path}: [tool.reducer] {key} must be a value, not a table", USAGE)
    return Settings(path, dict(table))


# -- the command-line side: keys are the commands' long options --------------------------------------

def option_keys(command) -> dict[str, Any]:
    """A (click / typer) command's settable options by key: `--max-time` -> its parameter."""
    keys = {}
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") != "option":
            continue
        for opt in param.opts:
            if opt.startswith("--") and opt[2:] not in PER_RUN:
                keys[opt[2:]] = param
    return keys


def command_keys(group) -> set[str]:
    """The keys the commands that read the settings (`COMMANDS` of the `reducer` group) take."""
    commands = getattr(group, "commands", {})
    return {key for name in COMMANDS if name in commands for key in option_keys(commands[name])}


def all_option_keys(ctx) -> set[str]:
    """The keys the commands that read the settings take, found from any context under the root."""
    return command_keys(ctx.find_root().command)


def defaults_for(ctx, settings: Settings) -> dict[str, Any]:
    """The command's default_map entries the settings give (parameter name -> value), each value
    checked by its option; a bad one is a USAGE error naming the file and the key."""
    mine = option_keys(ctx.command)
    defaults = {}
    for key, value in settings.values.items():
        param = mine.get(key)
        if param is None:
            continue
        try:
            param.process_value(ctx, value)
        except Exception as exc:  # the option's own check of the value (a click BadParameter …)
            why = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            raise ReducerError(f"{settings.path}: [tool.reducer] {key} = {value!r}: {why}", USAGE) from None
        defaults[param.name] = value
    return defaults


def project_defaults(ctx, param, value):
    """The callback of a command's SCRIPT argument: the nearest pyproject.toml's `[tool.reducer]`
    becomes the command's default_map. Options given on the command line never read it; the ones
    not given are processed after the argument (click processes given parameters first, in the
    order given), so they take these defaults."""
    if value is None or getattr(ctx, "resilient_parsing", False):
        return value
    try:
        settings = load(start_for(value), known=all_option_keys(ctx))
        defaults = defaults_for(ctx, settings)
    except ReducerError as exc:
        import sys

        import typer

        print(f"reducer: {exc}", file=sys.stderr, flush=True)
        raise typer.Exit(exc.status) from None
    if defaults:
        ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value
