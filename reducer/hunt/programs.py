"""The program of a probe: the operation, differentiated in one mode through one route.

The program computes the derivative the probe asks for and, when that works, two references for
the hunt's own comparison: the same mode through plain JAX (for the Enzyme-JAX route) and float64
central finite differences of the plain function (for real dtypes). It prints them on one line
starting with `MARKER`; the verdict is the hunt's (`reducer.hunt.judge`), never the program's.
A program that fails raises as the user's program would, and the oracles judge the failure.
"""
from __future__ import annotations

import numpy as np

from reducer.hunt.table import Probe, sample

MARKER = "REDUCER-HUNT-VALUES "

#: how each mode differentiates `F` (the operation) or `L` (its real sum), at `x`; the Enzyme-JAX
#: route and `jit-grad` run it under `jax.jit` (Enzyme-JAX differentiates only inside `jit`)
MODE_CALLS = {
    "grad": "jax.grad(L)(x)",
    "jit-grad": "jax.grad(L)(x)",
    "vjp": "(lambda yb: yb[1](jnp.ones_like(yb[0]))[0])(jax.vjp(F, x))",
    "jvp": "jax.jvp(F, (x,), (jnp.ones_like(x),))[1]",
    "jacrev": "jax.jacrev(F)(x)",
    "jacfwd": "jax.jacfwd(F)(x)",
    "hessian": "jax.hessian(L)(x)",
    "vmap-grad": "jax.vmap(jax.grad(L))(jnp.stack([x, x * 0.875]))",
}

#: the same quantity by float64 central differences of the plain function (helpers below)
MODE_REFERENCES = {
    "grad": "fd_grad(loss, x64)",
    "jit-grad": "fd_grad(loss, x64)",
    "vjp": "fd_vjp(op, x64)",
    "jvp": "fd_jvp(op, x64)",
    "jacrev": "fd_jac(op, x64)",
    "jacfwd": "fd_jac(op, x64)",
    "hessian": "fd_jac(lambda v: fd_grad(loss, v, 1e-5), x64, 1e-4)",
    "vmap-grad": "np.stack([fd_grad(loss, x64), fd_grad(loss, x64 * 0.875)])",
}

HELPERS = '''
def values(v):
    v = np.asarray(v)
    if np.iscomplexobj(v):
        return {"re": v.real.astype(float).tolist(), "im": v.imag.astype(float).tolist()}
    return v.astype(float).tolist()


def fd_jac(f, x, h=1e-6):
    x = np.asarray(x, np.float64)
    flat, cols = x.ravel(), []
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = h
        up = np.asarray(f(jnp.asarray((flat + e).reshape(x.shape))), np.float64)
        down = np.asarray(f(jnp.asarray((flat - e).reshape(x.shape))), np.float64)
        cols.append((up - down) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(cols[0]) + x.shape)


def fd_grad(f, x, h=1e-6):
    return fd_jac(f, x, h)


def fd_jvp(f, x):
    jac = fd_jac(f, x)
    return np.tensordot(jac, np.ones(np.shape(x)), axes=np.ndim(x))


def fd_vjp(f, x):
    jac = fd_jac(f, x)
    out_dims = jac.ndim - np.ndim(x)
    return np.tensordot(np.ones(jac.shape[:out_dims]), jac, axes=out_dims)
'''


def literal(values: np.ndarray) -> str:
    return np.array2string(np.asarray(values), separator=", ", precision=17, floatmode="unique",
                           threshold=10_000).replace("\n", "")


def _inputs(probe: Probe) -> dict[str, np.ndarray]:
    """The values of `x`, `c` and `m`: drawn from the operation's domain, complex for complex dtypes."""
    op = probe.op
    x, c, m = sample(op.x, op.name), sample("any", op.name, "c"), sample("mat", op.name, "m")
    if probe.dtype.startswith("complex"):
        x = x + 0.5j * sample(op.x, op.name, "x-imag")
        c = c + 0.25j * sample("any", op.name, "c-imag")
    return {"x": x, "c": c, "m": m}


def _derivative_lines(probe: Probe, references: bool) -> list[str]:
    """From the imports to `result = …`: all a failure needs."""
    op, dtype, enzyme = probe.op, probe.dtype, probe.route == "enzyme"
    values, real = _inputs(probe), not dtype.startswith("complex")
    lines = [f"# reducer hunt: {op.name} under {probe.mode} through {probe.route} in {dtype}"]
    lines += ["import json", ""] if references else [""]
    lines += ["import jax", "import jax.numpy as jnp", "import numpy as np"]
    # as in every probe (the float64 reference needs it), so that a reduction starts from the same failure
    lines += ["", 'jax.config.update("jax_enable_x64", True)']
    if enzyme:
        lines.append("from enzyme_ad.jax import enzyme_jax_ir")
    body = f"    return {op.call}" if real else f"    y = {op.call}\n    return jnp.real(y) + jnp.imag(y)"
    lines += [
        "", f"c = jnp.asarray({literal(values['c'])}, dtype=jnp.{dtype})",
        f"m = jnp.asarray({literal(values['m'])}, dtype=jnp.{dtype})", "k = 2", "", "",
        "def op(x):", body, "", "",
        "def loss(x):", "    return jnp.sum(jnp.real(op(x)))", "", "",
        "F = enzyme_jax_ir()(op)" if enzyme else "F = op",
        "L = enzyme_jax_ir()(loss)" if enzyme else "L = loss",
        f"x = jnp.asarray({literal(values['x'])}, dtype=jnp.{dtype})", "", "",
        "def derivative(x):", f"    return {MODE_CALLS[probe.mode]}", "", "",
        "result = jax.jit(derivative)(x)" if enzyme or probe.mode == "jit-grad" else "result = derivative(x)",
    ]
    return lines


def _reference_lines(probe: Probe) -> list[str]:
    """After the derivative: JAX's own (Enzyme-JAX route), finite differences (real dtypes), the report."""
    lines = [HELPERS, "report = {'result': values(result)}"]
    if probe.route == "enzyme":
        lines += ["F, L = op, loss", "report['jax'] = values(derivative(x))"]
    if not probe.dtype.startswith("complex"):
        lines += [
            "x64 = np.asarray(x, np.float64)",
            "c, m = c.astype(jnp.float64), m.astype(jnp.float64)",
            "try:",
            f"    report['fd'] = values({MODE_REFERENCES[probe.mode]})",
            "except Exception as exc:  # no float64 reference: only the other checks apply",
            "    report['fd_error'] = f'{type(exc).__name__}: {exc}'[:200]",
        ]
    return lines + [f"print({MARKER!r} + json.dumps(report))"]


def program(probe: Probe, references: bool = True) -> str:
    """The program text of `probe`; without `references`, only up to the derivative (what a
    reduction of a failure starts from)."""
    lines = _derivative_lines(probe, references)
    if references:
        lines += _reference_lines(probe)
    return "\n".join(lines) + "\n"
