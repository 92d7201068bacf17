# Reproducer for: Enzyme-JAX: no reverse-mode adjoint for `stablehlo.reduce_window` (`jnp.cumprod`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.reduce_window
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 10 -> 1 operations, pipeline 78 -> 1 passes, in 11 s (50 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active,enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>, %arg1: tensor<f32>) -> tensor<1xf32> {
    %0 = "stablehlo.reduce_window"(%arg0, %arg1) <{padding = dense<[[1, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 2>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      stablehlo.return %arg2 : tensor<f32>
    }) : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
    return %0 : tensor<1xf32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
