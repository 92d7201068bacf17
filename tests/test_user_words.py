"""Results in the user's words: equations record the public call the program made (`"src"`), and the
write-back spells them as that call (`jnp.fft.rfft(a)`, `jax.ops.segment_max(a, b, num_segments=4)`)
when the primitive and its parameters are that call's plain use; the script computes what the spec
does, and what today's spelling (the spec without `src`) does."""
import subprocess
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.as_script import emit
from reducer.levels.jaxpr.codec import Encoder
from reducer.levels.jaxpr.model import Spec
from reducer.levels.jaxpr.passes.inline_calls import InlineCalls
from reducer.levels.source.representation import tokens


def spec_of(fun, *args, transforms=()):
    from reducer.levels.jaxpr.params import flat_values

    closed = jax.make_jaxpr(fun)(*args)
    leaves = jax.tree_util.tree_leaves(args)
    return jp.dumps({"transforms": list(transforms), "jaxpr": Encoder().closed(closed),
                     "args": [{"shape": list(np.shape(a)), "dtype": str(a.dtype), "values": flat_values(a)}
                              for a in leaves]})


def without_src(program: str) -> Spec:
    """The spec of `program` as it was written before equations recorded their public call."""
    spec = jp.parse(program)
    for _, j in spec.jaxpr.walk():
        for e in j.eqns:
            e.src = None
    return spec


RUN = "import os, runpy, sys\nfor d in sys.argv[1:]:\n    os.chdir(d)\n    runpy.run_path('repro.py')\n"


