module @jit_moments attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x1x2x2x8x8x8xf32>, %arg1: tensor<3x1x2x2x8x8x8xf32>, %arg2: tensor<3x1x2x2x8x8x8xf32>, %arg3: tensor<f32>) -> (tensor<3x1x2x8x8x8xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<3x1x2x2x8x8x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [3] : (tensor<3x1x2x2x8x8x8xf32>, tensor<f32>) -> tensor<3x1x2x8x8x8xf32>
    %2 = stablehlo.tanh %1 : tensor<3x1x2x8x8x8xf32>
    %3 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<3x1x2x8x8x8xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<3x1x2x8x8x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%arg2 init: %cst_0) applies stablehlo.add across dimensions = [0, 1, 2, 3, 4, 5, 6] : (tensor<3x1x2x2x8x8x8xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<6.144000e+03> : tensor<f32>
    %6 = stablehlo.divide %5, %cst_1 : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<3x1x2x8x8x8xf32>
    %8 = stablehlo.add %4, %7 : tensor<3x1x2x8x8x8xf32>
    %9 = stablehlo.abs %8 : tensor<3x1x2x8x8x8xf32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_2) applies stablehlo.maximum across dimensions = [0, 1, 2, 3, 4, 5] : (tensor<3x1x2x8x8x8xf32>, tensor<f32>) -> tensor<f32>
    return %8, %10 : tensor<3x1x2x8x8x8xf32>, tensor<f32>
  }
}
