# Reproducer for: Enzyme-JAX: no adjoint for `stablehlo.custom_call` (`lapack_sorgqr_ffi`)
# Signature: adjoint-missing: source=enzyme op=stablehlo.custom_call target=lapack_sorgqr_ffi
# Run: python repro_mlir.py   (it runs Enzyme-JAX's pass pipeline on the module)
# Reduced by reducer from the Enzyme MLIR dump of repro.py: 6 -> 1 operations, pipeline 78 -> 1 passes, in 6 s (34 candidates tested).
from enzyme_ad.jax import enzyme_call

PIPELINE = 'enzyme-wrap{infn=main argTys=enzyme_active,enzyme_active}'
MODULE = r'''
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1x1xf32>, %arg1: tensor<1xf32>) {
    %0 = stablehlo.custom_call @lapack_sorgqr_ffi(%arg0, %arg1) {backend_config = "", operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<1x1xf32>, tensor<1xf32>) -> tensor<1x1xf32>
    return
  }
}
'''

# Raises ValueError with MLIR's diagnostics when the pipeline fails.
enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)
print("the pipeline ran without error")