def results(scripts: list, tmp_path) -> list:
    """For each (text, arrays) script, the leaves of what it prints (saved instead of printed); the
    scripts run one after the other in one fresh interpreter."""
    dirs = []
    for k, (text, arrays) in enumerate(scripts):
        head, _, call = text.rstrip("\n").rpartition("\n")
        assert call.startswith("print(")
        dirs.append(Path(tempfile.mkdtemp(prefix=f"script{k}-", dir=tmp_path)))
        (dirs[-1] / "repro.py").write_text(f"{head}\nimport numpy as np\nnp.savez('out.npz', "
                                           f"*jax.tree_util.tree_leaves({call[len('print('):-1]}))\n")
        if arrays:
            np.savez(dirs[-1] / "inputs.npz", **arrays)
    done = subprocess.run([sys.executable, "-c", RUN, *map(str, dirs)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = []
    for d in dirs:
        with np.load(d / "out.npz") as saved:
            out.append([saved[f"arr_{k}"] for k in range(len(saved.files))])
    return out


def same(got: list, want) -> None:
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(want)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def check(program: str, tmp_path, present=(), absent=()) -> str:
    """The script in the user's words: it has the calls `present`, none of `absent`, and computes what
    the spec and today's spelling of it (the spec without `src`) do."""
    text, arrays = emit(jp.parse(program))
    for word in present:
        assert word in text, text
    for word in absent:
        assert word not in text, text
    want = jp.run(program)
    for got in results([(text, arrays), emit(without_src(program))], tmp_path):
        same(got, want)
    return text


X = jnp.linspace(-1.0, 2.0, 8)
M = jnp.arange(18.0).reshape(6, 3) - 4.0
IDS = jnp.asarray([0, 2, 1, 2, 0, 3])


def ffts(x):
    spectrum = jnp.fft.rfft(x)
    return spectrum, jnp.fft.irfft(spectrum * 2.0), jnp.fft.fft(x), jnp.fft.ifft(jnp.fft.fft(x) + 1.0)


def segments(m, ids):
    return (jax.ops.segment_max(m, ids, num_segments=5), jax.ops.segment_sum(m, ids, 4),
            jax.ops.segment_min(m[:, 0], ids, num_segments=4, indices_are_sorted=True))


def test_equations_record_the_public_call_they_come_from():
    spec = jp.parse(spec_of(lambda x: jnp.sin(jnp.fft.rfft(x)), X))
    found = {(e.primitive, e.src) for _, j in spec.jaxpr.walk() for e in j.eqns}
    assert ("jit", "jnp.fft.rfft") in found and ("fft", "jnp.fft.rfft") in found  # the jit's body inherits
    assert ("sin", None) in found  # a method or operator of the program's own: nothing recorded
    spec = jp.parse(spec_of(segments, M, IDS))
    assert {e.src for e in spec.jaxpr.eqns if e.primitive.startswith("scatter")} == {
        "jax.ops.segment_max", "jax.ops.segment_sum", "jax.ops.segment_min"}
    assert all(e.src is None for _, j in spec.jaxpr.walk() for e in j.eqns if e.primitive in ("max", "add"))
    program = spec_of(ffts, X)
    assert jp.parse(program).to_json() == program and jp.well_formed(jp.parse(program))


@pytest.mark.parametrize("jit", [False, True])
def test_fft_functions_come_back_as_their_jnp_fft_calls(tmp_path, jit):
    text = check(spec_of(jax.jit(ffts) if jit else ffts, X), tmp_path,
                 present=("jnp.fft.rfft(", "jnp.fft.irfft(", "jnp.fft.fft(", "jnp.fft.ifft("),
                 absent=("lax.fft(", "FftType", "lax.pad("))
    assert "def inner" in text if jit else "def inner" not in text  # the library's own jits are gone


def test_irfft_of_a_given_length_and_fft_of_a_matrix(tmp_path):
    def f(x, m):
        spectrum = jnp.fft.rfft(x)
        return (jnp.fft.irfft(spectrum, n=9), jnp.fft.irfft(spectrum, n=8), jnp.fft.irfft(spectrum, n=12),
                jnp.fft.fft(m))

    text = check(spec_of(f, X, M), tmp_path, present=("jnp.fft.irfft(", ", n=9)", "jnp.fft.fft("),
                 absent=("lax.fft(", ", n=8)"))
    assert text.count("lax.pad(") == 1  # n=12 pads the spectrum: that pad is kept, spelled as it is
    assert text.count("jnp.fft.irfft(") == 3


def test_fft_functions_of_several_axes(tmp_path):
    def f(m):
        return (jnp.fft.fft2(m), jnp.fft.irfft2(jnp.fft.rfft2(m)), jnp.fft.ifftn(jnp.fft.fftn(m)),
                jnp.fft.rfftn(m, axes=(1,)), jnp.fft.irfftn(jnp.fft.rfftn(m), s=(6, 3)))

    check(spec_of(f, M), tmp_path, present=("jnp.fft.fft2(", "jnp.fft.irfft2(", "jnp.fft.ifftn(", "axes=(-1,)",
                                            "s=(6, 3)"), absent=("lax.fft(", "lax.pad("))


def test_inlined_library_jits_keep_their_public_call(tmp_path):
    program = spec_of(lambda x: jnp.fft.irfft(jnp.fft.rfft(x), n=8), X)
    for _ in range(4):  # inline every inner jit, as the reduction does
        found = list(InlineCalls().candidates(program))
        if not found:
            break
        program = found[0]
    assert all(e["p"] != "jit" for e in jp.loads(program)["jaxpr"]["eqns"])
    check(program, tmp_path, present=("jnp.fft.rfft(", "jnp.fft.irfft("),
          absent=("lax.fft(", "lax.pad(", "convert_element_type"))


@pytest.mark.parametrize("jit", [False, True])
def test_segment_reductions_come_back_as_jax_ops_calls(tmp_path, jit):
    text = check(spec_of(jax.jit(segments) if jit else segments, M, IDS), tmp_path,
                 present=("jax.ops.segment_max(", "num_segments=5", "jax.ops.segment_sum(", "num_segments=4",
                          "jax.ops.segment_min(", "indices_are_sorted=True"),
                 absent=("scatter", "broadcast_in_dim", "inf"))
    assert text.count("jax.ops.segment_") == 3


def test_under_grad_the_primal_call_is_spelled_and_derivatives_fall_back(tmp_path):
    def loss(x, m):
        return jnp.sum(jnp.fft.rfft(x).real) + jnp.sum(jax.ops.segment_max(m, IDS, num_segments=4) ** 2)

    grads = [{"t": "grad", "argnums": [0, 1]}]
    check(spec_of(loss, X, M, transforms=grads), tmp_path, present=("jnp.fft.rfft(", "jax.ops.segment_max(", "jax.grad("),
          absent=("lax.fft(", "scatter"))

    def traced(x, m):  # (the transpose of an rfft is written back with a lax.dynamic_update_slice that fails)
        return jnp.sum(jnp.abs(jnp.fft.fft(x))) + jnp.sum(jax.ops.segment_max(m, IDS, num_segments=4) ** 2)

    # the derivative traced into the jaxpr: the primal calls in the user's words, the transposes as they are
    text = check(spec_of(jax.grad(traced, argnums=(0, 1)), X, M), tmp_path,
                 present=("jnp.fft.fft(", "jax.ops.segment_max("))
    assert text.count("jax.ops.segment_max(") == 1 and "lax.scatter_add(" in text  # its derivative's scatters
    assert text.count("jnp.fft.fft(") == 2  # the transpose of an fft is an fft: spelled as one


def test_a_scatter_that_is_not_the_plain_segment_pattern_keeps_todays_spelling(tmp_path):
    def f(m, ids):
        return jax.ops.segment_sum(m, ids, 4), jax.ops.segment_sum(m, ids, 4, bucket_size=2)

    spec = jp.loads(spec_of(f, M, IDS))
    scatters = [e for _, j in jp.jaxprs(spec["jaxpr"]) for e in j["eqns"] if e["p"] == "scatter-add"]
    fill = next(e for e in spec["jaxpr"]["eqns"] if e["out"][0][0] == scatters[0]["in"][0])
    fill["in"][0]["lit"] = 1.0  # an operand that is not the identity: segment_sum would drop it
    text = check(jp.dumps(spec), tmp_path, present=("lax.scatter_add(",))
    assert "lax.broadcast_in_dim(1.0" in text


def test_bind_all_and_other_programs_are_unchanged():
    program = spec_of(ffts, X)
    bound, _ = emit(jp.parse(program), bind_all=True)
    assert "jnp.fft" not in bound and "fft_p.bind(" in bound
    plain = spec_of(lambda x: jnp.sin(x) * 2.0, X)
    assert emit(jp.parse(plain)) == emit(without_src(plain))


def test_the_user_words_are_shorter():
    program = spec_of(lambda m, ids: jax.ops.segment_max(m, ids, num_segments=5) + jnp.fft.rfft(m).real.sum(), M, IDS)
    words, _ = emit(jp.parse(program))
    before, _ = emit(without_src(program))
    assert tokens(words) < 0.8 * tokens(before)


def test_a_jitted_public_function_comes_back_as_its_call_and_is_not_inlined(tmp_path):
    """`jnp.sinc` (its custom rule's body as the captured program holds it) and `jnp.linalg.norm`
    stage a `jit` of their name: written back as the call, and kept one by inline-calls; a `jit` of
    that name doing something else, or the call with other than its defaults, is spelled out."""
    program = spec_of(lambda x, m: (jnp.sinc(x), jnp.linalg.norm(m), jnp.linalg.norm(m, axis=-1)), X, M)
    text = check(program, tmp_path, present=("jnp.sinc(", "jnp.linalg.norm("))
    assert text.count("jnp.linalg.norm(") == 1 and "def inner" in text  # the norm of each row is spelled out
    offered = InlineCalls().points(jp.parse(program))
    assert offered and all(jp.parse(program).jaxpr.at(path).eqns[i].params.get("name") != "sinc" and
                           path[:1] != ((0, 0),) for path, i in offered)  # nothing of or in `jnp.sinc`

    @jax.jit
    def sinc(x):  # a program's own function of that name
        return jnp.cos(x)

    check(spec_of(lambda x: sinc(x), X), tmp_path, absent=("jnp.sinc(",))
    check(spec_of(lambda x: (jax.nn.leaky_relu(x), jax.nn.leaky_relu(x, 0.2)), X), tmp_path)
    assert emit(jp.parse(spec_of(lambda x: jax.nn.leaky_relu(x, 0.2), X)))[0].count("leaky_relu(") == 0
    assert emit(jp.parse(spec_of(jax.nn.leaky_relu, X)))[0].count("jax.nn.leaky_relu(") == 1
