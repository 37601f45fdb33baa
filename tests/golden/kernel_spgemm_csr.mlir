// Golden IR: kernel_spgemm_csr (kernel:spgemm-csr path)
// C = A B, CSR x CSR -> CSR, 32-bit indices (Gustavson)
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%a_pos: memref<?xi32>, %a_crd: memref<?xi32>, %a_val: memref<?xf64>, %b_pos: memref<?xi32>, %b_crd: memref<?xi32>, %b_val: memref<?xf64>) -> (memref<?xi32>, memref<?xi32>, memref<?xf64>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c63 = arith.constant 63 : index
  %m = arith.constant 8 : index
  %m1 = arith.constant 9 : index
  %mn = arith.constant 32 : index
  %words = arith.constant 1 : index
  %groups = arith.constant 1 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
  %v1 = memref.load %a_pos[%m] : memref<?xi32>
  %v2 = arith.index_cast %v1 : i32 to index
  %annz = arith.addi %v2, %c0 : index
  %bits = memref.alloc(%words) : memref<?xi64>
  %summary = memref.alloc(%groups) : memref<?xi64>
  scf.for %z = %c0 to %words step %c1 {
    memref.store %z64, %bits[%z] : memref<?xi64>
  }
  scf.for %z = %c0 to %groups step %c1 {
    memref.store %z64, %summary[%z] : memref<?xi64>
  }
  %wn = arith.shli %words, %c6 : index
  %work = memref.alloc(%wn) : memref<?xf64>
  %cpos = memref.alloc(%m1) : memref<?xi32>
  %v3 = arith.index_cast %c0 : index to i32
  memref.store %v3, %cpos[%c0] : memref<?xi32>
  %cap = scf.for %p = %c0 to %annz step %c1 iter_args(%u0 = %c0) -> (index) {
    %v4 = memref.load %a_crd[%p] : memref<?xi32>
    %v5 = arith.index_cast %v4 : i32 to index
    %v6 = arith.addi %v5, %c1 : index
    %v7 = memref.load %b_pos[%v5] : memref<?xi32>
    %v8 = arith.index_cast %v7 : i32 to index
    %v9 = memref.load %b_pos[%v6] : memref<?xi32>
    %v10 = arith.index_cast %v9 : i32 to index
    %v11 = arith.subi %v10, %v8 : index
    %u1 = arith.addi %u0, %v11 : index
    scf.yield %u1 : index
  }
  %capn = arith.minui %cap, %mn : index
  %ccrd0 = memref.alloc(%capn) : memref<?xi32>
  %cval0 = memref.alloc(%capn) : memref<?xf64>
  %nnz = scf.for %i = %c0 to %m step %c1 iter_args(%start = %c0) -> (index) {
    %v12 = arith.addi %i, %c1 : index
    %v13 = memref.load %a_pos[%i] : memref<?xi32>
    %v14 = arith.index_cast %v13 : i32 to index
    %v15 = memref.load %a_pos[%v12] : memref<?xi32>
    %v16 = arith.index_cast %v15 : i32 to index
    scf.for %p = %v14 to %v16 step %c1 {
      %v17 = memref.load %a_crd[%p] : memref<?xi32>
      %v18 = arith.index_cast %v17 : i32 to index
      %v19 = memref.load %a_val[%p] : memref<?xf64>
      %v20 = arith.addi %v18, %c1 : index
      %v21 = memref.load %b_pos[%v18] : memref<?xi32>
      %v22 = arith.index_cast %v21 : i32 to index
      %v23 = memref.load %b_pos[%v20] : memref<?xi32>
      %v24 = arith.index_cast %v23 : i32 to index
      scf.for %q = %v22 to %v24 step %c1 {
        %v25 = memref.load %b_crd[%q] : memref<?xi32>
        %v26 = arith.index_cast %v25 : i32 to index
        %v27 = memref.load %b_val[%q] : memref<?xf64>
        %v28 = arith.mulf %v19, %v27 : f64
        %v29 = arith.shrui %v26, %c6 : index
        %v30 = arith.andi %v26, %c63 : index
        %v31 = arith.index_cast %v30 : index to i64
        %v32 = arith.shli %o64, %v31 : i64
        %v33 = memref.load %bits[%v29] : memref<?xi64>
        %v34 = arith.andi %v33, %v32 : i64
        %v35 = arith.cmpi eq, %v34, %z64 : i64
        scf.if %v35 {
          memref.store %v28, %work[%v26] : memref<?xf64>
          %v36 = arith.ori %v33, %v32 : i64
          memref.store %v36, %bits[%v29] : memref<?xi64>
          %v37 = arith.shrui %v29, %c6 : index
          %v38 = arith.andi %v29, %c63 : index
          %v39 = arith.index_cast %v38 : index to i64
          %v40 = arith.shli %o64, %v39 : i64
          %v41 = memref.load %summary[%v37] : memref<?xi64>
          %v42 = arith.ori %v41, %v40 : i64
          memref.store %v42, %summary[%v37] : memref<?xi64>
        } else {
          %v43 = memref.load %work[%v26] : memref<?xf64>
          %v44 = arith.addf %v43, %v28 : f64
          memref.store %v44, %work[%v26] : memref<?xf64>
        }
      }
    }
    %end = scf.for %g = %c0 to %groups step %c1 iter_args(%o0 = %start) -> (index) {
      %v45 = memref.load %summary[%g] : memref<?xi64>
      %ws46:2 = scf.while (%wx47 = %v45, %wo48 = %o0) : (i64, index) -> (i64, index) {
        %b51 = arith.cmpi ne, %wx47, %z64 : i64
        scf.condition(%b51) %wx47, %wo48 : i64, index
      } do {
      ^bb0(%wx49: i64, %wo50: index):
        %v52 = math.cttz %wx49 : i64
        %v53 = arith.index_cast %v52 : i64 to index
        %v54 = arith.subi %wx49, %o64 : i64
        %v55 = arith.andi %wx49, %v54 : i64
        %v56 = arith.shli %g, %c6 : index
        %v57 = arith.addi %v56, %v53 : index
        %v58 = arith.shli %v57, %c6 : index
        %v59 = memref.load %bits[%v57] : memref<?xi64>
        %ws60:2 = scf.while (%wx61 = %v59, %wo62 = %wo50) : (i64, index) -> (i64, index) {
          %b65 = arith.cmpi ne, %wx61, %z64 : i64
          scf.condition(%b65) %wx61, %wo62 : i64, index
        } do {
        ^bb0(%wx63: i64, %wo64: index):
          %v66 = math.cttz %wx63 : i64
          %v67 = arith.index_cast %v66 : i64 to index
          %v68 = arith.subi %wx63, %o64 : i64
          %v69 = arith.andi %wx63, %v68 : i64
          %v70 = arith.addi %v58, %v67 : index
          %v71 = arith.index_cast %v70 : index to i32
          memref.store %v71, %ccrd0[%wo64] : memref<?xi32>
          %v72 = memref.load %work[%v70] : memref<?xf64>
          memref.store %v72, %cval0[%wo64] : memref<?xf64>
          %v73 = arith.addi %wo64, %c1 : index
          scf.yield %v69, %v73 : i64, index
        }
        memref.store %z64, %bits[%v57] : memref<?xi64>
        scf.yield %v55, %ws60#1 : i64, index
      }
      memref.store %z64, %summary[%g] : memref<?xi64>
      scf.yield %ws46#1 : index
    }
    %v74 = arith.index_cast %end : index to i32
    memref.store %v74, %cpos[%v12] : memref<?xi32>
    scf.yield %end : index
  }
  %ccrd = memref.realloc %ccrd0(%nnz) : memref<?xi32> to memref<?xi32>
  %cval = memref.realloc %cval0(%nnz) : memref<?xf64> to memref<?xf64>
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return %cpos, %ccrd, %cval : memref<?xi32>, memref<?xi32>, memref<?xf64>
}
