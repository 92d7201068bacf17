// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}
module @jit_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.reduce_precision %arg0, format = e1m0 : tensor<f32>
    return %0 : tensor<f32>
  }
}
