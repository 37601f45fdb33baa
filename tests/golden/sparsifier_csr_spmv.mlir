// Golden IR: sparsifier_csr_spmv (sparsifier path)
// y = A x, A CSR 8x6 f64, x dense
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0: tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, %in1: tensor<6xf64>) -> tensor<8xf64> attributes {llvm.emit_c_interface} {
  %i0 = arith.constant 0 : index
  %zero = arith.constant 0.00000000000000000e+00 : f64
  %empty = tensor.empty() : tensor<8xf64>
  %init = linalg.fill ins(%zero : f64) outs(%empty : tensor<8xf64>) -> tensor<8xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%in0, %in1 : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, tensor<6xf64>) outs(%init : tensor<8xf64>) {
    ^bb0(%x0: f64, %x1: f64, %o: f64):
      %v1 = arith.mulf %x0, %x1 : f64
      %v2 = arith.addf %o, %v1 : f64
      linalg.yield %v2 : f64
  } -> tensor<8xf64>
  return %r : tensor<8xf64>
}
