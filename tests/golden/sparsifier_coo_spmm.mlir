// Golden IR: sparsifier_coo_spmm (sparsifier path)
// C = A B, A COO 8x6, B dense 6x4, alpha scaling
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0: tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), posWidth = 64, crdWidth = 64 }>>, %in1: tensor<6x4xf64>, %alpha: tensor<1xf64>) -> tensor<8x4xf64> attributes {llvm.emit_c_interface} {
  %i0 = arith.constant 0 : index
  %alpha_s = tensor.extract %alpha[%i0] : tensor<1xf64>
  %zero = arith.constant 0.00000000000000000e+00 : f64
  %empty = tensor.empty() : tensor<8x4xf64>
  %init = linalg.fill ins(%zero : f64) outs(%empty : tensor<8x4xf64>) -> tensor<8x4xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%in0, %in1 : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : compressed(nonunique), j : singleton(soa)), posWidth = 64, crdWidth = 64 }>>, tensor<6x4xf64>) outs(%init : tensor<8x4xf64>) {
    ^bb0(%x0: f64, %x1: f64, %o: f64):
      %v1 = arith.mulf %x0, %x1 : f64
      %v2 = arith.mulf %v1, %alpha_s : f64
      %v3 = arith.addf %o, %v2 : f64
      linalg.yield %v3 : f64
  } -> tensor<8x4xf64>
  return %r : tensor<8x4xf64>
}
