// Golden IR: sparsifier_csc_spmv (sparsifier path)
// y = A x, A CSC 8x6 f32 with 32-bit indices, x dense
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0: tensor<8x6xf32, #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>>, %in1: tensor<6xf32>) -> tensor<8xf32> attributes {llvm.emit_c_interface} {
  %i0 = arith.constant 0 : index
  %zero = arith.constant 0.00000000000000000e+00 : f32
  %empty = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%in0, %in1 : tensor<8x6xf32, #sparse_tensor.encoding<{ map = (i, j) -> (j : dense, i : compressed), posWidth = 32, crdWidth = 32 }>>, tensor<6xf32>) outs(%init : tensor<8xf32>) {
    ^bb0(%x0: f32, %x1: f32, %o: f32):
      %v1 = arith.mulf %x0, %x1 : f32
      %v2 = arith.addf %o, %v1 : f32
      linalg.yield %v2 : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
