// enzyme-wrap{infn=main retTys=enzyme_active argTys=enzyme_active}
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @maximal_mesh_0 = <[], device_ids=[0]>
  func.func @main(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {operand_layouts = [dense<> : tensor<0xindex>], result_layouts = [dense<> : tensor<0xindex>]} : (tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
