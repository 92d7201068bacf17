// Also fails, differently: pipeline-error: source=enzyme op=func.return message=<type> op has N operands, but enclosing function (@main) returns N
// enzyme-wrap{infn=main retTys=enzyme_active,enzyme_const argTys=enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>) -> (tensor<1xf32>, tensor<1xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<1xf32>
    return %cst, %arg0 : tensor<1xf32>, tensor<1xf32>
  }
}
