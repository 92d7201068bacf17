// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active mode=ReverseModeCombined}
module @jit_digamma attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = chlo.digamma %arg0 : tensor<f32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}
