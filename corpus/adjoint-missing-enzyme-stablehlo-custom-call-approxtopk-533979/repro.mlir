// enzyme-wrap{infn=main retTys=enzyme_const argTys=enzyme_active,enzyme_const,enzyme_active,enzyme_const}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>, %arg1: tensor<1xi32>, %arg2: tensor<f32>, %arg3: tensor<i32>) -> tensor<1xi32> {
    %0:2 = stablehlo.custom_call @ApproxTopK(%arg0, %arg1, %arg2, %arg3) : (tensor<1xf32>, tensor<1xi32>, tensor<f32>, tensor<i32>) -> (tensor<1xf32>, tensor<1xi32>)
    return %0#1 : tensor<1xi32>
  }
}
