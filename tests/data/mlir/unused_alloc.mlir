module {
  func.func @main(%a: f32, %b: f32) -> f32 {
    %m = memref.alloc() : memref<4xf32>
    %s = "foo.opaque"(%a) : (f32) -> f32
    %0 = arith.addf %a, %b : f32
    %1 = arith.mulf %0, %a : f32
    return %1 : f32
  }
}
