// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}
module @jit_optimization_barrier attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.optimization_barrier %arg0 : tensor<f32>
    return %0 : tensor<f32>
  }
}
