"""Is Enzyme-JAX's reverse-mode gradient of a StableHLO module right?

`check(module_text, pipeline)` runs the pipeline (whose `enzyme-wrap` pass differentiates the entry
function in reverse mode), compiles the differentiated function with XLA and runs it on fixed
pseudo-random inputs, and compares it with central finite differences of the entry function itself,
compiled in float64 (float32 when the module cannot be read in float64): element by element for a
small input, else a few random directional derivatives, so that the cost does not grow with the
number of inputs. It prints one line
`reducer-ir-gradient: {JSON}` (the numbers, the reference used, the module's operations) and raises
`GradientDisagrees` when they disagree beyond the stated tolerances.

This file imports nothing of reducer: the numeric reproducer (`repro.py` of `reducer reduce
FILE.mlir`, `repro_mlir.py` next to a script's) carries it verbatim.
"""
from __future__ import annotations

import json
import re

import numpy as np

MARKER = "reducer-ir-gradient: "
WRAP = re.compile(r"enzyme-wrap\{(?P<options>[^{}]*)\}")
#: what enzyme_jax_ir runs after its enzyme-wrap pass, to lower Enzyme's ops back to StableHLO; added
#: when the pipeline has no arith-raise after its enzyme-wrap (a plain module's one-pass pipeline)
AFTER_AD = ("arith-raise{stablehlo=true},enzyme-batch-to-stablehlo,canonicalize,remove-unnecessary-enzyme-ops,"
            "enzyme-simplify-math,canonicalize,cse,canonicalize")
#: tolerances of the comparison: |enzyme - reference| <= RTOL * scale + ATOL, where scale is the sum
#: of the magnitudes of the terms of the directional derivative (float32 rounding is relative to it)
RTOL = {"float64": 1e-4, "float32": 2e-2}
ATOL = 1e-6
DIRECTIONS = 3
#: inputs of at most this many elements are compared element by element
SMALL = 8
SEED = 0


class GradientDisagrees(Exception):
    """Enzyme-JAX's gradient disagrees with finite differences of the same function."""


def wrap_options(pipeline: str) -> dict:
    """The options of the pipeline's `enzyme-wrap` pass: infn, argTys, retTys, mode."""
    m = WRAP.search(pipeline or "")
    if m is None:
        raise ValueError("the pipeline has no enzyme-wrap pass: nothing is differentiated")
    options = dict(part.split("=", 1) for part in m.group("options").split() if "=" in part)
    options["argTys"] = [a for a in options.get("argTys", "").split(",") if a]
    options["retTys"] = [a for a in options.get("retTys", "").split(",") if a]
    if not options.get("mode", "").startswith("ReverseMode"):
        raise ValueError(f"enzyme-wrap runs mode {options.get('mode')!r}: only reverse mode is checked")
    return options


def context():
    from jax._src.interpreters import mlir as jax_mlir

    return jax_mlir.make_ir_context()


def function_types(module_text: str, name: str) -> tuple[list, list, list[str]]:
    """(argument types, result types) of function `name` as (shape, numpy dtype), and the
    names of the operations in the module."""
    from jaxlib.mlir import ir

    with context():
        module = ir.Module.parse(module_text)
        ops: list[str] = []

        def visit(op):
            ops.append(op.operation.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        for f in module.body.operations:
            if "sym_name" in f.attributes and ir.StringAttr(f.attributes["sym_name"]).value == name:
                ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
                return [tensor_type(t) for t in ftype.inputs], [tensor_type(t) for t in ftype.results], ops
    raise ValueError(f"the module has no function @{name}")


def tensor_type(t) -> tuple[tuple[int, ...], np.dtype]:
    from jaxlib.mlir import ir

    ranked = ir.RankedTensorType(t)
    element = str(ranked.element_type)
    dtypes = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
              "i16": np.int16, "i8": np.int8, "i1": np.bool_, "ui64": np.uint64, "ui32": np.uint32,
              "ui16": np.uint16, "ui8": np.uint8}
    if element == "bf16":
        import ml_dtypes

        return tuple(ranked.shape), np.dtype(ml_dtypes.bfloat16)
    if element not in dtypes:
        raise ValueError(f"arguments of type {t} are not supported by the gradient check")
    return tuple(ranked.shape), np.dtype(dtypes[element])


