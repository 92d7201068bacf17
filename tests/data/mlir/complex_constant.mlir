// enzyme-wrap{infn=main outfn= retTys=enzyme_active argTys=enzyme_active mode=ReverseModeCombined}
module {
  func.func @main(%arg0: tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>> {
    %c = stablehlo.constant dense<[(1.0,2.0), (3.0,-1.0)]> : tensor<2xcomplex<f64>>
    %0 = stablehlo.multiply %arg0, %c : tensor<2xcomplex<f64>>
    %1 = stablehlo.add %0, %arg0 : tensor<2xcomplex<f64>>
    return %1 : tensor<2xcomplex<f64>>
  }
}
