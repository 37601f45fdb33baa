// Golden IR: sparsifier_min_plus_spmv (sparsifier path)
// y = min_k (A[i, k] + x[k]), A CSR 8x6 f64
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0: tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, %in1: tensor<6xf64>) -> tensor<8xf64> attributes {llvm.emit_c_interface} {
  %i0 = arith.constant 0 : index
  %ident = arith.constant 0x7FF0000000000000 : f64
  %zero = arith.constant 0x7FF0000000000000 : f64
  %empty = tensor.empty() : tensor<8xf64>
  %init = linalg.fill ins(%zero : f64) outs(%empty : tensor<8xf64>) -> tensor<8xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%in0, %in1 : tensor<8x6xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed), posWidth = 64, crdWidth = 64 }>>, tensor<6xf64>) outs(%init : tensor<8xf64>) {
    ^bb0(%x0: f64, %x1: f64, %o: f64):
      %v1 = sparse_tensor.binary %x0, %x1 : f64, f64 to f64
        overlap={
          ^bb0(%r1_a0: f64, %r1_a1: f64):
            %r1_t1 = arith.addf %r1_a0, %r1_a1 : f64
            sparse_tensor.yield %r1_t1 : f64
        }
        left={}
        right={}
      %v3 = sparse_tensor.reduce %v1, %o, %ident : f64
        {
          ^bb0(%r3_a0: f64, %r3_a1: f64):
            %r3_t1 = arith.minimumf %r3_a0, %r3_a1 : f64
            sparse_tensor.yield %r3_t1 : f64
        }
      linalg.yield %v3 : f64
  } -> tensor<8xf64>
  return %r : tensor<8xf64>
}
