"""XLA's own texts as IR-level input (`reducer.levels.mlir.xla_dump`): HLO to StableHLO and back
through jaxlib's converters, the modules of an `--xla_dump_to` folder, and the user's source lines.

The dump under tests/data/xla/dump/ is a real one, trimmed (tests/data/xla/README says how it was
made): tests/programs/xla/make_dump.py compiles three modules that run and a fourth, the rank-7
`jnp.sum(a * b, axis=3)` of jax-ml/jax#40412, that dies with SIGSEGV when run under jaxlib 0.10.2.
Crashing candidates only ever run in a subprocess.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from reducer.levels.mlir import xla_dump as xd

TESTS = Path(__file__).resolve().parent
DUMP = TESTS / "data" / "xla" / "dump"
MAKE_DUMP = TESTS / "programs" / "xla" / "make_dump.py"
NAMES = ["jit_normalise", "jit_loss", "jit_norm", "jit_pair_energy"]
CRASHING = "jit_pair_energy"

RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.extend.backend
    from jax._src.lib import xla_client

    text = open(sys.argv[1]).read()
    backend = jax.extend.backend.get_backend()
    exe = backend.compile_and_load(text, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                   compile_options=xla_client.CompileOptions())
    args = [np.ones(shape, dtype) for shape, dtype in json.loads(sys.argv[2])]
    outs = exe.execute([jax.device_put(a) for a in args])
    print("ran", [np.asarray(o).shape for o in outs])
""")


def hlo_modules():
    return [d for d in xd.dump_modules(DUMP) if d.is_hlo]


def jax_modules():
    return {d.name: d for d in xd.dump_modules(DUMP) if d.stage == xd.MLIR}


def compile_module(text: str):
    import jax.extend.backend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend()
    return backend.compile_and_load(text, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                    compile_options=xla_client.CompileOptions())


def _parsed(text: str):
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    ctx = jax_mlir.make_ir_context()
    return ctx, ir.Module.parse(text, ctx)


def argument_types(text: str) -> list[tuple[list[int], str]]:
    """(shape, numpy dtype name) of each argument of the module's `@main`."""
    from jaxlib.mlir import ir

    dtypes = {"f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32", "i64": "int64", "i1": "bool"}
    ctx, module = _parsed(text)
    with ctx:
        main = next(op for op in module.body.operations if ir.StringAttr(op.attributes["sym_name"]).value == "main")
        types = [ir.RankedTensorType(t) for t in ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs]
        return [(list(t.shape), dtypes[str(t.element_type)]) for t in types]


def op_names(text: str) -> Counter:
    """How many of each operation the module has (the module, functions and terminators aside)."""
    from jaxlib.mlir import ir

    names = []

    def visit(op):
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    ctx, module = _parsed(text)
    with ctx:
        module.operation.walk(visit)
    return Counter(n for n in names if n not in ("builtin.module", "func.func", "func.return", "stablehlo.return"))


