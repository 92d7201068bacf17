# Reproducer for: Enzyme-JAX: no adjoint for Python callbacks (`jax.pure_callback`, `jax.debug.print`: custom call `xla_ffi_python_cpu_callback`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=xla_ffi_python_cpu_callback
# Run: python repro.py
# Versions: jax 0.10.2, jaxlib 0.10.2, enzyme-ad 0.0.16, Python 3.11.7, Linux-6.18.44-fc-v595-x86_64-with-glibc2.36
# Reduced by reducer from callback_regulariser.py: 203 -> 51 tokens in 65 s (213 candidates tested).
import jax
from enzyme_ad.jax import enzyme_jax_ir
jax.jit(jax.grad(enzyme_jax_ir()(lambda w: jax.pure_callback(None, jax.ShapeDtypeStruct((), jax.numpy.float32), w))))(1.0)
