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
  %pf16 = arith.constant 16 : index
  %pf32 = arith.constant 32 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
  %cpos = memref.alloc(%m1) : memref<?xi32>
  %mark1 = memref.alloc(%n) : memref<?xi32>
  %v2 = arith.constant -1 : i32
  scf.for %z = %c0 to %n step %c1 {
    memref.store %v2, %mark1[%z] : memref<?xi32>
  }
  %v3 = memref.load %a_pos[%m] : memref<?xi32>
  %v4 = arith.index_cast %v3 : i32 to index
  %v5 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v6 = arith.constant 87381 : index
  %v7 = arith.subi %v4, %c1 : index
  %b8 = arith.cmpi uge, %v5, %v6 : index
  scf.for %i9 = %c0 to %m step %c1 {
    %v10 = arith.index_cast %i9 : index to i32
    %v11 = arith.addi %i9, %c1 : index
    %v12 = memref.load %a_pos[%i9] : memref<?xi32>
    %v13 = arith.index_cast %v12 : i32 to index
    %v14 = memref.load %a_pos[%v11] : memref<?xi32>
    %v15 = arith.index_cast %v14 : i32 to index
    %rc18 = scf.for %p16 = %v13 to %v15 step %c1 iter_args(%u17 = %c0) -> (index) {
      scf.if %b8 {
        %v19 = arith.addi %p16, %pf32 : index
        %v20 = arith.minui %v19, %v7 : index
        %v21 = memref.load %a_crd[%v20] : memref<?xi32>
        %v22 = arith.index_cast %v21 : i32 to index
        memref.prefetch %b_pos[%v22], read, locality<3>, data : memref<?xi32>
        %v23 = arith.addi %p16, %pf16 : index
        %v24 = arith.minui %v23, %v7 : index
        %v25 = memref.load %a_crd[%v24] : memref<?xi32>
        %v26 = arith.index_cast %v25 : i32 to index
        %v27 = memref.load %b_pos[%v26] : memref<?xi32>
        %v28 = arith.index_cast %v27 : i32 to index
        memref.prefetch %b_crd[%v28], read, locality<3>, data : memref<?xi32>
      }
      %v29 = memref.load %a_crd[%p16] : memref<?xi32>
      %v30 = arith.index_cast %v29 : i32 to index
      %v31 = arith.addi %v30, %c1 : index
      %v32 = memref.load %b_pos[%v30] : memref<?xi32>
      %v33 = arith.index_cast %v32 : i32 to index
      %v34 = memref.load %b_pos[%v31] : memref<?xi32>
      %v35 = arith.index_cast %v34 : i32 to index
      %rc38 = scf.for %q36 = %v33 to %v35 step %c1 iter_args(%u37 = %u17) -> (index) {
        %v39 = memref.load %b_crd[%q36] : memref<?xi32>
        %v40 = arith.index_cast %v39 : i32 to index
        %v41 = memref.load %mark1[%v40] : memref<?xi32>
        %b42 = arith.cmpi ne, %v41, %v10 : i32
        %v43 = arith.select %b42, %c1, %c0 : index
        memref.store %v10, %mark1[%v40] : memref<?xi32>
        %v44 = arith.addi %u37, %v43 : index
        scf.yield %v44 : index
      }
      scf.yield %rc38 : index
    }
    %v45 = arith.index_cast %rc18 : index to i32
    memref.store %v45, %cpos[%v11] : memref<?xi32>
  }
  memref.dealloc %mark1 : memref<?xi32>
  %v46 = arith.index_cast %c0 : index to i32
  memref.store %v46, %cpos[%c0] : memref<?xi32>
  %nnz = scf.for %i = %c0 to %m step %c1 iter_args(%s = %c0) -> (index) {
    %v47 = arith.addi %i, %c1 : index
    %v48 = memref.load %cpos[%v47] : memref<?xi32>
    %v49 = arith.index_cast %v48 : i32 to index
    %v50 = arith.addi %s, %v49 : index
    %v51 = arith.index_cast %v50 : index to i32
    memref.store %v51, %cpos[%v47] : memref<?xi32>
    scf.yield %v50 : index
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
  %v52 = memref.load %a_pos[%m] : memref<?xi32>
  %v53 = arith.index_cast %v52 : i32 to index
  %v54 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v55 = arith.constant 87381 : index
  %v56 = arith.subi %v53, %c1 : index
  %b57 = arith.cmpi uge, %v54, %v55 : index
  scf.for %i58 = %c0 to %m step %c1 {
    %v59 = arith.addi %i58, %c1 : index
    %v60 = memref.load %a_pos[%i58] : memref<?xi32>
    %v61 = arith.index_cast %v60 : i32 to index
    %v62 = memref.load %a_pos[%v59] : memref<?xi32>
    %v63 = arith.index_cast %v62 : i32 to index
    %span67:2 = scf.for %p64 = %v61 to %v63 step %c1 iter_args(%jl65 = %n, %jh66 = %c0) -> (index, index) {
      scf.if %b57 {
        %v68 = arith.addi %p64, %pf32 : index
        %v69 = arith.minui %v68, %v56 : index
        %v70 = memref.load %a_crd[%v69] : memref<?xi32>
        %v71 = arith.index_cast %v70 : i32 to index
        memref.prefetch %b_pos[%v71], read, locality<3>, data : memref<?xi32>
        %v72 = arith.addi %p64, %pf16 : index
        %v73 = arith.minui %v72, %v56 : index
        %v74 = memref.load %a_crd[%v73] : memref<?xi32>
        %v75 = arith.index_cast %v74 : i32 to index
        %v76 = memref.load %b_pos[%v75] : memref<?xi32>
        %v77 = arith.index_cast %v76 : i32 to index
        memref.prefetch %b_crd[%v77], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v77], read, locality<3>, data : memref<?xf64>
      }
      %v78 = memref.load %a_crd[%p64] : memref<?xi32>
      %v79 = arith.index_cast %v78 : i32 to index
      %v80 = memref.load %a_val[%p64] : memref<?xf64>
      %v81 = arith.addi %v79, %c1 : index
      %v82 = memref.load %b_pos[%v79] : memref<?xi32>
      %v83 = arith.index_cast %v82 : i32 to index
      %v84 = memref.load %b_pos[%v81] : memref<?xi32>
      %v85 = arith.index_cast %v84 : i32 to index
      %span89:2 = scf.for %q86 = %v83 to %v85 step %c1 iter_args(%jl87 = %jl65, %jh88 = %jh66) -> (index, index) {
        %v90 = memref.load %b_crd[%q86] : memref<?xi32>
        %v91 = arith.index_cast %v90 : i32 to index
        %v92 = memref.load %b_val[%q86] : memref<?xf64>
        %v93 = arith.mulf %v80, %v92 : f64
        %v94 = arith.shrui %v91, %c6 : index
        %v95 = arith.andi %v91, %c63 : index
        %v96 = arith.index_cast %v95 : index to i64
        %v97 = arith.shli %o64, %v96 : i64
        %v98 = memref.load %bits[%v94] : memref<?xi64>
        %v99 = arith.andi %v98, %v97 : i64
        %v100 = arith.cmpi eq, %v99, %z64 : i64
        scf.if %v100 {
          memref.store %v93, %work[%v91] : memref<?xf64>
          %v101 = arith.ori %v98, %v97 : i64
          memref.store %v101, %bits[%v94] : memref<?xi64>
          %v102 = arith.shrui %v94, %c6 : index
          %v103 = arith.andi %v94, %c63 : index
          %v104 = arith.index_cast %v103 : index to i64
          %v105 = arith.shli %o64, %v104 : i64
          %v106 = memref.load %summary[%v102] : memref<?xi64>
          %v107 = arith.ori %v106, %v105 : i64
          memref.store %v107, %summary[%v102] : memref<?xi64>
        } else {
          %v108 = memref.load %work[%v91] : memref<?xf64>
          %v109 = arith.addf %v108, %v93 : f64
          memref.store %v109, %work[%v91] : memref<?xf64>
        }
        %v110 = arith.minui %jl87, %v91 : index
        %v111 = arith.maxui %jh88, %v91 : index
        scf.yield %v110, %v111 : index, index
      }
      scf.yield %span89#0, %span89#1 : index, index
    }
    %v112 = memref.load %cpos[%i58] : memref<?xi32>
    %v113 = arith.index_cast %v112 : i32 to index
    %v114 = arith.shrui %span67#0, %c12 : index
    %v115 = arith.shrui %span67#1, %c12 : index
    %v116 = arith.addi %v115, %c1 : index
    %end119 = scf.for %g117 = %v114 to %v116 step %c1 iter_args(%off118 = %v113) -> (index) {
      %v120 = memref.load %summary[%g117] : memref<?xi64>
      %ws121:2 = scf.while (%wx122 = %v120, %wo123 = %off118) : (i64, index) -> (i64, index) {
        %b126 = arith.cmpi ne, %wx122, %z64 : i64
        scf.condition(%b126) %wx122, %wo123 : i64, index
      } do {
      ^bb0(%wx124: i64, %wo125: index):
        %v127 = math.cttz %wx124 : i64
        %v128 = arith.index_cast %v127 : i64 to index
        %v129 = arith.subi %wx124, %o64 : i64
        %v130 = arith.andi %wx124, %v129 : i64
        %v131 = arith.shli %g117, %c6 : index
        %v132 = arith.addi %v131, %v128 : index
        %v133 = arith.shli %v132, %c6 : index
        %v134 = memref.load %bits[%v132] : memref<?xi64>
        %ws135:2 = scf.while (%wx136 = %v134, %wo137 = %wo125) : (i64, index) -> (i64, index) {
          %b140 = arith.cmpi ne, %wx136, %z64 : i64
          scf.condition(%b140) %wx136, %wo137 : i64, index
        } do {
        ^bb0(%wx138: i64, %wo139: index):
          %v141 = math.cttz %wx138 : i64
          %v142 = arith.index_cast %v141 : i64 to index
          %v143 = arith.subi %wx138, %o64 : i64
          %v144 = arith.andi %wx138, %v143 : i64
          %v145 = arith.addi %v133, %v142 : index
          %v146 = arith.index_cast %v145 : index to i32
          memref.store %v146, %ccrd[%wo139] : memref<?xi32>
          %v147 = memref.load %work[%v145] : memref<?xf64>
          memref.store %v147, %cval[%wo139] : memref<?xf64>
          %v148 = arith.addi %wo139, %c1 : index
          scf.yield %v144, %v148 : i64, index
        }
        memref.store %z64, %bits[%v132] : memref<?xi64>
        scf.yield %v130, %ws135#1 : i64, index
      }
      memref.store %z64, %summary[%g117] : memref<?xi64>
      scf.yield %ws121#1 : index
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
  %pf16 = arith.constant 16 : index
  %pf32 = arith.constant 32 : index
  %z64 = arith.constant 0 : i64
  %o64 = arith.constant 1 : i64
  %mark1 = memref.alloc(%n) : memref<?xi32>
  %v2 = arith.constant -1 : i32
  scf.for %z = %c0 to %n step %c1 {
    memref.store %v2, %mark1[%z] : memref<?xi32>
  }
  %v3 = memref.load %a_pos[%row_end] : memref<?xi32>
  %v4 = arith.index_cast %v3 : i32 to index
  %v5 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v6 = arith.constant 87381 : index
  %v7 = arith.subi %v4, %c1 : index
  %b8 = arith.cmpi uge, %v5, %v6 : index
  scf.for %i9 = %row_begin to %row_end step %c1 {
    %v10 = arith.index_cast %i9 : index to i32
    %v11 = arith.addi %i9, %c1 : index
    %v12 = memref.load %a_pos[%i9] : memref<?xi32>
    %v13 = arith.index_cast %v12 : i32 to index
    %v14 = memref.load %a_pos[%v11] : memref<?xi32>
    %v15 = arith.index_cast %v14 : i32 to index
    %rc18 = scf.for %p16 = %v13 to %v15 step %c1 iter_args(%u17 = %c0) -> (index) {
      scf.if %b8 {
        %v19 = arith.addi %p16, %pf32 : index
        %v20 = arith.minui %v19, %v7 : index
        %v21 = memref.load %a_crd[%v20] : memref<?xi32>
        %v22 = arith.index_cast %v21 : i32 to index
        memref.prefetch %b_pos[%v22], read, locality<3>, data : memref<?xi32>
        %v23 = arith.addi %p16, %pf16 : index
        %v24 = arith.minui %v23, %v7 : index
        %v25 = memref.load %a_crd[%v24] : memref<?xi32>
        %v26 = arith.index_cast %v25 : i32 to index
        %v27 = memref.load %b_pos[%v26] : memref<?xi32>
        %v28 = arith.index_cast %v27 : i32 to index
        memref.prefetch %b_crd[%v28], read, locality<3>, data : memref<?xi32>
      }
      %v29 = memref.load %a_crd[%p16] : memref<?xi32>
      %v30 = arith.index_cast %v29 : i32 to index
      %v31 = arith.addi %v30, %c1 : index
      %v32 = memref.load %b_pos[%v30] : memref<?xi32>
      %v33 = arith.index_cast %v32 : i32 to index
      %v34 = memref.load %b_pos[%v31] : memref<?xi32>
      %v35 = arith.index_cast %v34 : i32 to index
      %rc38 = scf.for %q36 = %v33 to %v35 step %c1 iter_args(%u37 = %u17) -> (index) {
        %v39 = memref.load %b_crd[%q36] : memref<?xi32>
        %v40 = arith.index_cast %v39 : i32 to index
        %v41 = memref.load %mark1[%v40] : memref<?xi32>
        %b42 = arith.cmpi ne, %v41, %v10 : i32
        %v43 = arith.select %b42, %c1, %c0 : index
        memref.store %v10, %mark1[%v40] : memref<?xi32>
        %v44 = arith.addi %u37, %v43 : index
        scf.yield %v44 : index
      }
      scf.yield %rc38 : index
    }
    %v45 = arith.index_cast %rc18 : index to i32
    memref.store %v45, %c_pos[%v11] : memref<?xi32>
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
  %pf16 = arith.constant 16 : index
  %pf32 = arith.constant 32 : index
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
  %v1 = memref.load %a_pos[%row_end] : memref<?xi32>
  %v2 = arith.index_cast %v1 : i32 to index
  %v3 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v4 = arith.constant 87381 : index
  %v5 = arith.subi %v2, %c1 : index
  %b6 = arith.cmpi uge, %v3, %v4 : index
  scf.for %i7 = %row_begin to %row_end step %c1 {
    %v8 = arith.addi %i7, %c1 : index
    %v9 = memref.load %a_pos[%i7] : memref<?xi32>
    %v10 = arith.index_cast %v9 : i32 to index
    %v11 = memref.load %a_pos[%v8] : memref<?xi32>
    %v12 = arith.index_cast %v11 : i32 to index
    %span16:2 = scf.for %p13 = %v10 to %v12 step %c1 iter_args(%jl14 = %n, %jh15 = %c0) -> (index, index) {
      scf.if %b6 {
        %v17 = arith.addi %p13, %pf32 : index
        %v18 = arith.minui %v17, %v5 : index
        %v19 = memref.load %a_crd[%v18] : memref<?xi32>
        %v20 = arith.index_cast %v19 : i32 to index
        memref.prefetch %b_pos[%v20], read, locality<3>, data : memref<?xi32>
        %v21 = arith.addi %p13, %pf16 : index
        %v22 = arith.minui %v21, %v5 : index
        %v23 = memref.load %a_crd[%v22] : memref<?xi32>
        %v24 = arith.index_cast %v23 : i32 to index
        %v25 = memref.load %b_pos[%v24] : memref<?xi32>
        %v26 = arith.index_cast %v25 : i32 to index
        memref.prefetch %b_crd[%v26], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v26], read, locality<3>, data : memref<?xf64>
      }
      %v27 = memref.load %a_crd[%p13] : memref<?xi32>
      %v28 = arith.index_cast %v27 : i32 to index
      %v29 = memref.load %a_val[%p13] : memref<?xf64>
      %v30 = arith.addi %v28, %c1 : index
      %v31 = memref.load %b_pos[%v28] : memref<?xi32>
      %v32 = arith.index_cast %v31 : i32 to index
      %v33 = memref.load %b_pos[%v30] : memref<?xi32>
      %v34 = arith.index_cast %v33 : i32 to index
      %span38:2 = scf.for %q35 = %v32 to %v34 step %c1 iter_args(%jl36 = %jl14, %jh37 = %jh15) -> (index, index) {
        %v39 = memref.load %b_crd[%q35] : memref<?xi32>
        %v40 = arith.index_cast %v39 : i32 to index
        %v41 = memref.load %b_val[%q35] : memref<?xf64>
        %v42 = arith.mulf %v29, %v41 : f64
        %v43 = arith.shrui %v40, %c6 : index
        %v44 = arith.andi %v40, %c63 : index
        %v45 = arith.index_cast %v44 : index to i64
        %v46 = arith.shli %o64, %v45 : i64
        %v47 = memref.load %bits[%v43] : memref<?xi64>
        %v48 = arith.andi %v47, %v46 : i64
        %v49 = arith.cmpi eq, %v48, %z64 : i64
        scf.if %v49 {
          memref.store %v42, %work[%v40] : memref<?xf64>
          %v50 = arith.ori %v47, %v46 : i64
          memref.store %v50, %bits[%v43] : memref<?xi64>
          %v51 = arith.shrui %v43, %c6 : index
          %v52 = arith.andi %v43, %c63 : index
          %v53 = arith.index_cast %v52 : index to i64
          %v54 = arith.shli %o64, %v53 : i64
          %v55 = memref.load %summary[%v51] : memref<?xi64>
          %v56 = arith.ori %v55, %v54 : i64
          memref.store %v56, %summary[%v51] : memref<?xi64>
        } else {
          %v57 = memref.load %work[%v40] : memref<?xf64>
          %v58 = arith.addf %v57, %v42 : f64
          memref.store %v58, %work[%v40] : memref<?xf64>
        }
        %v59 = arith.minui %jl36, %v40 : index
        %v60 = arith.maxui %jh37, %v40 : index
        scf.yield %v59, %v60 : index, index
      }
      scf.yield %span38#0, %span38#1 : index, index
    }
    %v61 = memref.load %c_pos[%i7] : memref<?xi32>
    %v62 = arith.index_cast %v61 : i32 to index
    %v63 = arith.shrui %span16#0, %c12 : index
    %v64 = arith.shrui %span16#1, %c12 : index
    %v65 = arith.addi %v64, %c1 : index
    %end68 = scf.for %g66 = %v63 to %v65 step %c1 iter_args(%off67 = %v62) -> (index) {
      %v69 = memref.load %summary[%g66] : memref<?xi64>
      %ws70:2 = scf.while (%wx71 = %v69, %wo72 = %off67) : (i64, index) -> (i64, index) {
        %b75 = arith.cmpi ne, %wx71, %z64 : i64
        scf.condition(%b75) %wx71, %wo72 : i64, index
      } do {
      ^bb0(%wx73: i64, %wo74: index):
        %v76 = math.cttz %wx73 : i64
        %v77 = arith.index_cast %v76 : i64 to index
        %v78 = arith.subi %wx73, %o64 : i64
        %v79 = arith.andi %wx73, %v78 : i64
        %v80 = arith.shli %g66, %c6 : index
        %v81 = arith.addi %v80, %v77 : index
        %v82 = arith.shli %v81, %c6 : index
        %v83 = memref.load %bits[%v81] : memref<?xi64>
        %ws84:2 = scf.while (%wx85 = %v83, %wo86 = %wo74) : (i64, index) -> (i64, index) {
          %b89 = arith.cmpi ne, %wx85, %z64 : i64
          scf.condition(%b89) %wx85, %wo86 : i64, index
        } do {
        ^bb0(%wx87: i64, %wo88: index):
          %v90 = math.cttz %wx87 : i64
          %v91 = arith.index_cast %v90 : i64 to index
          %v92 = arith.subi %wx87, %o64 : i64
          %v93 = arith.andi %wx87, %v92 : i64
          %v94 = arith.addi %v82, %v91 : index
          %v95 = arith.index_cast %v94 : index to i32
          memref.store %v95, %c_crd[%wo88] : memref<?xi32>
          %v96 = memref.load %work[%v94] : memref<?xf64>
          memref.store %v96, %c_val[%wo88] : memref<?xf64>
          %v97 = arith.addi %wo88, %c1 : index
          scf.yield %v93, %v97 : i64, index
        }
        memref.store %z64, %bits[%v81] : memref<?xi64>
        scf.yield %v79, %ws84#1 : i64, index
      }
      memref.store %z64, %summary[%g66] : memref<?xi64>
      scf.yield %ws70#1 : index
    }
  }
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return
}
