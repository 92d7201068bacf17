"""MLIR pass pipelines as programs to reduce: parse and print the textual pipeline syntax, measure
it, and edit the activity options of Enzyme's `enzyme-wrap` pass.

A pipeline is a comma-separated list of passes; a pass is a name, an optional `{key=value …}` block
of options (values may hold commas, braces and quoted nested pipelines) and, for an anchored
pipeline such as `func.func(canonicalize)`, a nested list. The representation `PipelineText` lets
the generic engine shrink the pipeline string itself: size is the number of passes, then the
number of options, then the length.
"""
from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

#: the pass that turns a function into its derivative, and its activity options
WRAP_PASS = "enzyme-wrap"
ACTIVE = "enzyme_active"
CONST = "enzyme_const"


@dataclass
class PassSpec:
    """One element of a pipeline: `name{options}` or `anchor(nested, …)`."""

    name: str
    options: list[str] = field(default_factory=list)
    nested: list["PassSpec"] | None = None

    def option(self, key: str) -> str | None:
        for opt in self.options:
            k, _, v = opt.partition("=")
            if k == key:
                return v
        return None

    def set_option(self, key: str, value: str) -> None:
        for i, opt in enumerate(self.options):
            if opt.partition("=")[0] == key:
                self.options[i] = f"{key}={value}"
                return
        self.options.append(f"{key}={value}")


_SPECIAL = {}


def _specials(separators: str):
    if separators not in _SPECIAL:
        _SPECIAL[separators] = re.compile("[{}()\\[\\]\"" + re.escape(separators) + "]")
    return _SPECIAL[separators]


_CLOSING = {"{": "}", "(": ")", "[": "]"}


def _brackets(text: str, separators: str = "", start: int = 0):
    """(position, character, depth after it) of every bracket and separator of `text` from `start`
    on that lies outside double quotes; raises ValueError when the brackets do not match."""
    stack, quoted = [], False
    for m in _specials(separators).finditer(text, start):
        ch, i = m.group(), m.start()
        if quoted:
            quoted = not (ch == '"' and text[i - 1] != "\\")
            continue
        if ch == '"':
            quoted = True
            continue
        if ch in _CLOSING:
            stack.append(_CLOSING[ch])
        elif ch in ")}]" and (not stack or stack.pop() != ch):
            raise ValueError(f"unbalanced {ch!r} in pipeline at {i}")
        yield i, ch, len(stack)
    if stack or quoted:
        raise ValueError("unbalanced braces or quotes in pipeline")


def _split_top(text: str, separators: str) -> list[str]:
    """Split at separators that lie outside braces, parentheses, brackets and double quotes."""
    parts, start = [], 0
    for i, ch, depth in _brackets(text, separators):
        if depth == 0 and ch in separators:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _matching(text: str, i: int) -> int:
    """Index of the bracket closing the one at `i`."""
    for j, ch, depth in _brackets(text, "", i):
        if depth == 0:
            return j
    raise ValueError("unclosed bracket in pipeline")


def _is_name(name: str) -> bool:
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c in "_-." for c in name)


def parse(text: str) -> list[PassSpec]:
    """The passes of a textual pipeline; raises ValueError when it is not one."""
    text = text.strip()
    if not text:
        return []
    passes = []
    for item in _split_top(text, ","):
        item = item.strip()
        if not item:
            raise ValueError("empty pass in pipeline")
        cut = min([i for i in (item.find("{"), item.find("(")) if i >= 0], default=len(item))
        name, rest = item[:cut].strip(), item[cut:]
        if not _is_name(name):
            raise ValueError(f"not a pass name: {name!r}")
        spec = PassSpec(name)
        if rest.startswith("{"):
            end = _matching(rest, 0)
            spec.options = [o for o in _split_top(rest[1:end], " \t\n") if o]
            rest = rest[end + 1:].strip()
        if rest.startswith("("):
            end = _matching(rest, 0)
            spec.nested = parse(rest[1:end])
            rest = rest[end + 1:].strip()
        if rest:
            raise ValueError(f"unexpected text after pass {name!r}: {rest[:40]!r}")
        passes.append(spec)
    return passes


def render(passes: list[PassSpec]) -> str:
    out = []
    for p in passes:
        s = p.name
        if p.options:
            s += "{" + " ".join(p.options) + "}"
        if p.nested is not None:
            s += "(" + render(p.nested) + ")"
        out.append(s)
    return ",".join(out)


def count_passes(passes: list[PassSpec]) -> int:
    return sum(count_passes(p.nested) if p.nested is not None else 1 for p in passes)


def count_options(passes: list[PassSpec]) -> int:
    return sum(len(p.options) + (count_options(p.nested) if p.nested else 0) for p in passes)


def well_formed(passes: list[PassSpec]) -> bool:
    """MLIR's grammar: a pipeline names at least one pass, and so does every nested one
    (`builtin.module()` runs nothing: it is not a pipeline)."""
    return bool(passes) and all(p.nested is None or well_formed(p.nested) for p in passes)


@lru_cache(maxsize=64)
def looks_like_pipeline(text: str) -> bool:
    """Whether a `//` comment line holds a pass pipeline (as in Enzyme-JAX's dumps)."""
    try:
        return well_formed(parse(text))
    except ValueError:
        return False


