# Reproducer for: SIGSEGV on cpu at libjax_common.so+0xd574df8 while the compiled module runs (XLA pass `dot-library-rewriter`)
# Signature: crash: platform=cpu how=signal detail=SIGSEGV phase=execute native=libjax_common.so+0xd574df8 < libjax_common.so+0xd574d7e xla-pass=dot-library-rewriter
# Run: python repro.py   (it compiles the module with XLA for this machine's default platform and runs it on fixed inputs)
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36
# Reduced by reducer from moments_rank7.mlir: 18 -> 3 operations, in 8 s (48 candidates tested).
import jax
import jax.extend.backend
import numpy as np
from jaxlib import xla_client

MODULE = r'''
module @jit_moments attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<2x1x2x2x8x8x8xf32>, %arg1: tensor<2x1x2x2x8x8x8xf32>, %arg2: tensor<f32>) -> tensor<2x1x2x8x8x8xf32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<2x1x2x2x8x8x8xf32>
    %1 = stablehlo.reduce(%0 init: %arg2) applies stablehlo.add across dimensions = [3] : (tensor<2x1x2x2x8x8x8xf32>, tensor<f32>) -> tensor<2x1x2x8x8x8xf32>
    return %1 : tensor<2x1x2x8x8x8xf32>
  }
}
'''
rng = np.random.default_rng(0)
ARGS = [rng.standard_normal(shape).astype(np.float32) for shape in [(2, 1, 2, 2, 8, 8, 8), (2, 1, 2, 2, 8, 8, 8), ()]]


def run(**xla_options):
    """MODULE compiled by XLA for the default device with `xla_options` (as XLA_FLAGS sets them), run on ARGS."""
    backend = jax.extend.backend.get_backend()
    options = xla_client.CompileOptions()
    options.env_option_overrides = list(xla_options.items())
    exe = backend.compile_and_load(MODULE, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                   compile_options=options)
    return [np.asarray(o) for o in exe.execute([jax.device_put(a, backend.devices()[0]) for a in ARGS])]


outputs = run()  # XLA crashes here, or raises an error status
print("XLA compiled and ran the module:", ", ".join(f"{o.dtype}{list(o.shape)}" for o in outputs))
