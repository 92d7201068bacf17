// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active,enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = chlo.zeta %arg0, %arg1 : tensor<f32>, tensor<f32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}