UNREGISTERED = re.compile(r"does not refer to a registered pass")


def pass_names(passes: list[PassSpec]) -> list[str]:
    """Every pass name of a pipeline, anchors of nested pipelines left out."""
    names = []
    for p in passes:
        names += pass_names(p.nested) if p.nested is not None else [p.name]
    return names


@lru_cache(maxsize=256)
def unregistered_passes(text: str) -> tuple[str, ...]:
    """The pass names of a pipeline that Enzyme-JAX's pass registry (MLIR's passes and its own)
    does not know; none when enzyme-ad is not installed."""
    try:
        names = list(dict.fromkeys(pass_names(parse(text))))
    except ValueError:
        return ()
    known = registered(names)
    return tuple(n for n in names if not known[n])


#: where `registered` asks, when set (a list of names, a list of answers): a process that reduces
#: runs no pass itself (the IR worker does)
probe = None
_known: dict[str, bool] = {}


def registered(names: list[str]) -> dict[str, bool]:
    """Whether Enzyme-JAX knows a pass of each name: it parses a pipeline before running it (with
    default options, on an empty module, in `probe`'s process when one is set: one request for
    the names not asked about before)."""
    ask = [n for n in dict.fromkeys(names) if n not in _known]
    if ask:
        _known.update(zip(ask, probe(ask) if probe is not None else [registered_here(n) for n in ask]))
    return {n: _known[n] for n in names}


def registered_here(name: str) -> bool:
    try:
        from enzyme_ad.jax import enzyme_call
    except ImportError:
        return True
    with silenced():
        try:
            enzyme_call.run_pass_pipeline([], "module {\n}\n", name)
        except Exception as exc:
            return not UNREGISTERED.search(str(exc))
    return True


@contextmanager
def silenced():
    """Descriptors 1 and 2 point at /dev/null meanwhile (passes print what they cannot find)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


def opt_command(pipeline: str, module_file: str = "repro.mlir") -> str:
    """The command line that runs `pipeline` on a module with Enzyme-JAX's opt tool."""
    anchored = pipeline if pipeline.startswith("builtin.module(") else f"builtin.module({pipeline})"
    return f"enzymexlamlir-opt --pass-pipeline='{anchored}' {module_file}"


def wrap_pipeline(function: str, arg_activities: list[str], ret_activities: list[str]) -> str:
    """The one-pass pipeline that differentiates `function` in reverse mode, as enzyme_jax_ir asks."""
    return (f"{WRAP_PASS}{{infn={function} outfn= retTys={','.join(ret_activities)} "
            f"argTys={','.join(arg_activities)} mode=ReverseModeCombined}}")


def _wrap_passes(passes: list[PassSpec], function: str):
    for p in passes:
        if p.name == WRAP_PASS and p.option("infn") == function:
            yield p
        if p.nested:
            yield from _wrap_passes(p.nested, function)


@lru_cache(maxsize=64)
def entry_function(pipeline: str | None) -> str | None:
    """The function the pipeline differentiates (`infn` of its first enzyme-wrap), if any."""
    if not pipeline:
        return None
    try:
        passes = parse(pipeline)
    except ValueError:
        return None
    stack = list(passes)
    while stack:
        p = stack.pop(0)
        if p.name == WRAP_PASS and p.option("infn"):
            return p.option("infn")
        stack[:0] = p.nested or []
    return None


def remap_activities(pipeline: str, function: str, arg_map: list[int | None] | None, arg_new: list[str],
                     res_map: list[int | None] | None, res_new: list[str]) -> str:
    """Rewrite enzyme-wrap's argTys/retTys for `function` after its signature changed.

    `arg_map[i]` is the old index of new argument i (None for a new one, which gets `arg_new[i]`);
    a map of None leaves that list alone. Activity lists that did not match the old signature are
    left as they were.
    """
    try:
        passes = parse(pipeline)
    except ValueError:
        return pipeline
    changed = False
    for p in _wrap_passes(passes, function):
        for key, mapping, fresh in (("argTys", arg_map, arg_new), ("retTys", res_map, res_new)):
            if mapping is None:
                continue
            old = [a for a in (p.option(key) or "").split(",") if a]
            if any(i is not None and i >= len(old) for i in mapping):
                continue
            new = [old[i] if i is not None else fresh[k] for k, i in enumerate(mapping)]
            p.set_option(key, ",".join(new))
            changed = True
    return render(passes) if changed else pipeline


class PipelineText:
    """The engine's representation of a pipeline string."""

    unit = "passes"  # what `size` counts, as the progress display says it

    def parse(self, program: str) -> list[PassSpec]:
        """The work item the pipeline passes read: its passes (none when it is no pipeline)."""
        try:
            return parse(program)
        except ValueError:
            return []

    def size(self, program: str) -> int:
        try:
            return count_passes(parse(program))
        except ValueError:
            return 1 << 30

    def key(self, program: str) -> tuple:
        try:
            passes = parse(program)
        except ValueError:
            return (1 << 30,)
        return (count_passes(passes), count_options(passes), len(program))

    def verify(self, program: str) -> bool:
        try:
            return well_formed(parse(program))
        except ValueError:
            return False

    def normalize(self, program: str) -> str:
        return render(parse(program))
