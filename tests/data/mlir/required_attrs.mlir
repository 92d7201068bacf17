// canonicalize
module {
  llvm.func @load_and_widen(%p: !llvm.ptr, %q: !llvm.ptr) -> i64 {
    %0 = llvm.load %p {alignment = 4 : i64, reducer.note = "drop me"} : !llvm.ptr -> i32
    %1 = llvm.load %q {alignment = 8 : i64} : !llvm.ptr -> f32
    %2 = arith.extui %0 {nonNeg} : i32 to i64
    %3 = llvm.fcmp "oeq" %1, %1 : f32
    %4 = arith.extui %3 : i1 to i64
    %5 = arith.addi %2, %4 : i64
    llvm.return %5 : i64
  }
}