def as_entry(module_text: str, name: str) -> str:
    """The module with function `name` made the public `main` that XLA runs."""
    from jaxlib.mlir import ir

    with context():
        module = ir.Module.parse(module_text)
        table = ir.SymbolTable(module.operation)
        if name != "main" and "main" in table:
            ir.SymbolTable.replace_all_symbol_uses("main", "main_primal", module.operation)
            table["main"].attributes["sym_name"] = ir.StringAttr.get("main_primal")
        f = table[name]
        if name != "main":
            ir.SymbolTable.replace_all_symbol_uses(name, "main", module.operation)
            f.attributes["sym_name"] = ir.StringAttr.get("main")
        if "sym_visibility" in f.attributes:
            del f.attributes["sym_visibility"]
        return str(module)


def compiled(module_text: str):
    """A callable that runs the module's `main` with XLA on numpy arrays, returning numpy arrays."""
    import jax
    import jax.extend.backend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend()
    device = backend.devices()[0]
    exe = backend.compile_and_load(module_text, executable_devices=xla_client.DeviceList((device,)),
                                   compile_options=xla_client.CompileOptions())

    def call(*args):
        with jax.enable_x64(True):  # float64 arguments stay float64
            outs = exe.execute([jax.device_put(np.asarray(a), device) for a in args])
        return [np.asarray(o) for o in outs]

    return call


def inputs(types: list, rng) -> list:
    """Fixed pseudo-random arguments: floats in [0.5, 1.5] (inside the domain of log, sqrt,
    digamma …), zeros for integers and booleans."""
    return [rng.uniform(0.5, 1.5, shape).astype(dtype) if np.issubdtype(dtype, np.floating)
            else np.zeros(shape, dtype) for shape, dtype in types]


def reference_primal(module_text: str, name: str) -> tuple[object, str]:
    """The entry function compiled in float64 (every f32 made f64), or as it is when that fails."""
    try:
        return compiled(as_entry(re.sub(r"(?<![A-Za-wyz0-9_.$])f32\b", "f64", module_text), name)), "float64"
    except Exception:
        return compiled(as_entry(module_text, name)), "float32"


def differentiated(module_text: str, pipeline: str):
    """Run the pipeline; the differentiated function compiled, and its argument count."""
    from enzyme_ad.jax import enzyme_call

    if "arith-raise" not in pipeline[pipeline.rindex("enzyme-wrap{"):]:
        pipeline = f"{pipeline},{AFTER_AD}"
    name, grad_text = enzyme_call.run_pass_pipeline([], module_text, pipeline)
    grad_args = function_types(grad_text, name)[0]
    return compiled(as_entry(grad_text, name)), len(grad_args)


def directions(x: list, active: list[int], rng) -> list[dict]:
    """The directions to compare along: each element of a small input (so the whole gradient is
    compared), else DIRECTIONS random ones (the cost does not grow with the input)."""
    total = sum(x[i].size for i in active)
    if 0 < total <= SMALL:
        found = []
        for i in active:
            for k in range(x[i].size):
                unit = np.zeros(x[i].size)
                unit[k] = 1.0
                found.append({j: unit.reshape(x[j].shape) if j == i else np.zeros(x[j].shape) for j in active})
        return found
    return [{i: rng.standard_normal(x[i].shape) for i in active} for _ in range(DIRECTIONS if active else 0)]


