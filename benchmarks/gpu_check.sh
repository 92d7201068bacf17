#!/usr/bin/env bash
# The checks of `--platform gpu` that need an NVIDIA GPU, in one go (a few minutes): run it from the
# repository root on a machine with a GPU, `bash benchmarks/gpu_check.sh`. It installs nothing unless
# wheels were carried into .whl/ (then they go to /tmp/site first); it runs `reducer check --platform gpu`
# on four small programs and prints each one's signature next to what it should be, then reduces a
# module that fails in XLA on the GPU at the IR level. With $OUT set,
# the outputs are kept there too.
#
# jax: the project pins jax and jaxlib 0.10.2, whose CUDA backend is the plugin pair of the same version,
# jax-cuda12-plugin + jax-cuda12-pjrt (CUDA 12 libraries) or jax-cuda13-plugin + jax-cuda13-pjrt (CUDA 13,
# the nvidia-*-cu13 libraries); all four are on PyPI at 0.10.2. A machine that has another jax (the lent
# H200 image has jax 0.11.2 with the CUDA 13 plugin) is used as it is when no wheels were carried: the
# versions are printed first, so that the results say what they were measured with.
set -uo pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-}
if compgen -G ".whl/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== what JAX sees"
$PY - <<'EOF' || exit 1
import jax, jaxlib
print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "| default backend:", jax.default_backend(),
      "| devices:", jax.devices(), "| cpu:", jax.devices("cpu"))
if jax.default_backend() != "gpu":
    raise SystemExit("no GPU backend here: nothing to check")
EOF
# the sandbox limits a candidate's address space to 70% of the memory (reduce.default_memory_mb);
# CUDA maps the GPU's memory (XLA preallocates 75% of it) into the address space: does it start and
# compute under that limit, as a candidate must?
limit_kb=$(awk '/MemTotal/ {print int($2 * 0.7)}' /proc/meminfo)
echo "== the GPU under an address-space limit of ${limit_kb} kB (what candidates get)"
(ulimit -v "$limit_kb"; $PY -c "import jax.numpy as jnp; print(jnp.ones(3).sum(), jnp.ones(3).devices())" 2>&1 | tail -2)

# 1. a result only the GPU gives, under jit and op by op alike (as a GPU-only miscompile does):
#    expected: wrong-result, reference=cpu
cat > "$work/gpu_only_result.py" <<'EOF'
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def scaled(x):
    return lax.platform_dependent(x, cpu=lambda x: x * 2.0, default=lambda x: x * 3.0)


got = jax.jit(scaled)(jnp.arange(4.0))
assert np.allclose(got, np.arange(4.0) * 2.0), f"unexpected {got}"
EOF
# 2. float32 matmul in TF32 (JAX's default on recent GPUs) compared too tightly by the program itself:
#    expected: not a wrong result (op by op on the GPU and on the CPU both agree with jit, within tolerance)
cat > "$work/tf32_matmul.py" <<'EOF'
import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
a, b = rng.standard_normal((256, 4096)).astype(np.float32), rng.standard_normal((4096, 256)).astype(np.float32)
got = jax.jit(jnp.matmul)(a, b)
assert np.allclose(got, a.astype(np.float64) @ b, rtol=1e-6, atol=1e-6), "matmul is off"
EOF
# 3. the recorded RESOURCE_EXHAUSTED program (tests/data/gpu/oom_a.txt): 160 GB on one GPU
#    expected: crash, platform=gpu, how=xla-status, RESOURCE_EXHAUSTED
cat > "$work/oom.py" <<'EOF'
import jax.numpy as jnp

x = jnp.ones((200_000, 200_000))
print(x.sum())
EOF
# 4. jaxlib 0.10.2's CPU miscompile (jax-ml/jax#39103) run on the GPU: expected there "does not fail"
cp tests/programs/jit_miscompare.py "$work/jit_miscompare.py"

check() {  # NAME ORACLE
    echo "== reducer check --platform gpu --oracle $2 $1.py"
    local started=$SECONDS
    timeout 240 $PY -m reducer.cli check "$work/$1.py" --platform gpu --oracle "$2" --json >"$work/$1.json" 2>"$work/$1.err"
    echo "exit $? in $((SECONDS - started)) s"
    cat "$work/$1.json" "$work/$1.err"
    [ -n "$OUT" ] && cp "$work/$1.json" "$work/$1.err" "$OUT/" 2>/dev/null
    return 0
}
check gpu_only_result wrong-result
check tf32_matmul wrong-result
check oom auto
check jit_miscompare auto

# 5. the IR level on a module that fails in XLA on the GPU: a 160 GB intermediate between a few other
#    operations, lowered on the GPU machine itself, then `reducer reduce --platform gpu`:
#    expected: crash, how=xla-status, RESOURCE_EXHAUSTED, phase=execute, reduced to the allocation alone
$PY - "$work/oom_module.mlir" <<'EOF2'
import sys

import jax
import jax.numpy as jnp


def f(x, scale):
    big = jnp.broadcast_to(x[:, None], (200_000, 200_000)) * scale  # returned: it must be allocated
    return big, jnp.tanh(jnp.sum(big, axis=1)) + jnp.mean(x)


open(sys.argv[1], "w").write(jax.jit(f).lower(jnp.ones(200_000), jnp.float32(2.0)).as_text())
EOF2
echo "== reducer reduce --platform gpu oom_module.mlir"
started=$SECONDS
timeout 300 $PY -m reducer.cli reduce "$work/oom_module.mlir" --platform gpu --out "$work/oom_module" --json \
    --quiet --max-time 150 >"$work/oom_module.json" 2>"$work/oom_module.err"
echo "exit $? in $((SECONDS - started)) s"
cat "$work/oom_module.json"; tail -3 "$work/oom_module.err"; cat "$work/oom_module/repro.mlir" 2>/dev/null
[ -n "$OUT" ] && cp -r "$work/oom_module" "$work/oom_module.json" "$OUT/" 2>/dev/null
exit 0
