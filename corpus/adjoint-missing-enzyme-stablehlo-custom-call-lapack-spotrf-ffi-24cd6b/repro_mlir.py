# Reproducer for: Enzyme-JAX: no adjoint for the LAPACK Cholesky custom call `lapack_spotrf_ffi` (`jnp.linalg.cholesky`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_spotrf_ffi
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 36 -> 1 operations, pipeline 78 -> 1 passes, in 6 s (56 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1x1xf32>) -> tensor<1x1xf32> {
    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<i32>)
    return %0#0 : tensor<1x1xf32>
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