def run_in_subprocess(text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Compile `text` with XLA and run it on ones of its argument types, in a fresh interpreter."""
    (tmp_path / "module.mlir").write_text(text)
    (tmp_path / "runner.py").write_text(RUNNER)
    return subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "module.mlir"),
                           json.dumps(argument_types(text))], capture_output=True, text=True, timeout=300)


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert message and "\n" not in message, message
    return message


# --- telling HLO from MLIR -----------------------------------------------------------------------

def test_is_hlo_text():
    hlo = hlo_modules()[0].hlo_text
    assert xd.is_hlo_text(hlo)
    assert xd.is_hlo_text("\n// made by XLA\n/* a block\n comment */\n  HloModule m, entry_computation_layout={()->f32[]}\n")
    assert not xd.is_hlo_text(jax_modules()["jit_loss"].hlo_text)
    assert not xd.is_hlo_text("// HloModule in a comment\nmodule @m {\n}\n")
    assert not xd.is_hlo_text("")


# --- the modules of a dump -----------------------------------------------------------------------

def test_dump_modules_of_a_real_dump():
    modules = xd.dump_modules(DUMP)
    assert [d.name for d in modules if d.is_hlo] == NAMES
    assert [d.name for d in modules if d.stage == xd.MLIR] == NAMES
    numbers = [d.number for d in modules]
    assert numbers == sorted(numbers) and numbers[0] == 0
    assert all(d.path.name.endswith(".before_optimizations.txt") for d in modules if d.is_hlo)
    assert all(d.hlo_text.startswith("HloModule " + d.name) for d in modules if d.is_hlo)
    assert not any("after_optimizations" in d.path.name for d in modules)
    assert xd.looks_like_dump(DUMP)


def test_dump_modules_skips_what_is_not_a_module(tmp_path):
    dump = tmp_path / "dump"
    shutil.copytree(DUMP, dump)
    loss = (DUMP / "module_0002.jit_loss.before_optimizations.txt").read_text()
    # the other files XLA writes (names as jaxlib 0.10.2 writes them, with --xla_dump_hlo_pass_re=.* too)
    for name in ["module_0002.jit_loss.0005.simplification.after_pipeline-start.before_algsimp.txt",
                 "module_0002.jit_loss.0019.HLO_passes_after_scheduling.after_pipeline-start.before_optimizations.txt",
                 "module_0002.jit_loss.cpu_after_optimizations.txt",
                 "module_0002.jit_loss.cpu_after_optimizations-buffer-assignment.txt"]:
        (dump / name).write_text(loss)
    (dump / "module_0002.jit_loss.debug_options").write_text("xla_dump_to: \"/tmp/x\"\n")
    (dump / "module_0002.jit_loss.dot_general.1_elemental_kernel_module.ir-no-opt.ll").write_text("define void @f() {}\n")
    (dump / "module_0002.jit_loss.obj-file.wrapped_reduce_kernel_module.o").write_bytes(b"\x7fELF\x00")
    (dump / "module_0002.jit_loss" / "compile_options.textproto").write_text("executable_build_options {}\n")
    (dump / "module_0002.jit_loss.fusion.mlir").write_text("func.func @fusion() {\n  return\n}\n")  # no @main
    assert [(d.name, d.stage) for d in xd.dump_modules(dump)] == [(d.name, d.stage) for d in xd.dump_modules(DUMP)]


def test_a_folder_without_modules(tmp_path):
    assert not xd.looks_like_dump(tmp_path)
    (tmp_path / "module_0000.jit_f.cpu_after_optimizations.txt").write_text("HloModule jit_f\n")
    (tmp_path / "module_0000.jit_f.debug_options").write_text("")
    (tmp_path / "module_0000.jit_f.kernel.ir-with-opt.ll").write_text("")
    with pytest.raises(ValueError) as exc:
        xd.dump_modules(tmp_path)
    assert "no XLA module" in one_line(exc) and "--xla_dump_to" in one_line(exc)
    with pytest.raises(ValueError) as exc:
        xd.dump_modules(tmp_path / "missing")
    assert "not a folder" in one_line(exc)
    assert not xd.looks_like_dump(tmp_path / "missing")


# --- HLO to StableHLO ----------------------------------------------------------------------------

def test_each_dumped_module_converts_and_compiles():
    for dumped in hlo_modules():
        text = xd.hlo_to_stablehlo(dumped.hlo_text)
        assert text.startswith(f"module @{dumped.name}"), text[:200]
        assert "func.func public @main(" in text
        assert "loc(" not in text and "mhlo.is_dynamic" not in text
        for private in re.findall(r"func\.func private @([\w.$-]+)\(", text):  # the called ones only:
            assert re.search(rf"call @{re.escape(private)}\(", text), private  # the inlined regions are gone
        assert dumped.stablehlo() == text
        assert compile_module(text) is not None  # the rank-7 module compiles: it dies when it runs
        with_locations = xd.hlo_to_stablehlo(dumped.hlo_text, locations=True)
        assert "make_dump.py" in with_locations and compile_module(with_locations) is not None


def test_converted_modules_compute_what_jax_gave_xla():
    import jax

    rng = np.random.default_rng(1)
    for dumped in hlo_modules():
        if dumped.name == CRASHING:
            continue
        original = jax_modules()[dumped.name].hlo_text  # the StableHLO JAX handed XLA
        converted = xd.hlo_to_stablehlo(dumped.hlo_text)
        assert argument_types(converted) == argument_types(original)
        args = [rng.standard_normal(shape).astype(dtype) for shape, dtype in argument_types(original)]
        want = compile_module(original).execute([jax.device_put(a) for a in args])
        got = compile_module(converted).execute([jax.device_put(a) for a in args])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_the_converted_rank7_module_segfaults_when_run_and_the_others_run(tmp_path):
    import jaxlib

    if jaxlib.__version__ != "0.10.2":
        pytest.skip("the rank-7 reduction segfaults with jaxlib 0.10.2 (jax-ml/jax#40412)")
    for dumped in hlo_modules():
        done = run_in_subprocess(xd.hlo_to_stablehlo(dumped.hlo_text), tmp_path)
        if dumped.name == CRASHING:
            assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr[-2000:])
            # and still after a trip through HLO text (what XLA's own tools would be given)
            round_trip = xd.hlo_to_stablehlo(xd.stablehlo_to_hlo(xd.hlo_to_stablehlo(dumped.hlo_text)))
            again = run_in_subprocess(round_trip, tmp_path)
            assert again.returncode == -signal.SIGSEGV, (again.returncode, again.stderr[-2000:])
        else:
            assert done.returncode == 0 and "ran" in done.stdout, (dumped.name, done.stderr[-2000:])


def test_the_entry_is_main_whatever_the_hlo_calls_it():
    hlo = (DUMP / "module_0006.jit_pair_energy.before_optimizations.txt").read_text()
    renamed = hlo.replace("%main.2", "%my_entry.2")
    assert "ENTRY %my_entry.2" in renamed
    text = xd.hlo_to_stablehlo(renamed)
    assert "func.func public @main(" in text and "my_entry" not in text
    assert compile_module(text) is not None


def test_an_entry_not_named_main_is_renamed_and_a_private_main_moved_aside():
    """jaxlib's converter names the entry `main` itself (above); should it not, the entry is renamed."""
    from jaxlib.mlir import ir

    text = textwrap.dedent("""\
        module @m {
          func.func private @main(%arg0: tensor<f32>) -> tensor<f32> {
            %0 = stablehlo.negate %arg0 : tensor<f32>
            return %0 : tensor<f32>
          }
          func.func @entry(%arg0: tensor<f32>) -> tensor<f32> {
            %0 = call @main(%arg0) : (tensor<f32>) -> tensor<f32>
            return %0 : tensor<f32>
          }
        }
        """)
    with xd._context() as ctx:
        module = ir.Module.parse(text, ctx)
        xd._make_entry_main(module)
        renamed = str(module)
    assert "func.func public @main(" in renamed and "func.func private @main_1(" in renamed
    assert "call @main_1(" in renamed and "@entry" not in renamed
    assert compile_module(renamed) is not None


def test_bad_hlo_is_a_one_line_value_error():
    hlo = (DUMP / "module_0004.jit_norm.before_optimizations.txt").read_text()
    with pytest.raises(ValueError) as exc:
        xd.hlo_to_stablehlo(hlo.replace(" sqrt(", " squareroot("))
    assert "squareroot" in one_line(exc) and "was parsing" in one_line(exc)
    with pytest.raises(ValueError) as exc:
        xd.hlo_to_stablehlo("HloModule broken\n\nENTRY %main {\n")
    one_line(exc)
    with pytest.raises(ValueError) as exc:
        xd.hlo_to_stablehlo(jax_modules()["jit_norm"].hlo_text)
    assert "not HLO" in one_line(exc)


def test_optimized_hlo_is_refused():
    after = (DUMP / "module_0006.jit_pair_energy.cpu_after_optimizations.txt").read_text()
    assert xd.is_hlo_text(after)
    with pytest.raises(ValueError) as exc:
        xd.hlo_to_stablehlo(after)
    assert "is_scheduled=true" in one_line(exc) and "before_optimizations" in one_line(exc)


def test_large_constants_elided_in_a_dump_and_printed_in_full_by_stablehlo_to_hlo():
    import jax
    import jax.numpy as jnp

    table = np.arange(40, dtype=np.float32).reshape(8, 5)
    text = jax.jit(lambda x: x @ jnp.asarray(table)).lower(np.ones((2, 8), np.float32)).as_text()
    hlo = xd.stablehlo_to_hlo(text)
    assert xd.elided_constants(hlo) == [] and "39" in hlo
    # as a dump prints it (XLA elides constants above a few elements)
    dumped = "\n".join(re.sub(r"constant\(\{.*\}\)", "constant({...})", line) if "f32[8,5]" in line else line
                       for line in hlo.splitlines())
    assert len(xd.elided_constants(dumped)) == 1 and "constant({...})" in dumped
    converted = xd.hlo_to_stablehlo(dumped)
    assert "tensor<8x5xf32>" in converted and compile_module(converted) is not None


# --- StableHLO to HLO ----------------------------------------------------------------------------

def test_round_trip_keeps_the_operations():
    """StableHLO -> HLO -> StableHLO keeps every operation, except that jaxlib's exporter
    (`mlir_module_to_xla_computation`, as `Lowered.compiler_ir("hlo")` uses it) folds identity
    `broadcast_in_dim`s and reshapes that undo each other: jit_normalise has some (a reshape to
    1x3, an identity broadcast, a reshape back), and loses them on the first trip only."""
    import jax

    for dumped in hlo_modules():
        once = xd.hlo_to_stablehlo(dumped.hlo_text)
        hlo = xd.stablehlo_to_hlo(once)
        assert xd.is_hlo_text(hlo) and hlo.startswith(f"HloModule {dumped.name}")
        twice = xd.hlo_to_stablehlo(hlo)
        thrice = xd.hlo_to_stablehlo(xd.stablehlo_to_hlo(twice))
        assert op_names(thrice) == op_names(twice), dumped.name
        if dumped.name == "jit_normalise":
            folded = op_names(once) - op_names(twice)
            assert set(folded) == {"stablehlo.reshape", "stablehlo.broadcast_in_dim"}, folded
            assert not op_names(twice) - op_names(once)
            args = [np.random.default_rng(2).standard_normal(shape).astype(dtype) for shape, dtype in argument_types(once)]
            want, got = (compile_module(t).execute([jax.device_put(a) for a in args]) for t in (once, twice))
            np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-6, atol=1e-6)
        else:
            assert op_names(twice) == op_names(once), dumped.name
            assert sum(op_names(twice).values()) == sum(op_names(once).values())
        assert compile_module(twice) is not None


