module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: f32) kernel {
      gpu.return
    }
  }
  func.func @main(%arg0: f32) {
    %c1 = arith.constant 1 : index
    "foo.wrapper"() ({
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%arg0 : f32)
      "foo.end"() : () -> ()
    }) : () -> ()
    return
  }
}
