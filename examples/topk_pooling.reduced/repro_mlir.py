# Reproducer for: Enzyme-JAX: no adjoint for `chlo.top_k`
# Signature: adjoint-missing: source=enzyme op=chlo.top_k
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 4 -> 1 operations, pipeline 78 -> 1 passes, in 15 s (40 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>) -> tensor<1xf32> {
    %values, %indices = chlo.top_k(%arg0, k = 1) : tensor<1xf32> -> (tensor<1xf32>, tensor<1xi32>)
    return %values : tensor<1xf32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
