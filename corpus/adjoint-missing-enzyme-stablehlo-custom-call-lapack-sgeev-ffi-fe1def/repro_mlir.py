# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.custom_call` (`lapack_sgeev_ffi`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sgeev_ffi
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 21 -> 1 operations, pipeline 78 -> 1 passes, in 7 s (35 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main argTys=enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1x1xf32>) {
    %0:5 = stablehlo.custom_call @lapack_sgeev_ffi(%arg0) {backend_config = "", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<1x1xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1x1xcomplex<f32>>, tensor<1x1xcomplex<f32>>, tensor<i32>)
    return
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
