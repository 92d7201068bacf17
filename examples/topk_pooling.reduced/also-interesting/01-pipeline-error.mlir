// Also fails, differently: pipeline-error: source=enzyme op= message=could not find a nested named sequence with name: __transform_main
// transform-interpreter,enzyme-hlo-remove-transform,cse,enzyme-wrap{infn=main outfn= retTys=enzyme_active argTys=enzyme_active mode=ReverseModeCombined}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %values, %indices = chlo.top_k(%arg0, k = 1) : tensor<1xf32> -> (tensor<1xf32>, tensor<1xi32>)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%values init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<1xf32>, tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
