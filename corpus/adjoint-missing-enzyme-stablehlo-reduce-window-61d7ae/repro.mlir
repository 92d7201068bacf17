// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active,enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>, %arg1: tensor<f32>) -> tensor<1xf32> {
    %0 = "stablehlo.reduce_window"(%arg0, %arg1) <{padding = dense<[[1, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 2>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      stablehlo.return %arg2 : tensor<f32>
    }) : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
    return %0 : tensor<1xf32>
  }
}
