"""One case of a parametrized pytest test, by the id the runner prints (`FILE.py::test_x[case]`):
the test's parametrizations (`parametrize` marks, stacked or on the class or module, `ids=`,
`pytest.param`, fixtures with `params=`, `indirect=`), the ids pytest gives their cases, and the
values of the case an id names, as expressions: the value as written, or `sorted(OPS)[k]` when the
list of values is computed. The ids come from the text where it holds them literally; otherwise pytest
itself is asked (a `--collect-only` run in a subprocess) which case an id names. Also here: a case's
values bound as plain variables at the top of the test's body (`bind_values`, for absltest's
generated methods too: reducer.readers.testclass finds their values).
"""
from __future__ import annotations

import ast
import copy
import functools
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from reducer.errors import NOT_FOUND, USAGE, ReducerError
from reducer.readers.testclass import dotted
from reducer.readers.testfixtures import Fixture, conftest_paths, fixture_closure
from reducer.readers.testtarget import Target, by_test_library

PYTEST_PROBE = r'''
import json, sys
import pytest
import _pytest.python
from _pytest.mark.structures import ParameterSet

# pytest 8+ renumbers a direct parameter's index over all of the test's cases; keep each parametrization's own
if hasattr(_pytest.python.Metafunc, "_recompute_direct_params_indices"):
    _pytest.python.Metafunc._recompute_direct_params_indices = lambda self: None

class Probe:
    def pytest_collection_finish(self, session):
        found = []
        for item in session.items:
            spec = getattr(item, "callspec", None)
            if spec is not None:
                cls = getattr(item, "cls", None)
                found.append([cls.__name__ if cls else None, item.originalname, spec.id,
                              dict(spec.indices, **{"@wrapped": wrapped(item, spec)})])
        print("REDUCER-PROBE " + json.dumps(found))

def wrapped(item, spec):
    """The parametrize marks (by first name) whose value for this case is a pytest.param(...)."""
    found = []
    for mark in item.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames")
        values = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues")
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        try:
            if isinstance(list(values)[spec.indices[names[0]]], ParameterSet):
                found.append(names[0])
        except Exception:
            pass
    return found

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", sys.argv[1]],
                     plugins=[Probe()]))
'''


@dataclass
class Case:
    """One case of a parametrized test: its id as the runner prints it and the values it binds."""
    id: str
    values: dict[str, ast.expr] = field(default_factory=dict)  # test argument -> expression of its value
    fixture_params: dict[str, ast.expr] = field(default_factory=dict)  # fixture -> expression of request.param


@dataclass
class Source:
    """One parametrization of a pytest test: a `parametrize` mark, or a fixture's `params=`."""
    argnames: list[str]
    expr: ast.expr              # the list of values as written
    entries: list | None        # its elements when it is a literal list, else None (computed)
    ids: ast.expr | None        # ids=
    indirect: set[str]
    fixture: str | None = None  # the parametrized fixture's name


def ascii_escaped(value) -> str:
    """A str or bytes id as pytest prints it."""
    text = value.decode("ascii", "backslashreplace") if isinstance(value, bytes) else \
        value.encode("unicode_escape").decode("ascii")
    return "".join(c if 32 <= ord(c) < 127 else f"\\x{ord(c):02x}" for c in text)


def _literal(node: ast.expr):
    """(True, value) for a literal expression, (False, None) otherwise."""
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _id_of_value(value) -> str | None:
    if isinstance(value, (str, bytes)):
        return ascii_escaped(value)
    if value is None or isinstance(value, (bool, int, float, complex)):
        return str(value)
    return None


def _pytest_param(node: ast.expr, test_names: dict) -> ast.Call | None:
    """The call when NODE is `pytest.param(...)`."""
    if isinstance(node, ast.Call) and dotted(node).split(".")[-1] == "param" and by_test_library(node, test_names):
        return node
    return None


