// Golden IR: sparsifier_sddmm (sparsifier path)
// C = S * (A B) sampled at S's entries, S CSR 8x6, A 8x4, B 4x6
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0: tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, %in1: tensor<8x4xf64>, %in2: tensor<4x6xf64>) -> tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>> attributes {llvm.emit_c_interface} {
  %i0 = arith.constant 0 : index
  %init = tensor.empty() : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%in0, %in1, %in2 : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, tensor<8x4xf64>, tensor<4x6xf64>) outs(%init : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>) {
    ^bb0(%x0: f64, %x1: f64, %x2: f64, %o: f64):
      %v1 = arith.mulf %x0, %x1 : f64
      %v2 = arith.mulf %v1, %x2 : f64
      %v3 = arith.addf %o, %v2 : f64
      linalg.yield %v3 : f64
  } -> tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>
  return %r : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>
}
