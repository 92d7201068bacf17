// enzyme-wrap{infn=main outfn= retTys=enzyme_active argTys=enzyme_active mode=ReverseModeCombined}
module {
  llvm.func @compare(%a: f32) -> i1 {
    %0 = "llvm.fcmp"(%a, %a) <{fastmathFlags = #llvm.fastmath<fast>, predicate = 1 : i64}> : (f32, f32) -> i1
    llvm.return %0 : i1
  }
  func.func @main(%arg0: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xcomplex<f32>>
    %1 = stablehlo.negate %0 : tensor<4xcomplex<f32>>
    return %1 : tensor<4xcomplex<f32>>
  }
}
