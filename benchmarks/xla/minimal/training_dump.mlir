module {
  func.func @main(%a: tensor<3x1x2x2x8x8x8xf32>, %b: tensor<3x1x2x2x8x8x8xf32>, %zero: tensor<f32>) -> tensor<3x1x2x8x8x8xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<3x1x2x2x8x8x8xf32>
    %1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [3] : (tensor<3x1x2x2x8x8x8xf32>, tensor<f32>) -> tensor<3x1x2x8x8x8xf32>
    return %1 : tensor<3x1x2x8x8x8xf32>
  }
}
