// Also fails, differently: crash: platform=cpu how=signal detail=SIGSEGV in <no Python frame>
// enzyme-wrap{infn=main retTys=enzyme_active,enzyme_const argTys=enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%arg0: tensor<1xf32>) -> (tensor<1xf32>, tensor<1xi32>) {
    %values, %indices = chlo.top_k(%arg0, k = 1) : tensor<1xf32> -> (tensor<1xf32>, tensor<1xi32>)
    return %arg0, %indices : tensor<1xf32>, tensor<1xi32>
  }
}