def test_stablehlo_to_hlo_of_a_jax_lowering():
    import jax
    import jax.numpy as jnp

    text = jax.jit(lambda x: jnp.cumsum(jnp.sin(x)) * 2.0).lower(jnp.ones(5)).as_text()
    hlo = xd.stablehlo_to_hlo(text)
    assert hlo.startswith("HloModule jit__lambda") and "sine(" in hlo
    back = xd.hlo_to_stablehlo(hlo)
    assert "stablehlo.sine" in back and compile_module(back) is not None
    with pytest.raises(ValueError) as exc:
        xd.stablehlo_to_hlo("module @m {\n  func.func public @main() -> tensor<f32> {\n")
    assert one_line(exc).startswith("the module does not convert to HLO")


# --- the user's source lines ---------------------------------------------------------------------

def test_source_lines_name_the_program():
    lines = {d.name: xd.source_lines(d.hlo_text) for d in hlo_modules()}
    assert [Path(line.rsplit(":", 1)[0]).name for line in lines[CRASHING]] == ["make_dump.py"] * 2
    source = MAKE_DUMP.read_text().splitlines()
    numbers = [int(line.rsplit(":", 1)[1]) for line in lines[CRASHING]]
    assert "jnp.sum(a * b, axis=3)" in source[numbers[0] - 1]
    assert "jax.jit(pair_energy)" in source[numbers[1] - 1]
    assert all(line and "make_dump.py" in line for name in NAMES for line in lines[name])
    assert any("loss" in source[int(line.rsplit(":", 1)[1]) - 1] for line in lines["jit_loss"])


