"""Run a StableHLO module as XLA runs it: compile it for the platform, execute it on fixed inputs of
its argument types, and, when asked, compare the results with a reference compilation.

`run(module_text)` says on file descriptor 2 which phase it enters (`reducer-xla: phase=compile`,
then `phase=execute`) before entering it, so a process killed by a signal still tells whether
XLA's compiler or the compiled program died. `compare(module_text, reference)` runs the module as
XLA compiles it by default and again with `reference`'s XLA options (by default XLA's
optimisations off: backend optimisation level 0 and the HLO passes that change the module
disabled), prints one line `reducer-xla-results: {JSON}` and raises `ResultsDiffer` when an output
differs beyond the tolerances. `changing_passes` lists the HLO passes that change the module (from
XLA's own per-pass dump), which is where a culprit pass is looked for.

This file imports nothing of reducer: the XLA reproducer (`repro.py` of `reducer reduce FILE.mlir`
for a module XLA fails on) carries it verbatim.
"""
from __future__ import annotations

import json
import os
import re
import tempfile

import numpy as np

PHASE = "reducer-xla: phase="
RESULTS = "reducer-xla-results: "
SEED = 0
#: |result - reference| <= RTOL * max|reference| + ATOL for floating point; other types exactly
RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}
ATOL = 1e-6
ELEMENTS = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
            "i16": np.int16, "i8": np.int8, "i1": np.bool_, "ui64": np.uint64, "ui32": np.uint32,
            "ui16": np.uint16, "ui8": np.uint8, "complex<f32>": np.complex64, "complex<f64>": np.complex128}
#: names in XLA's per-pass dump that are not passes
NOT_PASSES = {"pipeline-start", "pipeline-end"}


class ResultsDiffer(Exception):
    """The module's compiled results differ from the reference compilation's."""


def phase(name: str) -> None:
    os.write(2, f"{PHASE}{name}\n".encode())


def argument_types(module_text: str) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of each argument of the module's public `main`."""
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    with jax_mlir.make_ir_context():
        module = ir.Module.parse(module_text)
        for f in module.body.operations:
            if "sym_name" in f.attributes and ir.StringAttr(f.attributes["sym_name"]).value == "main":
                ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
                return [_numpy_type(t) for t in ftype.inputs]
    raise ValueError("the module has no function @main for XLA to run")


def argument_names(module_text: str) -> list[list]:
    """[shape, dtype name] of each argument of `main` (`argument_types`, as JSON carries them)."""
    return [[list(shape), dtype.name] for shape, dtype in argument_types(module_text)]


def operations(module_text: str) -> list[str]:
    """The names of the module's operations, each once, in order."""
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    found: list[str] = []

    def visit(op):
        if op.operation.name not in found:
            found.append(op.operation.name)
        return ir.WalkResult.ADVANCE

    with jax_mlir.make_ir_context():
        ir.Module.parse(module_text).operation.walk(visit)
    return [n for n in found if n not in ("builtin.module", "func.func", "func.return", "stablehlo.return")]


def _numpy_type(t) -> tuple[tuple[int, ...], np.dtype]:
    from jaxlib.mlir import ir

    ranked = ir.RankedTensorType(t)
    element = str(ranked.element_type)
    if element == "bf16":
        import ml_dtypes

        return tuple(ranked.shape), np.dtype(ml_dtypes.bfloat16)
    if element not in ELEMENTS:
        raise ValueError(f"arguments of type {t} are not supported")
    return tuple(ranked.shape), np.dtype(ELEMENTS[element])


def example_inputs(module_text: str, seed: int = SEED) -> list[np.ndarray]:
    """Fixed pseudo-random arguments: standard normal floats (real and imaginary parts), integers
    in [0, 4) (valid as small indices), alternating booleans."""
    return made_inputs(argument_types(module_text), seed)


def given_inputs(module_text: str, path: str | None = None) -> list[np.ndarray]:
    """`example_inputs`, each replaced by the first array saved at `path` (an `.npz` of the arguments
    a program ran the module with) of the same shape and type not taken before."""
    return with_saved(example_inputs(module_text), path)


def with_saved(made: list, path: str | None) -> list[np.ndarray]:
    """`made`, each replaced by the first array saved at `path` of the same shape and type not taken before."""
    if not path:
        return made
    with np.load(path) as saved:
        left = [saved[k] for k in saved.files]
    found = []
    for a in made:
        k = next((i for i, s in enumerate(left) if s.shape == a.shape and s.dtype == a.dtype), None)
        found.append(left.pop(k) if k is not None else a)
    return found


def made_inputs(types: list, seed: int = SEED) -> list[np.ndarray]:
    """`example_inputs` for arguments of these (shape, dtype)."""
    rng = np.random.default_rng(seed)
    found = []
    for shape, dtype in types:
        if dtype.kind == "c":
            found.append((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype))
        elif dtype.kind == "f" or dtype.name == "bfloat16":
            found.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            found.append((np.arange(int(np.prod(shape, dtype=np.int64))) % 2 == 0).reshape(shape))
        else:
            found.append(rng.integers(0, 4, shape).astype(dtype))
    return found


