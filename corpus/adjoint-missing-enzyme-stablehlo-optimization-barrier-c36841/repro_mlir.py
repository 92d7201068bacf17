# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.optimization_barrier`
# Signature: adjoint-missing: source=enzyme op=stablehlo.optimization_barrier
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 1 -> 1 operations, pipeline 78 -> 1 passes, in 4 s (30 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}'
MODULE = r'''
module @jit_optimization_barrier attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.optimization_barrier %arg0 : tensor<f32>
    return %0 : tensor<f32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
