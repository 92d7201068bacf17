# Reproducer for: XLA: compiled result disagrees with the same module without XLA pass `dot-library-rewriter` (`function`)
# Signature: wrong-result: source=xla reference=without-pass xla-pass=dot-library-rewriter op=function
# Run: python repro.py   (it compiles the module with XLA twice, as XLA compiles it by default and as the reference, runs both on the same inputs and compares the results)
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36
# Reduced by reducer from pointcloud_miscompile.mlir: 30 -> 3 operations, in 10 s (58 candidates tested).
import jax
import jax.extend.backend
import numpy as np
from jaxlib import xla_client

MODULE = r'''
module @jit_penalty attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<32769x3xf32>, %arg1: tensor<3x3xf32>, %arg2: tensor<f32>) -> tensor<32769xf32> {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x3xf32>, tensor<32769x3xf32>) -> tensor<3x32769xf32>
    %1 = stablehlo.reduce(%0 init: %arg2) applies stablehlo.add across dimensions = [0] : (tensor<3x32769xf32>, tensor<f32>) -> tensor<32769xf32>
    return %1 : tensor<32769xf32>
  }
}
'''
rng = np.random.default_rng(0)
ARGS = [rng.standard_normal(shape).astype(np.float32) for shape in [(32769, 3), (3, 3), ()]]


def run(**xla_options):
    """MODULE compiled by XLA for the default device with `xla_options` (as XLA_FLAGS sets them), run on ARGS."""
    backend = jax.extend.backend.get_backend()
    options = xla_client.CompileOptions()
    options.env_option_overrides = list(xla_options.items())
    exe = backend.compile_and_load(MODULE, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                   compile_options=options)
    return [np.asarray(o) for o in exe.execute([jax.device_put(a, backend.devices()[0]) for a in ARGS])]


RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}  # times max|want|
got, want = run(), run(xla_disable_hlo_passes='dot-library-rewriter')  # against XLA without the pass `dot-library-rewriter`
for k, (g, w) in enumerate(zip(got, want)):  # integers and booleans exactly
    tol = 0 if w.dtype.kind in "biu" else RTOL.get(w.dtype.name, 1e-4) * abs(w[np.isfinite(w)]).max(initial=0) + 1e-6
    np.testing.assert_allclose(g, w, rtol=0, atol=float(tol), err_msg=f"output {k}")
print("the results agree")
