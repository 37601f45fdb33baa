// Golden IR: kernel_spgemm_csr (kernel:spgemm-csr path)
// C = A B, CSR x CSR -> CSR, 32-bit indices (Gustavson)
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%a_pos: memref<?xi32>, %a_crd: memref<?xi32>, %a_val: memref<?xf64>, %b_pos: memref<?xi32>, %b_crd: memref<?xi32>, %b_val: memref<?xf64>) -> (memref<?xi32>, memref<?xi32>, memref<?xf64>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c63 = arith.constant 63 : index
  %m = arith.constant 8 : index
  %m1 = arith.constant 9 : index
  %n = arith.constant 4 : index
  %words = arith.constant 1 : index
  %groups = arith.constant 1 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
  %cpos = memref.alloc(%m1) : memref<?xi32>
  %mark1 = memref.alloc(%n) : memref<?xi32>
  %v2 = arith.constant -1 : i32
  scf.for %z = %c0 to %n step %c1 {
    memref.store %v2, %mark1[%z] : memref<?xi32>
  }
  scf.for %i3 = %c0 to %m step %c1 {
    %v4 = arith.index_cast %i3 : index to i32
    %v5 = arith.addi %i3, %c1 : index
    %v6 = memref.load %a_pos[%i3] : memref<?xi32>
    %v7 = arith.index_cast %v6 : i32 to index
    %v8 = memref.load %a_pos[%v5] : memref<?xi32>
    %v9 = arith.index_cast %v8 : i32 to index
    %rc12 = scf.for %p10 = %v7 to %v9 step %c1 iter_args(%u11 = %c0) -> (index) {
      %v13 = memref.load %a_crd[%p10] : memref<?xi32>
      %v14 = arith.index_cast %v13 : i32 to index
      %v15 = arith.addi %v14, %c1 : index
      %v16 = memref.load %b_pos[%v14] : memref<?xi32>
      %v17 = arith.index_cast %v16 : i32 to index
      %v18 = memref.load %b_pos[%v15] : memref<?xi32>
      %v19 = arith.index_cast %v18 : i32 to index
      %rc22 = scf.for %q20 = %v17 to %v19 step %c1 iter_args(%u21 = %u11) -> (index) {
        %v23 = memref.load %b_crd[%q20] : memref<?xi32>
        %v24 = arith.index_cast %v23 : i32 to index
        %v25 = memref.load %mark1[%v24] : memref<?xi32>
        %b26 = arith.cmpi ne, %v25, %v4 : i32
        %v27 = arith.select %b26, %c1, %c0 : index
        memref.store %v4, %mark1[%v24] : memref<?xi32>
        %v28 = arith.addi %u21, %v27 : index
        scf.yield %v28 : index
      }
      scf.yield %rc22 : index
    }
    %v29 = arith.index_cast %rc12 : index to i32
    memref.store %v29, %cpos[%v5] : memref<?xi32>
  }
  memref.dealloc %mark1 : memref<?xi32>
  %v30 = arith.index_cast %c0 : index to i32
  memref.store %v30, %cpos[%c0] : memref<?xi32>
  %nnz = scf.for %i = %c0 to %m step %c1 iter_args(%s = %c0) -> (index) {
    %v31 = arith.addi %i, %c1 : index
    %v32 = memref.load %cpos[%v31] : memref<?xi32>
    %v33 = arith.index_cast %v32 : i32 to index
    %v34 = arith.addi %s, %v33 : index
    %v35 = arith.index_cast %v34 : index to i32
    memref.store %v35, %cpos[%v31] : memref<?xi32>
    scf.yield %v34 : index
  }
  %ccrd = memref.alloc(%nnz) : memref<?xi32>
  %cval = memref.alloc(%nnz) : memref<?xf64>
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
  scf.for %i36 = %c0 to %m step %c1 {
    %v37 = arith.addi %i36, %c1 : index
    %v38 = memref.load %a_pos[%i36] : memref<?xi32>
    %v39 = arith.index_cast %v38 : i32 to index
    %v40 = memref.load %a_pos[%v37] : memref<?xi32>
    %v41 = arith.index_cast %v40 : i32 to index
    %span45:2 = scf.for %p42 = %v39 to %v41 step %c1 iter_args(%jl43 = %n, %jh44 = %c0) -> (index, index) {
      %v46 = memref.load %a_crd[%p42] : memref<?xi32>
      %v47 = arith.index_cast %v46 : i32 to index
      %v48 = memref.load %a_val[%p42] : memref<?xf64>
      %v49 = arith.addi %v47, %c1 : index
      %v50 = memref.load %b_pos[%v47] : memref<?xi32>
      %v51 = arith.index_cast %v50 : i32 to index
      %v52 = memref.load %b_pos[%v49] : memref<?xi32>
      %v53 = arith.index_cast %v52 : i32 to index
      %span57:2 = scf.for %q54 = %v51 to %v53 step %c1 iter_args(%jl55 = %jl43, %jh56 = %jh44) -> (index, index) {
        %v58 = memref.load %b_crd[%q54] : memref<?xi32>
        %v59 = arith.index_cast %v58 : i32 to index
        %v60 = memref.load %b_val[%q54] : memref<?xf64>
        %v61 = arith.mulf %v48, %v60 : f64
        %v62 = arith.shrui %v59, %c6 : index
        %v63 = arith.andi %v59, %c63 : index
        %v64 = arith.index_cast %v63 : index to i64
        %v65 = arith.shli %o64, %v64 : i64
        %v66 = memref.load %bits[%v62] : memref<?xi64>
        %v67 = arith.andi %v66, %v65 : i64
        %v68 = arith.cmpi eq, %v67, %z64 : i64
        scf.if %v68 {
          memref.store %v61, %work[%v59] : memref<?xf64>
          %v69 = arith.ori %v66, %v65 : i64
          memref.store %v69, %bits[%v62] : memref<?xi64>
          %v70 = arith.shrui %v62, %c6 : index
          %v71 = arith.andi %v62, %c63 : index
          %v72 = arith.index_cast %v71 : index to i64
          %v73 = arith.shli %o64, %v72 : i64
          %v74 = memref.load %summary[%v70] : memref<?xi64>
          %v75 = arith.ori %v74, %v73 : i64
          memref.store %v75, %summary[%v70] : memref<?xi64>
        } else {
          %v76 = memref.load %work[%v59] : memref<?xf64>
          %v77 = arith.addf %v76, %v61 : f64
          memref.store %v77, %work[%v59] : memref<?xf64>
        }
        %v78 = arith.minui %jl55, %v59 : index
        %v79 = arith.maxui %jh56, %v59 : index
        scf.yield %v78, %v79 : index, index
      }
      scf.yield %span57#0, %span57#1 : index, index
    }
    %v80 = memref.load %cpos[%i36] : memref<?xi32>
    %v81 = arith.index_cast %v80 : i32 to index
    %v82 = arith.shrui %span45#0, %c12 : index
    %v83 = arith.shrui %span45#1, %c12 : index
    %v84 = arith.addi %v83, %c1 : index
    %end87 = scf.for %g85 = %v82 to %v84 step %c1 iter_args(%o86 = %v81) -> (index) {
      %v88 = memref.load %summary[%g85] : memref<?xi64>
      %ws89:2 = scf.while (%wx90 = %v88, %wo91 = %o86) : (i64, index) -> (i64, index) {
        %b94 = arith.cmpi ne, %wx90, %z64 : i64
        scf.condition(%b94) %wx90, %wo91 : i64, index
      } do {
      ^bb0(%wx92: i64, %wo93: index):
        %v95 = math.cttz %wx92 : i64
        %v96 = arith.index_cast %v95 : i64 to index
        %v97 = arith.subi %wx92, %o64 : i64
        %v98 = arith.andi %wx92, %v97 : i64
        %v99 = arith.shli %g85, %c6 : index
        %v100 = arith.addi %v99, %v96 : index
        %v101 = arith.shli %v100, %c6 : index
        %v102 = memref.load %bits[%v100] : memref<?xi64>
        %ws103:2 = scf.while (%wx104 = %v102, %wo105 = %wo93) : (i64, index) -> (i64, index) {
          %b108 = arith.cmpi ne, %wx104, %z64 : i64
          scf.condition(%b108) %wx104, %wo105 : i64, index
        } do {
        ^bb0(%wx106: i64, %wo107: index):
          %v109 = math.cttz %wx106 : i64
          %v110 = arith.index_cast %v109 : i64 to index
          %v111 = arith.subi %wx106, %o64 : i64
          %v112 = arith.andi %wx106, %v111 : i64
          %v113 = arith.addi %v101, %v110 : index
          %v114 = arith.index_cast %v113 : index to i32
          memref.store %v114, %ccrd[%wo107] : memref<?xi32>
          %v115 = memref.load %work[%v113] : memref<?xf64>
          memref.store %v115, %cval[%wo107] : memref<?xf64>
          %v116 = arith.addi %wo107, %c1 : index
          scf.yield %v112, %v116 : i64, index
        }
        memref.store %z64, %bits[%v100] : memref<?xi64>
        scf.yield %v98, %ws103#1 : i64, index
      }
      memref.store %z64, %summary[%g85] : memref<?xi64>
      scf.yield %ws89#1 : index
    }
  }
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return %cpos, %ccrd, %cval : memref<?xi32>, memref<?xi32>, memref<?xf64>
}

