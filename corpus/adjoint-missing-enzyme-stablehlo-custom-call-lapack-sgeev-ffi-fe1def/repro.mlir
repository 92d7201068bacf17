// enzyme-wrap{infn=main argTys=enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1x1xf32>) {
    %0:5 = stablehlo.custom_call @lapack_sgeev_ffi(%arg0) {backend_config = "", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<1x1xf32>) -> (tensor<1xf32>, tensor<1xf32>, tensor<1x1xcomplex<f32>>, tensor<1x1xcomplex<f32>>, tensor<i32>)
    return
  }
}