def _entry_values(entry: ast.expr, count: int, test_names: dict) -> list[ast.expr]:
    """The expressions of one case's values, one per argument name."""
    param = _pytest_param(entry, test_names)
    if param is not None:
        return list(param.args)
    if count == 1:
        return [entry]
    if isinstance(entry, (ast.Tuple, ast.List)) and len(entry.elts) == count:
        return list(entry.elts)
    return [ast.Subscript(entry, ast.Constant(i), ast.Load()) for i in range(count)]


def _indexed(expr: ast.expr, k: int) -> ast.expr:
    """`(EXPR)[k]` for a list made by the expression (`list(EXPR)[k]` unless it surely gives a list)."""
    gives_list = isinstance(expr, (ast.ListComp, ast.List, ast.Tuple)) or \
        isinstance(expr, ast.Call) and dotted(expr) in ("sorted", "list", "tuple")
    seq = expr if gives_list else ast.Call(ast.Name("list", ast.Load()), [expr], [])
    return ast.Subscript(seq, ast.Constant(k), ast.Load())


def _argnames(node: ast.expr, where: str) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]
    raise ReducerError(f"{where}: parametrize's argument names are computed ({ast.unparse(node)}): "
                       "give them as a string or a tuple of strings", USAGE)


def _source(call: ast.Call, where: str, fixture: str | None = None) -> Source:
    keywords = {k.arg: k.value for k in call.keywords}
    if fixture is not None:
        names, values = [fixture], keywords["params"]
    else:
        args = list(call.args) + [keywords[k] for k in ("argnames", "argvalues") if k in keywords]
        if len(args) < 2:
            raise ReducerError(f"{where}: a parametrize mark without argument names and values", USAGE)
        names, values = _argnames(args[0], where), args[1]
    entries = list(values.elts) if isinstance(values, (ast.List, ast.Tuple)) else None
    indirect = keywords.get("indirect")
    if isinstance(indirect, ast.Constant):
        chosen = set(names) if indirect.value else set()
    elif isinstance(indirect, (ast.List, ast.Tuple)):
        chosen = {e.value for e in indirect.elts if isinstance(e, ast.Constant)}
    else:
        chosen = set()
    return Source(names, values, entries, keywords.get("ids"), chosen, fixture)


def _static_ids(source: Source, test_names: dict) -> list[str] | None:
    """The ids pytest gives the source's cases, worked out from the text; None when they need running code."""
    if source.entries is None:
        return None
    given = None
    if source.ids is not None:
        if not isinstance(source.ids, (ast.List, ast.Tuple)):
            return None  # a function, or a computed list
        given = source.ids.elts
    ids = []
    for idx, entry in enumerate(source.entries):
        param = _pytest_param(entry, test_names)
        explicit = next((k.value for k in param.keywords if k.arg == "id"), None) if param else None
        if explicit is not None and not (isinstance(explicit, ast.Constant) and explicit.value is None):
            ok, value = _literal(explicit)
            if not ok or not isinstance(value, str):
                return None
            ids.append(ascii_escaped(value))
            continue
        if given is not None and idx < len(given) and not (
                isinstance(given[idx], ast.Constant) and given[idx].value is None):
            ok, value = _literal(given[idx])
            if not ok or _id_of_value(value) is None:
                return None
            ids.append(_id_of_value(value))
            continue
        parts = []
        values = _entry_values(entry, len(source.argnames), test_names)
        if len(values) != len(source.argnames):
            return None
        for value_node, argname in zip(values, source.argnames):
            ok, value = _literal(value_node)
            if not ok:
                return None
            part = _id_of_value(value)
            if isinstance(value, (str, bytes)) and len(value) > 100:
                part = None
            parts.append(part if part is not None else f"{argname}{idx}")
        ids.append("-".join(parts))
    return _unique(ids)


