"""The traced-program level's typed model: what a spec holds, as dataclasses.

A spec's text is JSON (`reducer.levels.jaxpr.program`, `reducer.levels.jaxpr.codec`); it is parsed
once (`Spec.from_json`) and written back only where text leaves the level (a candidate for the
engine or a worker, a file), as exactly the text it was read from (`Spec.to_json`: sorted keys, no
spaces), so that the engine's cache keys and saved files stay as they are.

- `Var`: a variable (name, shape, dtype), `[name, shape, dtype]` in JSON; immutable, edits replace it.
- `Literal`: a scalar literal (value, dtype), `{"lit": value, "dtype": name}`; an equation's input
  or a jaxpr's output is an *atom*: a variable's name (a `str`) or a `Literal`.
- `Equation`: a primitive (or pseudo-primitive) applied to atoms, with its outputs, its encoded
  parameters (`reducer.levels.jaxpr.params`: they stay JSON data), its nested jaxprs and the public
  call it came from (`src`, `reducer.levels.jaxpr.public_calls`).
- `Jaxpr`: inputs, equations, outputs; walking (`walk`, `at`), what it reads (`uses`), renaming and
  dead-code removal, the edits every pass shares.
- `Transform` (`jit`, `grad` … with `argnums`, `in_axes`, `options`), `Arg` (shape, dtype, recorded
  values) and `Spec` (with `x64`, and the replay `check`, `explain`, `cause` and `checked` a worker request may carry).

Dataclasses copy with `copy.deepcopy` (`Spec.clone`); variables and literals are shared, as they
never change in place.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Iterator, Union

#: pseudo-primitives that stand for values: recorded values (`__const__`) and a constant fill (`__fill__`)
VALUE_PRIMS = {"__const__", "__fill__"}
#: the beginnings of the dtype names of real floating values, and of all inexact ones (complex too)
REAL_FLOATING = ("float", "bfloat")
INEXACT = (*REAL_FLOATING, "complex")


def dumps(data: dict) -> str:
    """The spec text of JSON data: sorted keys, no spaces (what cache keys and saved files hold)."""
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def _fields(data: dict, known: set, what: str) -> None:
    """Refuse a field the model would drop (checked once the fields it needs were read: a missing
    one is a KeyError)."""
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{what} with fields the model does not hold: {sorted(unknown)}")


@dataclass(frozen=True)
class Var:
    name: str
    shape: tuple
    dtype: str

    @classmethod
    def from_data(cls, data) -> Var:
        name, shape, dtype = data
        return cls(name, tuple(shape), dtype)

    def to_data(self) -> list:
        return [self.name, list(self.shape), self.dtype]

    def aval(self) -> tuple:
        """(shape, dtype): what two values of the same type share."""
        return self.shape, self.dtype

    def __deepcopy__(self, memo) -> Var:
        return self


@dataclass(frozen=True)
class Literal:
    value: object  # a number, or [real, imaginary] for a complex one
    dtype: str

    def to_data(self) -> dict:
        return {"lit": self.value, "dtype": self.dtype}

    def __deepcopy__(self, memo) -> Literal:
        return self


Atom = Union[str, Literal]


def atom_of(data) -> Atom:
    return data if isinstance(data, str) else Literal(data["lit"], data["dtype"])


def atom_data(a: Atom):
    return a if isinstance(a, str) else a.to_data()


def names(atoms) -> list[str]:
    """The variables among `atoms` (literals left out)."""
    return [a for a in atoms if isinstance(a, str)]


@dataclass
class Equation:
    primitive: str
    inputs: list
    outputs: list
    params: dict = field(default_factory=dict)
    subs: list = field(default_factory=list)
    src: str | None = None  # the public call it came from, when a handled one

    @classmethod
    def from_data(cls, data: dict) -> Equation:
        eqn = cls(data["p"], [atom_of(a) for a in data["in"]], [Var.from_data(o) for o in data["out"]],
                  data["params"], [Jaxpr.from_data(s) for s in data["subs"]], data.get("src"))
        _fields(data, {"p", "in", "out", "params", "subs", "src"}, "a spec equation")
        return eqn

    def to_data(self) -> dict:
        data = {"p": self.primitive, "in": [atom_data(a) for a in self.inputs],
                "out": [o.to_data() for o in self.outputs], "params": self.params,
                "subs": [s.to_data() for s in self.subs]}
        if self.src is not None:
            data["src"] = self.src
        return data


@dataclass
class Jaxpr:
    inputs: list
    eqns: list
    outputs: list

    @classmethod
    def from_data(cls, data: dict) -> Jaxpr:
        j = cls([Var.from_data(v) for v in data["in"]], [Equation.from_data(e) for e in data["eqns"]],
                [atom_of(a) for a in data["out"]])
        _fields(data, {"in", "eqns", "out"}, "a spec jaxpr")
        return j

    def to_data(self) -> dict:
        return {"in": [v.to_data() for v in self.inputs], "eqns": [e.to_data() for e in self.eqns],
                "out": [atom_data(a) for a in self.outputs]}

    # -- walking ----------------------------------------------------------------------------------
    def walk(self, path: tuple = ()) -> Iterator[tuple[tuple, Jaxpr]]:
        """Every jaxpr inside this one (itself first), with its path: (eqn index, sub index) pairs."""
        yield path, self
        for i, e in enumerate(self.eqns):
            for k, s in enumerate(e.subs):
                yield from s.walk(path + ((i, k),))

    def at(self, path: tuple) -> Jaxpr:
        j = self
        for i, k in path:
            j = j.eqns[i].subs[k]
        return j

    def variables(self) -> dict:
        """Name -> `Var` of the inputs and equation outputs (nested jaxprs are not looked into)."""
        found = {v.name: v for v in self.inputs}
        found.update((o.name, o) for e in self.eqns for o in e.outputs)
        return found

    def uses(self) -> set:
        """Variables read by the equations and outputs (nested jaxprs are closed: not looked into)."""
        used = set(names(self.outputs))
        for e in self.eqns:
            used.update(names(e.inputs))
        return used

    # -- editing ----------------------------------------------------------------------------------
    def rename(self, mapping: dict) -> None:
        """Replace uses of variables in the equations and outputs (not in nested jaxprs)."""
        for e in self.eqns:
            e.inputs = [mapping.get(a, a) if isinstance(a, str) else a for a in e.inputs]
        self.outputs = [mapping.get(a, a) if isinstance(a, str) else a for a in self.outputs]

    def dce(self) -> None:
        """Drop equations none of whose outputs are used, in every nested jaxpr too."""
        for e in self.eqns:
            for s in e.subs:
                s.dce()
        live = set(names(self.outputs))
        kept = []
        for e in reversed(self.eqns):
            if any(o.name in live for o in e.outputs):
                kept.append(e)
                live.update(names(e.inputs))
        self.eqns = kept[::-1]


@dataclass
class Transform:
    kind: str  # jit, grad, value_and_grad, vjp, jvp, vmap, jacrev, jacfwd, hessian, enzyme
    argnums: list | None = None  # the differentiated inputs (grad-like)
    in_axes: list | None = None  # one axis or None per input (vmap)
    options: dict | None = None  # `enzyme_jax_ir`'s (`reducer.levels.jaxpr.params.enzyme_options`)

    @classmethod
    def from_data(cls, data: dict) -> Transform:
        t = cls(data["t"], data.get("argnums"), data.get("in_axes"), data.get("options"))
        _fields(data, {"t", "argnums", "in_axes", "options"}, "a spec transformation")
        return t

    def to_data(self) -> dict:
        data = {"t": self.kind}
        for key in ("argnums", "in_axes", "options"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data


@dataclass
class Arg:
    shape: tuple
    dtype: str
    values: list | None = None  # recorded flat values (`reducer.levels.jaxpr.params.flat_values`); else ones

    @classmethod
    def from_data(cls, data: dict) -> Arg:
        arg = cls(tuple(data["shape"]), data["dtype"], data.get("values"))
        _fields(data, {"shape", "dtype", "values"}, "a spec argument")
        return arg

    def to_data(self) -> dict:
        data = {"shape": list(self.shape), "dtype": self.dtype}
        if self.values is not None:
            data["values"] = self.values
        return data


#: the harness report's seconds of a first replay spent explaining (`Spec.explain`), not replaying
EXPLAINED = "explained_seconds"
#: … and of the call's own compiled run, without the runs that locate a non-finite value's origin
CALLED = "call_seconds"


@dataclass
class Spec:
    transforms: list  # outermost first
    jaxpr: Jaxpr
    args: list
    x64: bool = False  # captured with `jax_enable_x64`
    check: str = ""  # the numeric check a worker replays it with (`reducer.levels.jaxpr.value_checks`)
    explain: bool = False  # with it, finite differences at the operation at fault (its seconds: EXPLAINED)
    cause: str = ""  # the cause of a non-finite value the replay is held to (`reducer.faults.cause`)
    checked: str = ""  # with `explain`, the kinds of non-finite value the program's check reads (`nan`)

    @classmethod
    def from_data(cls, data: dict) -> Spec:
        spec = cls([Transform.from_data(t) for t in data["transforms"]], Jaxpr.from_data(data["jaxpr"]),
                   [Arg.from_data(a) for a in data["args"]], bool(data.get("x64")), data.get("check", ""),
                   bool(data.get("explain")), data.get("cause", ""), data.get("checked", ""))
        _fields(data, {"transforms", "jaxpr", "args", "x64", "check", "explain", "cause", "checked"}, "a spec")
        return spec

    @classmethod
    def from_json(cls, text: str) -> Spec:
        return cls.from_data(json.loads(text))

    def to_data(self) -> dict:
        data = {"transforms": [t.to_data() for t in self.transforms], "jaxpr": self.jaxpr.to_data(),
                "args": [a.to_data() for a in self.args]}
        if self.x64:
            data["x64"] = True
        if self.check:
            data["check"] = self.check
        if self.explain:
            data["explain"] = True
        if self.cause:
            data["cause"] = self.cause
        if self.checked:
            data["checked"] = self.checked
        return data

    def to_json(self) -> str:
        return dumps(self.to_data())

    def clone(self) -> Spec:
        return copy.deepcopy(self)

    def kinds(self) -> list[str]:
        """The transformations' kinds, outermost first."""
        return [t.kind for t in self.transforms]
