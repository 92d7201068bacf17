# Reproducer for: Enzyme-JAX: no adjoint for the `ApproxTopK` custom call (`jax.lax.approx_max_k`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=ApproxTopK
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 8 -> 1 operations, pipeline 78 -> 1 passes, in 5 s (55 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_const argTys=enzyme_active,enzyme_const,enzyme_active,enzyme_const}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>, %arg1: tensor<1xi32>, %arg2: tensor<f32>, %arg3: tensor<i32>) -> tensor<1xi32> {
    %0:2 = stablehlo.custom_call @ApproxTopK(%arg0, %arg1, %arg2, %arg3) : (tensor<1xf32>, tensor<1xi32>, tensor<f32>, tensor<i32>) -> (tensor<1xf32>, tensor<1xi32>)
    return %0#1 : tensor<1xi32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
