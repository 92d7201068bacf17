// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>) -> tensor<1xf32> {
    %values, %indices = chlo.top_k(%arg0, k = 1) : tensor<1xf32> -> (tensor<1xf32>, tensor<1xi32>)
    return %values : tensor<1xf32>
  }
}
