"""Errors JAX raises from a transformation rule, at the traced level: callback primitives
(`jax.pure_callback`, `io_callback`) are encoded with their host function (kept by name when a library
defines it, else a stand-in of the declared result shapes), so `jax.vmap` of a callback that cannot be
batched is captured, replayed and written back as a standalone script that fails the same way."""
import json
import logging
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
from jax.experimental import io_callback

from oracles.jax_error import JaxError
from oracles.outcome import RunResult
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.as_script import emit
from reducer.levels.jaxpr.params import decode_params, encode_param, flat_values

X = jnp.arange(3.0)


def own_cosine(a):  # defined by this test module, not an installed library: replaced by a stand-in
    return np.cos(a)


def spec_of(fun, *args, transforms=()):
    closed = jax.make_jaxpr(fun)(*args)
    return jp.dumps({"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
                     "args": [{"shape": list(np.shape(a)), "dtype": str(a.dtype), "values": flat_values(a)}
                              for a in args]})


def callbacks(x):
    y = jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    z = jax.pure_callback(own_cosine, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")
    io_callback(lambda a: None, None, x, ordered=True)
    io_callback(logging.debug, None, x)  # a library function called for its effect
    return y + z


def run_script(text: str, tmp_path) -> subprocess.CompletedProcess:
    (tmp_path / "repro.py").write_text(text)
    return subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def signature(done: subprocess.CompletedProcess):
    return JaxError().classify(RunResult(done.returncode, done.stdout, done.stderr, 0.0))


def host_of(fun, n_args=1):
    from jax._src.callback import _FlatCallback

    tree = jax.tree_util.tree_structure((tuple(range(n_args)), {}))
    return encode_param(_FlatCallback(fun, tree))


def test_a_library_host_function_is_kept_by_name_and_the_scripts_own_is_not():
    assert host_of(np.sin) == {"host": "numpy:sin"}
    assert host_of(scipy.special.logsumexp) == {"host": "scipy.special._logsumexp:logsumexp"}
    assert host_of(own_cosine) == {"host": None}  # a module beside the program, not an installed library
    assert host_of(lambda a: a) == {"host": None}
    assert host_of(np.sin, n_args=2)["host"] == "numpy:sin"
    from jax._src.callback import _FlatCallback  # a pytree argument: the flat call would differ

    nested = jax.tree_util.tree_structure((((0, 1),), {}))
    assert encode_param(_FlatCallback(np.add, nested)) == {"host": None}


def test_a_stand_in_returns_zeros_of_the_declared_results():
    from reducer.levels.jaxpr.params import HostCallback

    results = (jax.core.ShapedArray((2,), jnp.float32), jax.core.ShapedArray((), jnp.int32))
    params = decode_params({"callback": {"host": None}, "result_avals": {"t": [encode_param(r) for r in results]}})
    outs = params["callback"](np.ones(2, np.float32))
    assert [(o.shape, o.dtype) for o in outs] == [((2,), np.float32), ((), np.int32)]
    assert not np.any(outs[0])
    same = HostCallback(None, results)  # equal parameters: JAX's caches see one primitive call
    assert params["callback"] == same and hash(params["callback"]) == hash(same)


@pytest.mark.slow
def test_callbacks_round_trip_and_write_back_in_both_forms(tmp_path):
    spec = spec_of(callbacks, X, transforms=[{"t": "jit"}])
    eqns = jp.loads(spec)["jaxpr"]["eqns"]
    assert [e["params"]["callback"] for e in eqns if "callback" in e["params"]] == [
        {"host": "numpy:sin"}, {"host": None}, {"host": None}, {"host": "logging:debug"}]
    assert np.allclose(jp.run(spec), np.sin(X))  # the stand-in for own_cosine adds zeros
    public, _ = emit(jp.parse(spec))
    assert "jax.pure_callback(sin, jax.ShapeDtypeStruct((3,), jnp.float32), a)" in public
    assert "\n    io_callback(lambda *xs: None, None, a, ordered=True)\n" in public
    assert "\n    io_callback(lambda *xs: [debug(*xs), None][1], None, a)\n" in public
    assert ".bind(" not in public
    bound, _ = emit(jp.parse(spec), bind_all=True)
    assert "pure_callback_p.bind(" in bound and "io_callback_p.bind(" in bound
    for text in (public, bound):
        done = run_script(text, tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == str(jp.run(spec))


@pytest.mark.slow
@pytest.mark.parametrize("line, message", [
    ("x = jax.pure_callback(np.tanh, jax.ShapeDtypeStruct(x.shape, x.dtype), x)",
     "vmap is only supported for the pure_callback primitive"),
    ("io_callback(log, None, x, ordered=True)", "Cannot `vmap` ordered IO callback"),
])
def test_vmap_of_a_callback_is_captured_and_its_written_back_script_fails_the_same_way(line, message, tmp_path):
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(f"""\
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.experimental import io_callback


        def log(x):
            print("example", x)


        def per_example(x):
            {line}
            return jnp.sum(x) * 2.0


        print(jax.vmap(per_example)(jnp.ones((4, 3))))
        """))
    original = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=120)
    assert message in original.stderr
    out = tmp_path / "captured.json"
    subprocess.run([sys.executable, "-m", "reducer.levels.jaxpr.capture", str(program), str(out)],
                   cwd=tmp_path, capture_output=True, timeout=300)
    captured = json.loads(out.read_text())
    assert captured["specs"], captured["notes"]
    spec = jp.loads(captured["specs"][0])
    assert [t["t"] for t in spec["transforms"]] == ["vmap"]
    with pytest.raises(Exception, match=message.replace("`", ".")):
        jp.run(captured["specs"][0])
    text, _ = emit(jp.parse(captured["specs"][0]))
    done = run_script(text, tmp_path)
    assert signature(done) == signature(original) and signature(done) is not None