def directional(grads, primal, x, seeds, active, active_results, precision, v) -> dict:
    """Along direction v: Enzyme's <gradient, v> against the central difference of
    <seed, f(x + h v)> in `precision`."""
    enzyme = float(sum(np.sum(g.astype(np.float64) * v[i]) for g, i in zip(grads, active)))
    scale = float(sum(np.sum(np.abs(g.astype(np.float64)) * np.abs(v[i])) for g, i in zip(grads, active)))
    wide = np.float64 if precision == "float64" else np.float32
    base = [a.astype(wide) if a.dtype == np.float32 else a for a in x]
    h = ((1e-6 if precision == "float64" else 1e-2)
         * max(1.0, max(float(np.max(np.abs(x[i]), initial=0)) for i in active)))

    def at(sign):
        moved = [a + sign * h * v[i] if i in v else a for i, a in enumerate(base)]
        out = primal(*[m.astype(b.dtype) for m, b in zip(moved, base)])
        return sum(float(np.sum(seeds[k].astype(np.float64) * out[r].astype(np.float64)))
                   for k, r in enumerate(active_results))

    reference = (at(1) - at(-1)) / (2 * h)
    tolerance = RTOL[precision] * (scale + abs(reference)) + ATOL
    return {"enzyme": enzyme, "reference": reference, "error": abs(enzyme - reference), "tolerance": tolerance,
            "finite": bool(np.isfinite(reference))}


def disagreement(entry: str, reference: str, found: list[dict], x: list, active: list[int]) -> str:
    """The sentence `GradientDisagrees` says: the whole gradient for a small input, else the worst
    direction."""
    if sum(x[i].size for i in active) <= SMALL:
        point = ", ".join(np.array2string(x[i], precision=4) for i in active)
        ours = np.array2string(np.array([d["enzyme"] for d in found]), precision=6)
        theirs = np.array2string(np.array([d["reference"] for d in found]), precision=6)
        return (f"Enzyme-JAX's gradient of @{entry} at {point} is {ours}; {reference} give {theirs}")
    worst = max(found, key=lambda d: d["error"] - d["tolerance"] if np.isfinite(d["error"]) else np.inf)
    return (f"Enzyme-JAX's gradient of @{entry} disagrees with {reference}: directional derivative "
            f"{worst['enzyme']:.6g}, finite differences {worst['reference']:.6g} (tolerance {worst['tolerance']:.2g})")


def check(module_text: str, pipeline: str) -> dict:
    """Compare the pipeline's gradient with finite differences; print the verdict line and
    raise `GradientDisagrees` when they disagree (see the module docstring)."""
    options = wrap_options(pipeline)
    entry = options.get("infn") or "main"
    arg_types, result_types, ops = function_types(module_text, entry)
    if len(options["argTys"]) != len(arg_types) or len(options["retTys"]) != len(result_types):
        raise ValueError(f"enzyme-wrap names {len(options['argTys'])} arguments and {len(options['retTys'])} "
                         f"results; @{entry} has {len(arg_types)} and {len(result_types)}")
    active = [i for i, a in enumerate(options["argTys"]) if a == "enzyme_active"]
    active_results = [i for i, r in enumerate(options["retTys"]) if r.startswith("enzyme_active")]
    gradient, n_args = differentiated(module_text, pipeline)
    if n_args != len(arg_types) + len(active_results):
        raise ValueError(f"the differentiated function takes {n_args} arguments, not {len(arg_types)} "
                         f"arguments and {len(active_results)} seeds")
    rng = np.random.default_rng(SEED)
    x = inputs(arg_types, rng)
    seeds = inputs([result_types[r] for r in active_results], rng)
    outs = gradient(*x, *seeds)
    grads = outs[len(outs) - len(active):] if active else []
    primal, precision = reference_primal(module_text, entry)
    found = [directional(grads, primal, x, seeds, active, active_results, precision, v)
             for v in directions(x, active, rng)]
    conclusive = all(d["finite"] for d in found)
    mismatch = conclusive and any(d["error"] > d["tolerance"] or not np.isfinite(d["enzyme"]) for d in found)
    report = {"function": entry, "reference": f"central finite differences in {precision}", "mismatch": mismatch,
              "conclusive": conclusive, "directions": found,
              "ops": sorted(set(ops) - {"builtin.module", "func.func", "func.return", "stablehlo.return"})}
    print(MARKER + json.dumps(report), flush=True)
    if mismatch:
        raise GradientDisagrees(disagreement(entry, report["reference"], found, x, active))
    return report
