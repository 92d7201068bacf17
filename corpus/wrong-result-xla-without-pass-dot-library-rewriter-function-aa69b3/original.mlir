module @jit_penalty attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32769x3xf32>, %arg1: tensor<3x3xf32>, %arg2: tensor<f32>) -> (tensor<32769xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<32769x3xf32>, tensor<f32>) -> tensor<3xf32>
    %cst_0 = stablehlo.constant dense<3.276900e+04> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %2 = stablehlo.divide %0, %1 : tensor<3xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<32769x3xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<32769x3xf32>
    %6 = stablehlo.dot_general %arg1, %5, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x3xf32>, tensor<32769x3xf32>) -> tensor<3x32769xf32>
    %7 = stablehlo.multiply %6, %6 : tensor<3x32769xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<3x32769xf32>, tensor<f32>) -> tensor<32769xf32>
    %cst_2 = stablehlo.constant dense<9.99999996E-13> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<32769xf32>
    %10 = stablehlo.add %8, %9 : tensor<32769xf32>
    %11 = stablehlo.sqrt %10 : tensor<32769xf32>
    %12 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<32769xf32>
    %13 = stablehlo.subtract %11, %12 : tensor<32769xf32>
    %14 = call @relu(%13) : (tensor<32769xf32>) -> tensor<32769xf32>
    %15 = stablehlo.multiply %14, %14 : tensor<32769xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<32769xf32>, tensor<f32>) -> tensor<f32>
    %cst_4 = stablehlo.constant dense<3.276900e+04> : tensor<f32>
    %17 = stablehlo.divide %16, %cst_4 : tensor<f32>
    return %8, %17 : tensor<32769xf32>, tensor<f32>
  }
  func.func private @relu(%arg0: tensor<32769xf32>) -> tensor<32769xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32769xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<32769xf32>
    return %1 : tensor<32769xf32>
  }
}