def _unique(ids: list[str]) -> list[str]:
    """pytest's way of telling equal ids apart: a counter suffix (after `_` when the id ends in a digit)."""
    counts = {i: ids.count(i) for i in ids}
    taken, suffixes, out = set(ids), {}, []
    for id_ in ids:
        if counts[id_] > 1:
            sep = "_" if id_ and id_[-1].isdigit() else ""
            n = suffixes.get(id_, 0)
            while f"{id_}{sep}{n}" in taken:
                n += 1
            out.append(f"{id_}{sep}{n}")
            suffixes[id_] = n + 1
        else:
            out.append(id_)
    return out


def _parametrize_marks(target: Target) -> list[ast.Call]:
    """The test's parametrize marks in the order pytest applies them: nearest the function first, then its class's."""
    found = []
    for owner in [target.func] + ([target.cls] if target.cls else []):
        for d in reversed(owner.decorator_list):
            if dotted(d).split(".")[-1] == "parametrize" and by_test_library(d, target.test_names):
                if not isinstance(d, ast.Call):
                    raise ReducerError(f"{target.where}: a parametrize mark without arguments", USAGE)
                found.append(d)
    for stmt in target.tree.body:  # pytestmark = pytest.mark.parametrize(...) or a list of marks
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in stmt.targets):
            marks = stmt.value.elts if isinstance(stmt.value, (ast.List, ast.Tuple)) else [stmt.value]
            found += [m for m in marks if isinstance(m, ast.Call) and dotted(m).endswith("parametrize")]
    return found



def pytest_sources(target: Target, known: dict[str, Fixture]) -> list[Source]:
    """Every parametrization of a pytest test, in the order pytest joins their ids: the parametrized
    fixtures it uses (those no mark overrides), then its marks, the one nearest the function first."""
    marks = [_source(m, target.where) for m in _parametrize_marks(target)]
    direct = {n for s in marks for n in s.argnames if n not in s.indirect}
    overridden = {n for s in marks for n in s.argnames}
    fixtures = [_source(f.params, target.where, f.name) for f in fixture_closure(target, known, direct)
                if f.params is not None and f.name not in overridden]
    return fixtures + marks


def combined_ids(sources: list[Source], test_names: dict) -> list[tuple[str, tuple[int, ...]]] | None:
    per_source = [_static_ids(s, test_names) for s in sources]
    if any(ids is None for ids in per_source) or sum(s.fixture is not None for s in sources) > 1:
        return None
    combos = [("", ())]
    for ids in per_source:
        combos = [(f"{head}-{id_}" if head else id_, index + (k,)) for head, index in combos
                  for k, id_ in enumerate(ids)]
        if len(combos) > 100000:
            return None
    return combos


def pytest_probe(target: Target) -> list[tuple[str, dict[str, int]]]:
    """Ask pytest itself: the ids of the test's cases and, for each, the index of its value in every
    parametrization (for lists of values that are computed, or ids that a function makes)."""
    path = target.path.resolve()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _pytest_probe(str(path), stamp, target.cls.name if target.cls else None, target.func.name,
                         target.where)


@functools.lru_cache(maxsize=64)
def _pytest_probe(path: str, stamp: int, cls: str | None, func: str, where: str):
    node = f"{path}::{cls + '::' if cls else ''}{func}"
    try:
        done = subprocess.run([sys.executable, "-c", PYTEST_PROBE, node], capture_output=True, text=True,
                              timeout=600, cwd=Path(path).parent, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReducerError(f"{where}: pytest could not list the test's cases: {exc}", USAGE) from None
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("REDUCER-PROBE ")), None)
    if line is None:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise ReducerError(f"{where}: pytest could not list the test's cases: {last}", USAGE)
    return [(id_, indices) for owner, name, id_, indices in json.loads(line[len("REDUCER-PROBE "):])
            if owner == cls and name == func]


