"""The operations table and the probes built from it.

A *probe* is one generated program: an operation from `ops.toml`, a mode of differentiation, a
route (plain JAX, or the function wrapped in Enzyme-JAX's `enzyme_jax_ir`) and a dtype. The input
values are drawn from the operation's domain by a generator seeded with the operation's name, so
that the same sweep always builds the same programs.
"""
from __future__ import annotations

import fnmatch
import re
import tomllib
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TABLE = Path(__file__).with_name("ops.toml")
MODES = ("grad", "jit-grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap-grad")
ROUTES = ("jax", "enzyme")
DTYPES = ("float32", "float64", "complex64")
#: modes JAX defines for real inputs only (jacfwd and hessian ask for `holomorphic=True`)
REAL_INPUT_MODES = ("jacfwd", "hessian")
DOMAINS = ("any", "pos", "unit", "gt1", "mat", "spd", "sym", "img")


@dataclass(frozen=True)
class Operation:
    name: str
    call: str
    x: str
    complex: bool = False


@dataclass(frozen=True)
class Probe:
    op: Operation
    mode: str
    route: str
    dtype: str

    @property
    def id(self) -> str:
        return f"{self.op.name}/{self.mode}/{self.route}/{self.dtype}"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "-", self.id).strip("-").lower()


def load_table(path: Path = TABLE) -> list[Operation]:
    """The operations, checked: unique names, known domains."""
    rows = tomllib.loads(path.read_text())["ops"]
    ops, seen = [], set()
    for row in rows:
        op = Operation(row["name"], row["call"], row["x"], bool(row.get("complex", False)))
        if op.name in seen:
            raise ValueError(f"{path}: operation {op.name!r} listed twice")
        if op.x not in DOMAINS:
            raise ValueError(f"{path}: {op.name}: unknown domain {op.x!r} (known: {', '.join(DOMAINS)})")
        seen.add(op.name)
        ops.append(op)
    return ops


def select(ops: list[Operation], pattern: str | None) -> list[Operation]:
    """The operations whose name matches `pattern`: comma-separated shell globs, or a regular
    expression when it is none (`jnp.linalg.*,special.*`, `digamma`)."""
    if not pattern:
        return list(ops)
    globs = [p.strip() for p in pattern.split(",") if p.strip()]
    if any(ch in pattern for ch in "*?["):
        return [op for op in ops if any(fnmatch.fnmatchcase(op.name, g) for g in globs)]
    return [op for op in ops if any(re.search(g, op.name) for g in globs)]


def parse_list(value: str, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """`grad,vjp` checked against the known names; raises ValueError naming the unknown one."""
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    for item in items:
        if item not in known:
            raise ValueError(f"unknown {what} {item!r} (known: {', '.join(known)})")
    if not items:
        raise ValueError(f"no {what} given")
    return items


def probes(ops: list[Operation], modes, routes, dtypes) -> tuple[list[Probe], int]:
    """Every applicable probe, in a fixed order, and how many were not applicable (complex dtypes
    for operations that take real input only, or modes JAX defines for real inputs only)."""
    out, skipped = [], 0
    for op in ops:
        for dtype in dtypes:
            if dtype.startswith("complex") and not op.complex:
                skipped += len(modes) * len(routes)
                continue
            for route in routes:
                for mode in modes:
                    if dtype.startswith("complex") and mode in REAL_INPUT_MODES:
                        skipped += 1
                        continue
                    out.append(Probe(op, mode, route, dtype))
    return out, skipped


def sample(domain: str, seed_text: str, salt: str = "x") -> np.ndarray:
    """Input values for `domain`, the same for the same operation name every time."""
    rng = np.random.default_rng(zlib.crc32(f"{seed_text}:{salt}".encode()))
    if domain == "any":
        return rng.uniform(0.2, 0.9, 3) * rng.choice([-1.0, 1.0], 3)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, 3)
    if domain == "unit":
        return rng.uniform(0.15, 0.85, 3)
    if domain == "gt1":
        return rng.uniform(1.3, 3.0, 3)
    if domain == "img":
        return rng.uniform(-1.0, 1.0, (1, 4, 4, 1))
    a = rng.uniform(-0.5, 0.5, (3, 3))
    if domain == "mat":
        return a + 2.0 * np.eye(3)
    if domain == "sym":
        return (a + a.T) / 2 + np.diag([0.0, 0.7, 1.5])
    if domain == "spd":
        return a @ a.T + np.eye(3)
    raise ValueError(f"unknown domain {domain!r}")
