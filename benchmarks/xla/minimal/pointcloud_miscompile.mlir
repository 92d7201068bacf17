module {
  func.func @main(%points: tensor<32769x3xf32>, %rotation: tensor<3x3xf32>, %zero: tensor<f32>) -> tensor<32769xf32> {
    %0 = stablehlo.dot_general %rotation, %points, contracting_dims = [1] x [1] : (tensor<3x3xf32>, tensor<32769x3xf32>) -> tensor<3x32769xf32>
    %1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<3x32769xf32>, tensor<f32>) -> tensor<32769xf32>
    return %1 : tensor<32769xf32>
  }
}
