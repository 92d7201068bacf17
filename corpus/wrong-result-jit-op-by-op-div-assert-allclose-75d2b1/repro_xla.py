# Reproducer for: XLA: compiled result disagrees with the same module without XLA pass `algsimp` (`function`)
# Signature: wrong-result: source=xla reference=without-pass xla-pass=algsimp op=function
# Run: python repro_xla.py   (it compiles the module with XLA twice, as XLA compiles it by default and as the reference, runs both on the same inputs and compares the results)
# Reduced by reducer from the module XLA compiled for repro.py (module_0002.jit__lambda): 2 -> 2 operations, in 2 s (15 candidates tested).
import jax
import jax.extend.backend
import numpy as np
from jaxlib import xla_client

MODULE = r'''
module @jit__lambda {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.divide %arg0, %arg0 : tensor<f32>
    %1 = stablehlo.divide %0, %arg0 : tensor<f32>
    return %1 : tensor<f32>
  }
}
'''
with np.load('repro_xla_inputs.npz') as saved:  # the arguments the program ran the module with
    ARGS = [saved[k] for k in saved.files]


def run(**xla_options):
    """MODULE compiled by XLA for the default device with `xla_options` (as XLA_FLAGS sets them), run on ARGS."""
    backend = jax.extend.backend.get_backend()
    options = xla_client.CompileOptions()
    options.env_option_overrides = list(xla_options.items())
    exe = backend.compile_and_load(MODULE, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                   compile_options=options)
    return [np.asarray(o) for o in exe.execute([jax.device_put(a, backend.devices()[0]) for a in ARGS])]


RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}  # times max|want|
got, want = run(), run(xla_disable_hlo_passes='algsimp')  # against XLA without the pass `algsimp`
for k, (g, w) in enumerate(zip(got, want)):  # integers and booleans exactly
    tol = 0 if w.dtype.kind in "biu" else RTOL.get(w.dtype.name, 1e-4) * abs(w[np.isfinite(w)]).max(initial=0) + 1e-6
    np.testing.assert_allclose(g, w, rtol=0, atol=float(tol), err_msg=f"output {k}")
print("the results agree")