def compile_module(module_text: str, options: dict | None = None):
    """The module compiled by XLA for the default backend, with XLA `options` (debug options such as
    `xla_disable_hlo_passes`, as `jax.jit(...).lower(...).compile(compiler_options=...)` takes them)."""
    import jax.extend.backend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend()
    compile_options = xla_client.CompileOptions()
    compile_options.env_option_overrides = list((options or {}).items())
    return backend.compile_and_load(module_text, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                    compile_options=compile_options)


def run(module_text: str, options: dict | None = None, inputs: list | None = None) -> list[np.ndarray]:
    """Compile the module and execute it on `inputs` (by default `example_inputs`); its outputs."""
    import jax
    import jax.extend.backend

    inputs = example_inputs(module_text) if inputs is None else inputs
    phase("compile")
    exe = compile_module(module_text, options)
    phase("execute")
    device = jax.extend.backend.get_backend().devices()[0]
    with jax.enable_x64(True):  # 64-bit arguments stay 64-bit
        outs = exe.execute([jax.device_put(a, device) for a in inputs])
        return [np.asarray(o) for o in outs]


def changing_passes(module_text: str, options: dict | None = None) -> list[str]:
    """The HLO passes that change the module when XLA compiles it, in the order they first run."""
    with tempfile.TemporaryDirectory(prefix="reducer-xla-dump-") as folder:
        dump_passes(module_text, folder, options)
        return passes_in_dump(folder)


def dump_passes(module_text: str, folder: str, options: dict | None = None) -> None:
    """Compile the module with XLA's per-pass dump written into `folder` (a compilation that dies
    leaves the passes it ran)."""
    compile_module(module_text, {**(options or {}), "xla_dump_to": folder, "xla_dump_hlo_pass_re": ".*"})


def passes_in_dump(folder: str) -> list[str]:
    """The passes named by XLA's per-pass dump files (`….after_A.before_B.txt`), in order."""
    found: list[str] = []
    for name in sorted(os.listdir(folder)):
        m = re.search(r"\.\d{4}\.[^.]+\.after_(?P<after>[^.]+)\.before_(?P<before>[^.]+)\.txt$", name)
        for p in (m.group("after"), m.group("before")) if m else ():
            if p not in NOT_PASSES and p not in found:
                found.append(p)
    return found


def unoptimized(module_text: str) -> dict:
    """XLA's options for the reference: backend optimisation level 0, and every HLO pass that changes
    the module disabled except those XLA cannot compile without."""
    passes = changing_passes(module_text)
    off = [p for p in passes if p not in ESSENTIAL]
    return {"xla_backend_optimization_level": 0, "xla_disable_hlo_passes": ",".join(off)}


#: passes XLA's CPU and GPU compilers need to produce a runnable program
ESSENTIAL = {"layout-assignment", "copy-insertion", "flatten-call-graph", "sub-byte-size-setter"}


def differences(results: list, reference: list) -> list[dict]:
    """For each output that differs beyond the tolerances: where, by how much, and the two values."""
    found = []
    for k, (a, b) in enumerate(zip(results, reference)):
        if a.shape != b.shape or a.dtype != b.dtype:
            found.append({"output": k, "what": f"{a.dtype}{list(a.shape)} against {b.dtype}{list(b.shape)}"})
            continue
        if a.dtype.kind in "fc" or a.dtype.name == "bfloat16":
            x, y = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), b.astype(
                np.complex128 if b.dtype.kind == "c" else np.float64)
            scale = float(np.max(np.abs(y[np.isfinite(y)]), initial=0.0))
            tolerance = RTOL.get(a.dtype.name, 1e-4) * scale + ATOL
            with np.errstate(invalid="ignore"):
                bad = ~((np.abs(x - y) <= tolerance) | (np.isnan(x) & np.isnan(y)) | (x == y))
        else:
            tolerance = 0.0
            bad = a != b
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            found.append({"output": k, "index": list(where), "value": str(a[where]), "reference": str(b[where]),
                          "count": int(bad.sum()), "of": int(bad.size), "tolerance": tolerance})
    return found


def compare(module_text: str, reference: dict | None = None, options: dict | None = None,
            inputs: list | None = None) -> dict:
    """Run the module with XLA's `options` (by default its defaults) and with `reference` (by default
    `unoptimized`) on `inputs` (by default `example_inputs`); print the verdict line and raise
    `ResultsDiffer` when an output differs."""
    reference = reference or unoptimized(module_text)
    inputs = example_inputs(module_text) if inputs is None else inputs
    results = run(module_text, options, inputs)
    expected = run(module_text, reference, inputs)
    found = differences(results, expected)
    verdict = {"mismatch": bool(found), "reference": reference, "differences": found, "ops": operations(module_text)}
    print(RESULTS + json.dumps(verdict), flush=True)
    if found:
        worst = found[0]
        where = f"at index {tuple(worst['index'])}: {worst['value']} against {worst['reference']} " \
                f"({worst['count']} of {worst['of']} elements differ)" if "index" in worst else worst["what"]
        raise ResultsDiffer(f"output {worst['output']} of the module compiled with {describe(options or {})} differs "
                            f"from the module compiled with {describe(reference)} {where}")
    return verdict


def describe(options: dict) -> str:
    """XLA options as a reader would write them on the command line (`--xla_…=…`)."""
    return " ".join(f"--{k}={v}" for k, v in options.items()) or "its default options"
