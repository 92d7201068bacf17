// enzyme-wrap{infn=main argTys=enzyme_active,enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1x1xf32>, %arg1: tensor<1xf32>) {
    %0 = stablehlo.custom_call @lapack_sorgqr_ffi(%arg0, %arg1) {backend_config = "", operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<1x1xf32>, tensor<1xf32>) -> tensor<1x1xf32>
    return
  }
}