def test_source_lines_leave_out_jax_and_installed_packages():
    hlo = textwrap.dedent('''\
        HloModule jit_f, entry_computation_layout={(f32[])->f32[]}

        FileNames
        1 "/home/me/train.py"
        2 "/usr/lib/python3.11/site-packages/flax/linen/module.py"
        3 "/home/me/jax/jax/_src/numpy/reductions.py"

        FunctionNames
        1 "step"

        FileLocations
        1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=1 end_column=5}
        2 {file_name_id=2 function_name_id=1 line=700 end_line=700 column=1 end_column=5}
        3 {file_name_id=3 function_name_id=1 line=40 end_line=41 column=1 end_column=5}
        4 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=5}

        StackFrames
        1 {file_location_id=1 parent_frame_id=1}

        ENTRY %main.1 (x.1: f32[]) -> f32[] {
          %x.1 = f32[] parameter(0), metadata={op_name="x"}
          ROOT %n = f32[] negate(%x.1), metadata={op_name="jit(f)/neg" source_file="/home/me/model.py" source_line=7}
        }
        ''')
    assert xd.source_lines(hlo) == ["/home/me/model.py:7", "/home/me/train.py:3", "/home/me/train.py:12"]
    assert xd.hlo_to_stablehlo(hlo).count("stablehlo.negate") == 1
    assert xd.source_lines("HloModule m\n") == []


# --- the program itself --------------------------------------------------------------------------

def test_make_dump_leaves_a_dump_with_the_crashing_module(tmp_path):
    import jaxlib

    dump = tmp_path / "dump"
    done = subprocess.run([sys.executable, str(MAKE_DUMP)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XLA_FLAGS": f"--xla_dump_to={dump}"})
    if jaxlib.__version__ == "0.10.2":
        assert done.returncode == -signal.SIGSEGV, done.stderr[-2000:]
    assert "loss" in done.stdout
    assert xd.looks_like_dump(dump)
    modules = [d for d in xd.dump_modules(dump) if d.is_hlo]
    assert [d.name for d in modules] == NAMES
    crashing = modules[-1]
    fixture = (DUMP / crashing.path.name).read_text()  # the fixture is what the program dumps (paths aside)
    assert xd.hlo_to_stablehlo(crashing.hlo_text) == xd.hlo_to_stablehlo(fixture)
    assert any(line.endswith("make_dump.py:22") for line in xd.source_lines(crashing.hlo_text))