func.func @main_count(%a_pos: memref<?xi32>, %a_crd: memref<?xi32>, %a_val: memref<?xf64>, %b_pos: memref<?xi32>, %b_crd: memref<?xi32>, %b_val: memref<?xf64>, %c_pos: memref<?xi32>, %row_begin: index, %row_end: index) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c63 = arith.constant 63 : index
  %m = arith.constant 8 : index
  %m1 = arith.constant 9 : index
  %n = arith.constant 4 : index
  %words = arith.constant 1 : index
  %groups = arith.constant 1 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
  %mark1 = memref.alloc(%n) : memref<?xi32>
  %v2 = arith.constant -1 : i32
  scf.for %z = %c0 to %n step %c1 {
    memref.store %v2, %mark1[%z] : memref<?xi32>
  }
  scf.for %i3 = %row_begin to %row_end step %c1 {
    %v4 = arith.index_cast %i3 : index to i32
    %v5 = arith.addi %i3, %c1 : index
    %v6 = memref.load %a_pos[%i3] : memref<?xi32>
    %v7 = arith.index_cast %v6 : i32 to index
    %v8 = memref.load %a_pos[%v5] : memref<?xi32>
    %v9 = arith.index_cast %v8 : i32 to index
    %rc12 = scf.for %p10 = %v7 to %v9 step %c1 iter_args(%u11 = %c0) -> (index) {
      %v13 = memref.load %a_crd[%p10] : memref<?xi32>
      %v14 = arith.index_cast %v13 : i32 to index
      %v15 = arith.addi %v14, %c1 : index
      %v16 = memref.load %b_pos[%v14] : memref<?xi32>
      %v17 = arith.index_cast %v16 : i32 to index
      %v18 = memref.load %b_pos[%v15] : memref<?xi32>
      %v19 = arith.index_cast %v18 : i32 to index
      %rc22 = scf.for %q20 = %v17 to %v19 step %c1 iter_args(%u21 = %u11) -> (index) {
        %v23 = memref.load %b_crd[%q20] : memref<?xi32>
        %v24 = arith.index_cast %v23 : i32 to index
        %v25 = memref.load %mark1[%v24] : memref<?xi32>
        %b26 = arith.cmpi ne, %v25, %v4 : i32
        %v27 = arith.select %b26, %c1, %c0 : index
        memref.store %v4, %mark1[%v24] : memref<?xi32>
        %v28 = arith.addi %u21, %v27 : index
        scf.yield %v28 : index
      }
      scf.yield %rc22 : index
    }
    %v29 = arith.index_cast %rc12 : index to i32
    memref.store %v29, %c_pos[%v5] : memref<?xi32>
  }
  memref.dealloc %mark1 : memref<?xi32>
  return
}

