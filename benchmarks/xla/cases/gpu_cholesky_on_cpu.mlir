module @jit_nll attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x2xf32>, %arg1: tensor<16xf32>, %arg2: tensor<f32>, %arg3: tensor<f32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2] : (tensor<16x2xf32>) -> tensor<16x1x2xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<16x2xf32>) -> tensor<1x16x2xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1, 2] : (tensor<16x1x2xf32>) -> tensor<16x16x2xf32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2] : (tensor<1x16x2xf32>) -> tensor<16x16x2xf32>
    %4 = stablehlo.subtract %2, %3 : tensor<16x16x2xf32>
    %5 = stablehlo.multiply %4, %4 : tensor<16x16x2xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<16x16x2xf32>, tensor<f32>) -> tensor<16x16xf32>
    %cst_0 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %8 = stablehlo.multiply %7, %6 : tensor<16x16xf32>
    %9 = stablehlo.multiply %arg2, %arg2 : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %11 = stablehlo.divide %8, %10 : tensor<16x16xf32>
    %12 = stablehlo.exponential %11 : tensor<16x16xf32>
    %13 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %14 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x16xi32>
    %16 = stablehlo.add %13, %15 : tensor<16x16xi32>
    %17 = stablehlo.compare EQ, %16, %14, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %18 = stablehlo.convert %17 : (tensor<16x16xi1>) -> tensor<16x16xf32>
    %19 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %20 = stablehlo.multiply %19, %18 : tensor<16x16xf32>
    %21 = stablehlo.add %12, %20 : tensor<16x16xf32>
    %22 = call @cholesky(%21) : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %23 = call @_cho_solve(%22, %arg1) : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %25 = stablehlo.multiply %24, %arg1 : tensor<16xf32>
    %26 = stablehlo.dot_general %25, %23, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16xf32>, tensor<16xf32>) -> tensor<f32>
    %27 = call @_diag(%22) : (tensor<16x16xf32>) -> tensor<16xf32>
    %28 = stablehlo.log %27 : tensor<16xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %29 = stablehlo.reduce(%28 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    %30 = stablehlo.add %26, %29 : tensor<f32>
    return %30 : tensor<f32>
  }
  func.func private @cholesky(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<16x16xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %3 = stablehlo.divide %1, %2 : tensor<16x16xf32>
    %4:2 = stablehlo.custom_call @cusolver_potrf_ffi(%3) {backend_config = "", mhlo.backend_config = {lower = true}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=16, j=16, k=16, l=16}, custom>} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %6 = stablehlo.compare EQ, %4#1, %5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<16x16xi1>
    %10 = stablehlo.select %9, %4#0, %8 : tensor<16x16xi1>, tensor<16x16xf32>
    %11 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<16x16xi32>
    %13 = stablehlo.add %11, %12 : tensor<16x16xi32>
    %14 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %15 = stablehlo.compare GE, %13, %14, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %17 = stablehlo.select %15, %10, %16 : tensor<16x16xi1>, tensor<16x16xf32>
    return %17 : tensor<16x16xf32>
  }
  func.func private @_cho_solve(%arg0: tensor<16x16xf32>, %arg1: tensor<16xf32>) -> tensor<16xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<16xf32>) -> tensor<16x1xf32>
    %1 = "stablehlo.triangular_solve"(%arg0, %0) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<16x16xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %2 = stablehlo.reshape %1 : (tensor<16x1xf32>) -> tensor<16xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<16xf32>) -> tensor<16x1xf32>
    %4 = "stablehlo.triangular_solve"(%arg0, %3) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<16x16xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %5 = stablehlo.reshape %4 : (tensor<16x1xf32>) -> tensor<16xf32>
    return %5 : tensor<16xf32>
  }
  func.func private @_diag(%arg0: tensor<16x16xf32>) -> tensor<16xf32> {
    %0 = call @diagonal(%arg0) : (tensor<16x16xf32>) -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func private @diagonal(%arg0: tensor<16x16xf32>) -> tensor<16xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %1 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x16xi32>
    %3 = stablehlo.add %0, %2 : tensor<16x16xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %5 = stablehlo.convert %4 : (tensor<16x16xi1>) -> tensor<16x16xf32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %6 = "stablehlo.case"(%c_0) ({
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }, {
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %8 = stablehlo.iota dim = 0 : tensor<16xi32>
      %9 = stablehlo.iota dim = 0 : tensor<16xi32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %10 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %11 = stablehlo.compare LT, %8, %10, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
      %c_2 = stablehlo.constant dense<16> : tensor<i32>
      %12 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %13 = stablehlo.add %8, %12 : tensor<16xi32>
      %14 = stablehlo.select %11, %13, %8 : tensor<16xi1>, tensor<16xi32>
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %15 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %16 = stablehlo.compare LT, %9, %15, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
      %c_4 = stablehlo.constant dense<16> : tensor<i32>
      %17 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %18 = stablehlo.add %9, %17 : tensor<16xi32>
      %19 = stablehlo.select %16, %18, %9 : tensor<16xi1>, tensor<16xi32>
      %20 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<16xi32>) -> tensor<16x1xi32>
      %21 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<16xi32>) -> tensor<16x1xi32>
      %22 = stablehlo.concatenate %20, %21, dim = 1 : (tensor<16x1xi32>, tensor<16x1xi32>) -> tensor<16x2xi32>
      %23 = "stablehlo.gather"(%arg0, %22) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<16x16xf32>, tensor<16x2xi32>) -> tensor<16xf32>
      stablehlo.return %23 : tensor<16xf32>
    }) : (tensor<i32>) -> tensor<16xf32>
    return %7 : tensor<16xf32>
  }
}