def _unknown_id(target: Target, param: str, ids: list[str]) -> ReducerError:
    shown = ", ".join(f"[{i}]" for i in ids[:5]) + (f" … ({len(ids)} in all)" if len(ids) > 5 else "")
    return ReducerError(f"{target.where}[{param}]: no such case of the test"
                        + (f" (it has {shown})" if ids else " (it has no cases)"), NOT_FOUND)


def pytest_case(target: Target, param: str, known: dict[str, Fixture]) -> Case:
    """The case of a parametrized pytest test that the id in brackets names."""
    sources = pytest_sources(target, known)
    if not sources:
        raise ReducerError(f"{target.where}[{param}]: {target.func.name} takes no parameters, so it has no "
                           "parametrized test ids ([...]): give the test without them", USAGE)
    hooked = any(isinstance(s, ast.FunctionDef) and s.name == "pytest_make_parametrize_id" for s in target.tree.body)
    for conftest in conftest_paths(target.path):  # a hook that makes ids: only pytest knows them
        try:
            hooked = hooked or "pytest_make_parametrize_id" in conftest.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    combos, wrapped = None if hooked else combined_ids(sources, target.test_names), []
    found = dict(combos).get(param) if combos is not None else None
    if found is None:
        cases = pytest_probe(target)
        indices = dict(cases).get(param)
        if indices is None:
            raise _unknown_id(target, param, [i for i, _ in cases])
        found = tuple(indices.get(s.fixture or s.argnames[0], 0) for s in sources)
        wrapped = indices.get("@wrapped", [])
    case = Case(param)
    for source, k in zip(sources, found):
        if source.entries is not None:
            if k >= len(source.entries):
                raise _unknown_id(target, param, [])
            entry = source.entries[k]
            values = _entry_values(entry, len(source.argnames), target.test_names)
        else:
            item, wrap = _indexed(source.expr, k), source.argnames[0] in wrapped
            if wrap:  # pytest.param(...) in a computed list: its values
                item = ast.Attribute(item, "values", ast.Load())
            values = [item] if len(source.argnames) == 1 and not wrap else [
                ast.Subscript(item, ast.Constant(i), ast.Load()) for i in range(len(source.argnames))]
        if len(values) != len(source.argnames):
            raise ReducerError(f"{target.where}[{param}]: the case gives {len(values)} values for "
                               f"{len(source.argnames)} names ({', '.join(source.argnames)})", USAGE)
        for name, value in zip(source.argnames, values):
            if source.fixture is not None or name in source.indirect:
                case.fixture_params[name] = value
            else:
                case.values[name] = value
    return case


def bind_values(func: ast.FunctionDef, values: dict[str, ast.expr], where: str) -> None:
    """`NAME = VALUE` at the top of the function's body for every bound argument, which it no longer takes."""
    if not values:
        return
    params = func.args.posonlyargs + func.args.args
    defaults = [None] * (len(params) - len(func.args.defaults)) + list(func.args.defaults)
    keep = [(a, d) for a, d in zip(params, defaults) if a.arg not in values]
    all_names = {a.arg for a in params + func.args.kwonlyargs}
    missing = [n for n in values if n not in all_names]
    if missing:
        raise ReducerError(f"{where}: the test does not take the parameter {missing[0]!r}", USAGE)
    posonly = {id(a) for a in func.args.posonlyargs}
    func.args.posonlyargs = [a for a, _ in keep if id(a) in posonly]
    func.args.args = [a for a, _ in keep if id(a) not in posonly]
    first = next((i for i, (_, d) in enumerate(keep) if d is not None), len(keep))
    func.args.defaults = [d for _, d in keep[first:]] if all(d is not None for _, d in keep[first:]) else []
    kept_kw = [(a, d) for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults) if a.arg not in values]
    func.args.kwonlyargs, func.args.kw_defaults = [a for a, _ in kept_kw], [d for _, d in kept_kw]
    assigns = [ast.Assign([ast.Name(name, ast.Store())], copy.deepcopy(value), lineno=0)
               for name, value in values.items()]
    func.body = assigns + func.body