func.func @main_fill(%a_pos: memref<?xi32>, %a_crd: memref<?xi32>, %a_val: memref<?xf64>, %b_pos: memref<?xi32>, %b_crd: memref<?xi32>, %b_val: memref<?xf64>, %c_pos: memref<?xi32>, %c_crd: memref<?xi32>, %c_val: memref<?xf64>, %row_begin: index, %row_end: index) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c63 = arith.constant 63 : index
  %m = arith.constant 8 : index
  %m1 = arith.constant 9 : index
  %n = arith.constant 4 : index
  %words = arith.constant 1 : index
  %groups = arith.constant 1 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
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
  scf.for %i1 = %row_begin to %row_end step %c1 {
    %v2 = arith.addi %i1, %c1 : index
    %v3 = memref.load %a_pos[%i1] : memref<?xi32>
    %v4 = arith.index_cast %v3 : i32 to index
    %v5 = memref.load %a_pos[%v2] : memref<?xi32>
    %v6 = arith.index_cast %v5 : i32 to index
    %span10:2 = scf.for %p7 = %v4 to %v6 step %c1 iter_args(%jl8 = %n, %jh9 = %c0) -> (index, index) {
      %v11 = memref.load %a_crd[%p7] : memref<?xi32>
      %v12 = arith.index_cast %v11 : i32 to index
      %v13 = memref.load %a_val[%p7] : memref<?xf64>
      %v14 = arith.addi %v12, %c1 : index
      %v15 = memref.load %b_pos[%v12] : memref<?xi32>
      %v16 = arith.index_cast %v15 : i32 to index
      %v17 = memref.load %b_pos[%v14] : memref<?xi32>
      %v18 = arith.index_cast %v17 : i32 to index
      %span22:2 = scf.for %q19 = %v16 to %v18 step %c1 iter_args(%jl20 = %jl8, %jh21 = %jh9) -> (index, index) {
        %v23 = memref.load %b_crd[%q19] : memref<?xi32>
        %v24 = arith.index_cast %v23 : i32 to index
        %v25 = memref.load %b_val[%q19] : memref<?xf64>
        %v26 = arith.mulf %v13, %v25 : f64
        %v27 = arith.shrui %v24, %c6 : index
        %v28 = arith.andi %v24, %c63 : index
        %v29 = arith.index_cast %v28 : index to i64
        %v30 = arith.shli %o64, %v29 : i64
        %v31 = memref.load %bits[%v27] : memref<?xi64>
        %v32 = arith.andi %v31, %v30 : i64
        %v33 = arith.cmpi eq, %v32, %z64 : i64
        scf.if %v33 {
          memref.store %v26, %work[%v24] : memref<?xf64>
          %v34 = arith.ori %v31, %v30 : i64
          memref.store %v34, %bits[%v27] : memref<?xi64>
          %v35 = arith.shrui %v27, %c6 : index
          %v36 = arith.andi %v27, %c63 : index
          %v37 = arith.index_cast %v36 : index to i64
          %v38 = arith.shli %o64, %v37 : i64
          %v39 = memref.load %summary[%v35] : memref<?xi64>
          %v40 = arith.ori %v39, %v38 : i64
          memref.store %v40, %summary[%v35] : memref<?xi64>
        } else {
          %v41 = memref.load %work[%v24] : memref<?xf64>
          %v42 = arith.addf %v41, %v26 : f64
          memref.store %v42, %work[%v24] : memref<?xf64>
        }
        %v43 = arith.minui %jl20, %v24 : index
        %v44 = arith.maxui %jh21, %v24 : index
        scf.yield %v43, %v44 : index, index
      }
      scf.yield %span22#0, %span22#1 : index, index
    }
    %v45 = memref.load %c_pos[%i1] : memref<?xi32>
    %v46 = arith.index_cast %v45 : i32 to index
    %v47 = arith.shrui %span10#0, %c12 : index
    %v48 = arith.shrui %span10#1, %c12 : index
    %v49 = arith.addi %v48, %c1 : index
    %end52 = scf.for %g50 = %v47 to %v49 step %c1 iter_args(%o51 = %v46) -> (index) {
      %v53 = memref.load %summary[%g50] : memref<?xi64>
      %ws54:2 = scf.while (%wx55 = %v53, %wo56 = %o51) : (i64, index) -> (i64, index) {
        %b59 = arith.cmpi ne, %wx55, %z64 : i64
        scf.condition(%b59) %wx55, %wo56 : i64, index
      } do {
      ^bb0(%wx57: i64, %wo58: index):
        %v60 = math.cttz %wx57 : i64
        %v61 = arith.index_cast %v60 : i64 to index
        %v62 = arith.subi %wx57, %o64 : i64
        %v63 = arith.andi %wx57, %v62 : i64
        %v64 = arith.shli %g50, %c6 : index
        %v65 = arith.addi %v64, %v61 : index
        %v66 = arith.shli %v65, %c6 : index
        %v67 = memref.load %bits[%v65] : memref<?xi64>
        %ws68:2 = scf.while (%wx69 = %v67, %wo70 = %wo58) : (i64, index) -> (i64, index) {
          %b73 = arith.cmpi ne, %wx69, %z64 : i64
          scf.condition(%b73) %wx69, %wo70 : i64, index
        } do {
        ^bb0(%wx71: i64, %wo72: index):
          %v74 = math.cttz %wx71 : i64
          %v75 = arith.index_cast %v74 : i64 to index
          %v76 = arith.subi %wx71, %o64 : i64
          %v77 = arith.andi %wx71, %v76 : i64
          %v78 = arith.addi %v66, %v75 : index
          %v79 = arith.index_cast %v78 : index to i32
          memref.store %v79, %c_crd[%wo72] : memref<?xi32>
          %v80 = memref.load %work[%v78] : memref<?xf64>
          memref.store %v80, %c_val[%wo72] : memref<?xf64>
          %v81 = arith.addi %wo72, %c1 : index
          scf.yield %v77, %v81 : i64, index
        }
        memref.store %z64, %bits[%v65] : memref<?xi64>
        scf.yield %v63, %ws68#1 : i64, index
      }
      memref.store %z64, %summary[%g50] : memref<?xi64>
      scf.yield %ws54#1 : index
    }
  }
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return
}
