"""The reproducer a maintainer files for a module XLA fails on (`repro.py` of `reducer reduce
FILE.mlir`): the module, its fixed inputs, the few calls that compile and run it with XLA, and the
check, in about thirty lines (`source`).

The harness the reduction runs candidates with (`xla_check`: phase markers, verdict lines, native
frames) stays in the tool. `confirm` runs the written reproducer in a fresh interpreter: it must
fail as the reduction's runs did and, with XLA's culprit pass disabled through `XLA_FLAGS`, run
through; otherwise the tool's own runner is filed instead, so nothing unconfirmed is handed on.
"""
from __future__ import annotations

import math

from oracles import Crash
from oracles.outcome import RunResult, Signature
from reducer import bug_report
from reducer.levels.mlir.run_module import XLA_KINDS, XLA_RESULTS, python_literal

#: numpy's name for each argument element type `xla_check.argument_types` gives
NUMPY = {"bfloat16": "ml_dtypes.bfloat16", "bool": "np.bool_"}
#: XLA's options for the reference the results are held to, in words (the culprit's, or none)
UNOPTIMISED = "XLA's optimisations off"
#: the arguments a program ran the module with, beside its reproducer (`for_runs`)
INPUTS = "repro_xla_inputs.npz"


def _dtype(name: str) -> str:
    return NUMPY.get(name, f"np.{name}")


def _numpy(name: str):
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def inputs_lines(arguments: list[tuple[list[int], str]]) -> list[str]:
    """`ARGS` made as `xla_check.example_inputs` makes them: the same generator, seed and order (in
    one line where every argument is a float of one type)."""
    lines = ["rng = np.random.default_rng(0)"]
    names = {name for _, name in arguments}
    if len(names) == 1 and (next(iter(names)).startswith("float") or names == {"bfloat16"}):
        shapes = ", ".join(repr(tuple(shape)) for shape, _ in arguments)
        return lines + [f"ARGS = [rng.standard_normal(shape).astype({_dtype(names.pop())}) for shape in [{shapes}]]"]
    lines.append("ARGS = [")
    for shape, name in arguments:
        shape_text, dtype = repr(tuple(shape)), _dtype(name)
        if name.startswith("complex"):
            made = f"(rng.standard_normal({shape_text}) + 1j * rng.standard_normal({shape_text})).astype({dtype})"
        elif name.startswith("float") or name == "bfloat16":
            made = f"rng.standard_normal({shape_text}).astype({dtype})"
        elif name == "bool":
            made = f"(np.arange({math.prod(shape)}) % 2 == 0).reshape({shape_text})"
        else:
            made = f"rng.integers(0, 4, {shape_text}).astype({dtype})"
        lines.append(f"    {made},")
    return lines + ["]"]


RUN = '''


def run(**xla_options):
    """MODULE compiled by XLA for the default device with `xla_options` (as XLA_FLAGS sets them), run on ARGS."""
    backend = jax.extend.backend.get_backend()
    options = xla_client.CompileOptions()
    options.env_option_overrides = list(xla_options.items())
    exe = backend.compile_and_load(MODULE, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                   compile_options=options)
    return [np.asarray(o) for o in exe.execute([jax.device_put(a, backend.devices()[0]) for a in ARGS])]


'''
CRASH_CHECK = '''outputs = run({options})  # XLA crashes here, or raises an error status
print("XLA compiled and ran the module:", ", ".join(f"{{o.dtype}}{{list(o.shape)}}" for o in outputs))
'''
RESULTS_CHECK = '''RTOL = {{"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}}  # times max|want|
got, want = run({options}), run({reference})  # {said}
for k, (g, w) in enumerate(zip(got, want)):  # integers and booleans exactly
    tol = 0 if w.dtype.kind in "biu" else RTOL.get(w.dtype.name, 1e-4) * abs(w[np.isfinite(w)]).max(initial=0) + 1e-6
    np.testing.assert_allclose(g, w, rtol=0, atol=float(tol), err_msg=f"output {{k}}")
print("the results agree")
'''


def _call(options: dict | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (options or {}).items())


def source(kind: str, module_text: str, arguments: list[tuple[list[int], str]], header: str = "",
           xla: dict | None = None, inputs_file: str | None = None) -> str:
    """The reproducer of a module that fails in XLA (`kind` one of `XLA_KINDS`): `arguments` are the
    (shape, dtype name) of `main`'s arguments; `xla` holds XLA's `options` for the compilation and,
    for the results kind, the `reference` options it is compared with; `inputs_file` an `.npz` beside
    it that holds the arguments (those a program ran the module with), else they are made here."""
    assert kind in XLA_KINDS
    names = {name for _, name in arguments}
    imports = ["import jax", "import jax.extend.backend", "import numpy as np", "from jaxlib import xla_client"]
    imports += ["import ml_dtypes"] if "bfloat16" in names else []
    if names & {"float64", "int64", "uint64", "complex128"}:
        imports += ["", 'jax.config.update("jax_enable_x64", True)  # 64-bit arguments stay 64-bit']
    made = ([f"with np.load({inputs_file!r}) as saved:  # the arguments the program ran the module with",
             "    ARGS = [saved[k] for k in saved.files]"] if inputs_file else inputs_lines(arguments))
    body = "\n".join(imports) + "\n\nMODULE = " + python_literal(module_text) + "\n" + "\n".join(made)
    xla = xla or {}
    if kind == XLA_RESULTS:
        reference = xla.get("reference") or {}
        said = (f"against XLA without the pass `{reference['xla_disable_hlo_passes']}`"
                if list(reference) == ["xla_disable_hlo_passes"] else f"against {UNOPTIMISED}")
        check = RESULTS_CHECK.format(options=_call(xla.get("options")), reference=_call(reference), said=said)
    else:
        check = CRASH_CHECK.format(options=_call(xla.get("options")))
    return (header.rstrip("\n") + "\n" if header else "") + body + RUN + check


