module @jit_penalty attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<32769x3xf32>, %arg1: tensor<3x3xf32>, %arg2: tensor<f32>) -> tensor<32769xf32> {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x3xf32>, tensor<32769x3xf32>) -> tensor<3x32769xf32>
    %1 = stablehlo.reduce(%0 init: %arg2) applies stablehlo.add across dimensions = [0] : (tensor<3x32769xf32>, tensor<f32>) -> tensor<32769xf32>
    return %1 : tensor<32769xf32>
  }
}
