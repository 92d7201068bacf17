// enzyme,canonicalize
module {
  func.func @square(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
    %y = stablehlo.multiply %x, %x : tensor<4xcomplex<f32>>
    %z = stablehlo.add %y, %x : tensor<4xcomplex<f32>>
    return %z : tensor<4xcomplex<f32>>
  }
  func.func @other(%a: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.sine %a : tensor<3xf32>
    %1 = stablehlo.cosine %0 : tensor<3xf32>
    return %1 : tensor<3xf32>
  }
  func.func @main(%x: tensor<4xcomplex<f32>>, %dr: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
    %r = enzyme.autodiff @square(%x, %dr) <activity = [#enzyme.activity<enzyme_active>], ret_activity = [#enzyme.activity<enzyme_activenoneed>]> : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
    %s = stablehlo.negate %r : tensor<4xcomplex<f32>>
    return %r : tensor<4xcomplex<f32>>
  }
}