def fails_alike(kind: str, wanted: Signature, run: RunResult) -> bool:
    """Whether a fresh run of the reproducer fails as the reduction's runs did: the same signal, or
    the same XLA error status, for a crash; an `AssertionError` on the results for a wrong result."""
    if run.timed_out or run.returncode in (0, None):
        return False
    if kind == XLA_RESULTS:
        return "AssertionError" in run.output
    seen = Crash(wanted.get("platform") or "cpu").classify(run)
    name = lambda sig: (sig.get("detail") or "").split(" in ")[0]  # noqa: E731 (the signal, or the status)
    return seen is not None and seen.get("how") == wanted.get("how") and name(seen) == name(wanted)


def confirm(run_fresh, kind: str, text: str, wanted: Signature, culprit: str | None,
            name: str = "repro.py") -> tuple[bool, str, str]:
    """Run the reproducer `text` in a fresh interpreter (`run_fresh(source)`), and again with the
    `culprit` pass disabled: (whether it fails as `wanted` and runs through without the pass, a
    sentence for the report, what the first run printed)."""
    from reducer.prologue import xla_flags as flags

    first = run_fresh(text)
    if not fails_alike(kind, wanted, first):
        tail = " ".join(first.output.strip().splitlines()[-2:])[-200:]
        return (False, f"the short reproducer did not fail alike in a fresh interpreter (exit {first.returncode}: "
                       f"{tail})", "")
    said = f"{name} fails alike in a fresh interpreter"
    if culprit:
        without = run_fresh(flags(text, f"--xla_disable_hlo_passes={culprit}"))
        if without.returncode != 0 or without.timed_out:
            return False, f"the short reproducer still fails with XLA pass `{culprit}` disabled", ""
        said += f", and runs through with XLA_FLAGS=--xla_disable_hlo_passes={culprit}"
    return True, said, first.output


def is_short(text: str) -> bool:
    """Whether a module's `repro.py` is this short reproducer (not the tool's runner)."""
    return "def run(**xla_options):" in text


def run_file(path, timeout: float | None = None) -> str:
    """What `python -X faulthandler repro.py` prints in its folder (`reducer report` shows it)."""
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-X", "faulthandler", path.name], cwd=path.parent,
                              capture_output=True, text=True, timeout=timeout or 300)
    except subprocess.TimeoutExpired:
        return ""
    return (done.stdout + done.stderr).replace(str(path.parent.resolve()) + "/", "")


def excerpt(output: str, tool_excerpt: str = "", lines: int = 16) -> str:
    """What a run of the reproducer printed, as the report shows it: its last lines (without
    faulthandler's list of extension modules, or the frames of installed libraries, of the runner
    that started it and of the tool's harness), and for a crash the native frames the tool's own
    signal handler found."""
    kept, skip = [], False
    for line in output.strip().splitlines():  # these frames say nothing of the failure
        library = (line.lstrip().startswith('File "<site-packages>') or "/site-packages/" in line
                   or bool(bug_report.RUNNER_FRAME.match(line)))
        if not (skip and line.startswith("    ")) and not library and not line.startswith("Extension modules:"):
            kept.append(line)
        skip = library
    kept = kept[-lines:]
    return "\n".join(kept + [line for line in tool_excerpt.splitlines() if line.startswith("native frame: ")])


def for_runs(runs, how, module_text: str, sig: Signature, header: str) -> tuple[str | None, str, str]:
    """The short reproducer of `runs`' reduced module (`ModuleRuns`, run as `how`, a `ModuleFailure`
    of an XLA kind, says), confirmed, what confirming it said and what it printed; None, and why, when
    it is not confirmed (the tool's runner is filed)."""
    import numpy as np

    from reducer.levels.mlir.xla_check import ESSENTIAL, made_inputs, with_saved
    from reducer.levels.mlir.xla_passes import changing_passes

    arguments = runs.rep.worker.call({"do": "arguments", "module": module_text}).get("arguments")
    if arguments is None:
        return None, "the module's arguments could not be read for a short reproducer", ""
    xla = dict(how.xla or {})
    if how.kind == XLA_RESULTS and not xla.get("reference"):
        passes = [p for p in changing_passes(runs, module_text, how.limits) if p not in ESSENTIAL]
        xla["reference"] = {"xla_backend_optimization_level": 0, "xla_disable_hlo_passes": ",".join(passes)}
    saved = xla.pop("inputs", None)
    box = runs.sandbox
    if saved:  # the arguments it runs on, saved beside it: those the program ran it with where they fit
        arrays = with_saved(made_inputs([(tuple(shape), _numpy(name)) for shape, name in arguments]), saved)
        np.savez(runs.scratch / INPUTS, *arrays)
        box = box.replace(data_files=(runs.scratch / INPUTS,))
    text = source(how.kind, module_text, arguments, header, xla, INPUTS if saved else None)
    ok, said, output = confirm(lambda s: box.run(s, how.limits, fresh=True), how.kind, text, sig,
                               (how.xla_pass or {}).get("pass"), runs.runner_name)
    return (text if ok else None), said, output
