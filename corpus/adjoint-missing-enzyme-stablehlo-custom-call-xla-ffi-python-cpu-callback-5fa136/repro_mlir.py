# Reproducer for: Enzyme-JAX: no adjoint for Python callbacks (`jax.pure_callback`, `jax.debug.print`: custom call `xla_ffi_python_cpu_callback`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=xla_ffi_python_cpu_callback
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 2 -> 2 operations, pipeline 78 -> 1 passes, in 6 s (32 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]>
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {operand_layouts = [dense<> : tensor<0xindex>], result_layouts = [dense<> : tensor<0xindex>]} : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
