module @jit_moments attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<2x1x2x2x8x8x8xf32>, %arg1: tensor<2x1x2x2x8x8x8xf32>, %arg2: tensor<f32>) -> tensor<2x1x2x8x8x8xf32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<2x1x2x2x8x8x8xf32>
    %1 = stablehlo.reduce(%0 init: %arg2) applies stablehlo.add across dimensions = [3] : (tensor<2x1x2x2x8x8x8xf32>, tensor<f32>) -> tensor<2x1x2x8x8x8xf32>
    return %1 : tensor<2x1x2x8x8x8xf32>
  }
}
