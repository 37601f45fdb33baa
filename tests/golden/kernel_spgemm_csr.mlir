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
  %ktop = arith.constant 5 : index
  %ntop = arith.constant 3 : index
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
  %v7 = memref.dim %a_crd, %c0 : memref<?xi32>
  %v8 = arith.subi %v7, %c1 : index
  %v9 = arith.subi %v4, %c1 : index
  %v10 = arith.minui %v9, %v8 : index
  %b11 = arith.cmpi uge, %v5, %v6 : index
  scf.for %i12 = %c0 to %m step %c1 {
    %v13 = arith.index_cast %i12 : index to i32
    %v14 = arith.addi %i12, %c1 : index
    %v15 = memref.load %a_pos[%i12] : memref<?xi32>
    %v16 = arith.index_cast %v15 : i32 to index
    %v17 = memref.load %a_pos[%v14] : memref<?xi32>
    %v18 = arith.index_cast %v17 : i32 to index
    %v19 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v20 = arith.minui %v18, %v19 : index
    %v21 = arith.minui %v16, %v20 : index
    %rc24 = scf.for %p22 = %v21 to %v20 step %c1 iter_args(%u23 = %c0) -> (index) {
      scf.if %b11 {
        %v25 = arith.addi %p22, %pf32 : index
        %v26 = arith.minui %v25, %v10 : index
        %v27 = memref.load %a_crd[%v26] : memref<?xi32>
        %v28 = arith.index_cast %v27 : i32 to index
        %v29 = arith.minui %v28, %ktop : index
        memref.prefetch %b_pos[%v29], read, locality<3>, data : memref<?xi32>
        %v30 = arith.addi %p22, %pf16 : index
        %v31 = arith.minui %v30, %v10 : index
        %v32 = memref.load %a_crd[%v31] : memref<?xi32>
        %v33 = arith.index_cast %v32 : i32 to index
        %v34 = arith.minui %v33, %ktop : index
        %v35 = memref.load %b_pos[%v34] : memref<?xi32>
        %v36 = arith.index_cast %v35 : i32 to index
        memref.prefetch %b_crd[%v36], read, locality<3>, data : memref<?xi32>
      }
      %v37 = memref.load %a_crd[%p22] : memref<?xi32>
      %v38 = arith.index_cast %v37 : i32 to index
      %v39 = arith.minui %v38, %ktop : index
      %v40 = arith.addi %v39, %c1 : index
      %v41 = memref.load %b_pos[%v39] : memref<?xi32>
      %v42 = arith.index_cast %v41 : i32 to index
      %v43 = memref.load %b_pos[%v40] : memref<?xi32>
      %v44 = arith.index_cast %v43 : i32 to index
      %v45 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v46 = arith.minui %v44, %v45 : index
      %v47 = arith.minui %v42, %v46 : index
      %rc50 = scf.for %q48 = %v47 to %v46 step %c1 iter_args(%u49 = %u23) -> (index) {
        %v51 = memref.load %b_crd[%q48] : memref<?xi32>
        %v52 = arith.index_cast %v51 : i32 to index
        %v53 = arith.minui %v52, %ntop : index
        %v54 = memref.load %mark1[%v53] : memref<?xi32>
        %b55 = arith.cmpi ne, %v54, %v13 : i32
        %v56 = arith.select %b55, %c1, %c0 : index
        memref.store %v13, %mark1[%v53] : memref<?xi32>
        %v57 = arith.addi %u49, %v56 : index
        scf.yield %v57 : index
      }
      scf.yield %rc50 : index
    }
    %v58 = arith.index_cast %rc24 : index to i32
    memref.store %v58, %cpos[%v14] : memref<?xi32>
  }
  memref.dealloc %mark1 : memref<?xi32>
  %v59 = arith.index_cast %c0 : index to i32
  memref.store %v59, %cpos[%c0] : memref<?xi32>
  %nnz = scf.for %i = %c0 to %m step %c1 iter_args(%s = %c0) -> (index) {
    %v60 = arith.addi %i, %c1 : index
    %v61 = memref.load %cpos[%v60] : memref<?xi32>
    %v62 = arith.index_cast %v61 : i32 to index
    %v63 = arith.addi %s, %v62 : index
    %v64 = arith.index_cast %v63 : index to i32
    memref.store %v64, %cpos[%v60] : memref<?xi32>
    scf.yield %v63 : index
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
  %v65 = memref.load %a_pos[%m] : memref<?xi32>
  %v66 = arith.index_cast %v65 : i32 to index
  %v67 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v68 = arith.constant 87381 : index
  %v69 = memref.dim %a_crd, %c0 : memref<?xi32>
  %v70 = arith.subi %v69, %c1 : index
  %v71 = arith.subi %v66, %c1 : index
  %v72 = arith.minui %v71, %v70 : index
  %b73 = arith.cmpi uge, %v67, %v68 : index
  scf.for %i74 = %c0 to %m step %c1 {
    %v75 = arith.addi %i74, %c1 : index
    %v76 = memref.load %a_pos[%i74] : memref<?xi32>
    %v77 = arith.index_cast %v76 : i32 to index
    %v78 = memref.load %a_pos[%v75] : memref<?xi32>
    %v79 = arith.index_cast %v78 : i32 to index
    %v80 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v81 = arith.minui %v79, %v80 : index
    %v82 = arith.minui %v77, %v81 : index
    %span86:2 = scf.for %p83 = %v82 to %v81 step %c1 iter_args(%jl84 = %n, %jh85 = %c0) -> (index, index) {
      scf.if %b73 {
        %v87 = arith.addi %p83, %pf32 : index
        %v88 = arith.minui %v87, %v72 : index
        %v89 = memref.load %a_crd[%v88] : memref<?xi32>
        %v90 = arith.index_cast %v89 : i32 to index
        %v91 = arith.minui %v90, %ktop : index
        memref.prefetch %b_pos[%v91], read, locality<3>, data : memref<?xi32>
        %v92 = arith.addi %p83, %pf16 : index
        %v93 = arith.minui %v92, %v72 : index
        %v94 = memref.load %a_crd[%v93] : memref<?xi32>
        %v95 = arith.index_cast %v94 : i32 to index
        %v96 = arith.minui %v95, %ktop : index
        %v97 = memref.load %b_pos[%v96] : memref<?xi32>
        %v98 = arith.index_cast %v97 : i32 to index
        memref.prefetch %b_crd[%v98], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v98], read, locality<3>, data : memref<?xf64>
      }
      %v99 = memref.load %a_crd[%p83] : memref<?xi32>
      %v100 = arith.index_cast %v99 : i32 to index
      %v101 = arith.minui %v100, %ktop : index
      %v102 = memref.load %a_val[%p83] : memref<?xf64>
      %v103 = arith.addi %v101, %c1 : index
      %v104 = memref.load %b_pos[%v101] : memref<?xi32>
      %v105 = arith.index_cast %v104 : i32 to index
      %v106 = memref.load %b_pos[%v103] : memref<?xi32>
      %v107 = arith.index_cast %v106 : i32 to index
      %v108 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v109 = arith.minui %v107, %v108 : index
      %v110 = arith.minui %v105, %v109 : index
      %span114:2 = scf.for %q111 = %v110 to %v109 step %c1 iter_args(%jl112 = %jl84, %jh113 = %jh85) -> (index, index) {
        %v115 = memref.load %b_crd[%q111] : memref<?xi32>
        %v116 = arith.index_cast %v115 : i32 to index
        %v117 = arith.minui %v116, %ntop : index
        %v118 = memref.load %b_val[%q111] : memref<?xf64>
        %v119 = arith.mulf %v102, %v118 : f64
        %v120 = arith.shrui %v117, %c6 : index
        %v121 = arith.andi %v117, %c63 : index
        %v122 = arith.index_cast %v121 : index to i64
        %v123 = arith.shli %o64, %v122 : i64
        %v124 = memref.load %bits[%v120] : memref<?xi64>
        %v125 = arith.andi %v124, %v123 : i64
        %v126 = arith.cmpi eq, %v125, %z64 : i64
        scf.if %v126 {
          memref.store %v119, %work[%v117] : memref<?xf64>
          %v127 = arith.ori %v124, %v123 : i64
          memref.store %v127, %bits[%v120] : memref<?xi64>
          %v128 = arith.shrui %v120, %c6 : index
          %v129 = arith.andi %v120, %c63 : index
          %v130 = arith.index_cast %v129 : index to i64
          %v131 = arith.shli %o64, %v130 : i64
          %v132 = memref.load %summary[%v128] : memref<?xi64>
          %v133 = arith.ori %v132, %v131 : i64
          memref.store %v133, %summary[%v128] : memref<?xi64>
        } else {
          %v134 = memref.load %work[%v117] : memref<?xf64>
          %v135 = arith.addf %v134, %v119 : f64
          memref.store %v135, %work[%v117] : memref<?xf64>
        }
        %v136 = arith.minui %jl112, %v117 : index
        %v137 = arith.maxui %jh113, %v117 : index
        scf.yield %v136, %v137 : index, index
      }
      scf.yield %span114#0, %span114#1 : index, index
    }
    %v138 = memref.load %cpos[%i74] : memref<?xi32>
    %v139 = arith.index_cast %v138 : i32 to index
    %v140 = arith.shrui %span86#0, %c12 : index
    %v141 = arith.shrui %span86#1, %c12 : index
    %v142 = arith.addi %v141, %c1 : index
    %end145 = scf.for %g143 = %v140 to %v142 step %c1 iter_args(%off144 = %v139) -> (index) {
      %v146 = memref.load %summary[%g143] : memref<?xi64>
      %ws147:2 = scf.while (%wx148 = %v146, %wo149 = %off144) : (i64, index) -> (i64, index) {
        %b152 = arith.cmpi ne, %wx148, %z64 : i64
        scf.condition(%b152) %wx148, %wo149 : i64, index
      } do {
      ^bb0(%wx150: i64, %wo151: index):
        %v153 = math.cttz %wx150 : i64
        %v154 = arith.index_cast %v153 : i64 to index
        %v155 = arith.subi %wx150, %o64 : i64
        %v156 = arith.andi %wx150, %v155 : i64
        %v157 = arith.shli %g143, %c6 : index
        %v158 = arith.addi %v157, %v154 : index
        %v159 = arith.shli %v158, %c6 : index
        %v160 = memref.load %bits[%v158] : memref<?xi64>
        %ws161:2 = scf.while (%wx162 = %v160, %wo163 = %wo151) : (i64, index) -> (i64, index) {
          %b166 = arith.cmpi ne, %wx162, %z64 : i64
          scf.condition(%b166) %wx162, %wo163 : i64, index
        } do {
        ^bb0(%wx164: i64, %wo165: index):
          %v167 = math.cttz %wx164 : i64
          %v168 = arith.index_cast %v167 : i64 to index
          %v169 = arith.subi %wx164, %o64 : i64
          %v170 = arith.andi %wx164, %v169 : i64
          %v171 = arith.addi %v159, %v168 : index
          %v172 = arith.index_cast %v171 : index to i32
          memref.store %v172, %ccrd[%wo165] : memref<?xi32>
          %v173 = memref.load %work[%v171] : memref<?xf64>
          memref.store %v173, %cval[%wo165] : memref<?xf64>
          %v174 = arith.addi %wo165, %c1 : index
          scf.yield %v170, %v174 : i64, index
        }
        memref.store %z64, %bits[%v158] : memref<?xi64>
        scf.yield %v156, %ws161#1 : i64, index
      }
      memref.store %z64, %summary[%g143] : memref<?xi64>
      scf.yield %ws147#1 : index
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
  %ktop = arith.constant 5 : index
  %ntop = arith.constant 3 : index
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
  %v7 = memref.dim %a_crd, %c0 : memref<?xi32>
  %v8 = arith.subi %v7, %c1 : index
  %v9 = arith.subi %v4, %c1 : index
  %v10 = arith.minui %v9, %v8 : index
  %b11 = arith.cmpi uge, %v5, %v6 : index
  scf.for %i12 = %row_begin to %row_end step %c1 {
    %v13 = arith.index_cast %i12 : index to i32
    %v14 = arith.addi %i12, %c1 : index
    %v15 = memref.load %a_pos[%i12] : memref<?xi32>
    %v16 = arith.index_cast %v15 : i32 to index
    %v17 = memref.load %a_pos[%v14] : memref<?xi32>
    %v18 = arith.index_cast %v17 : i32 to index
    %v19 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v20 = arith.minui %v18, %v19 : index
    %v21 = arith.minui %v16, %v20 : index
    %rc24 = scf.for %p22 = %v21 to %v20 step %c1 iter_args(%u23 = %c0) -> (index) {
      scf.if %b11 {
        %v25 = arith.addi %p22, %pf32 : index
        %v26 = arith.minui %v25, %v10 : index
        %v27 = memref.load %a_crd[%v26] : memref<?xi32>
        %v28 = arith.index_cast %v27 : i32 to index
        %v29 = arith.minui %v28, %ktop : index
        memref.prefetch %b_pos[%v29], read, locality<3>, data : memref<?xi32>
        %v30 = arith.addi %p22, %pf16 : index
        %v31 = arith.minui %v30, %v10 : index
        %v32 = memref.load %a_crd[%v31] : memref<?xi32>
        %v33 = arith.index_cast %v32 : i32 to index
        %v34 = arith.minui %v33, %ktop : index
        %v35 = memref.load %b_pos[%v34] : memref<?xi32>
        %v36 = arith.index_cast %v35 : i32 to index
        memref.prefetch %b_crd[%v36], read, locality<3>, data : memref<?xi32>
      }
      %v37 = memref.load %a_crd[%p22] : memref<?xi32>
      %v38 = arith.index_cast %v37 : i32 to index
      %v39 = arith.minui %v38, %ktop : index
      %v40 = arith.addi %v39, %c1 : index
      %v41 = memref.load %b_pos[%v39] : memref<?xi32>
      %v42 = arith.index_cast %v41 : i32 to index
      %v43 = memref.load %b_pos[%v40] : memref<?xi32>
      %v44 = arith.index_cast %v43 : i32 to index
      %v45 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v46 = arith.minui %v44, %v45 : index
      %v47 = arith.minui %v42, %v46 : index
      %rc50 = scf.for %q48 = %v47 to %v46 step %c1 iter_args(%u49 = %u23) -> (index) {
        %v51 = memref.load %b_crd[%q48] : memref<?xi32>
        %v52 = arith.index_cast %v51 : i32 to index
        %v53 = arith.minui %v52, %ntop : index
        %v54 = memref.load %mark1[%v53] : memref<?xi32>
        %b55 = arith.cmpi ne, %v54, %v13 : i32
        %v56 = arith.select %b55, %c1, %c0 : index
        memref.store %v13, %mark1[%v53] : memref<?xi32>
        %v57 = arith.addi %u49, %v56 : index
        scf.yield %v57 : index
      }
      scf.yield %rc50 : index
    }
    %v58 = arith.index_cast %rc24 : index to i32
    memref.store %v58, %c_pos[%v14] : memref<?xi32>
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
  %ktop = arith.constant 5 : index
  %ntop = arith.constant 3 : index
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
  %v5 = memref.dim %a_crd, %c0 : memref<?xi32>
  %v6 = arith.subi %v5, %c1 : index
  %v7 = arith.subi %v2, %c1 : index
  %v8 = arith.minui %v7, %v6 : index
  %b9 = arith.cmpi uge, %v3, %v4 : index
  scf.for %i10 = %row_begin to %row_end step %c1 {
    %v11 = arith.addi %i10, %c1 : index
    %v12 = memref.load %a_pos[%i10] : memref<?xi32>
    %v13 = arith.index_cast %v12 : i32 to index
    %v14 = memref.load %a_pos[%v11] : memref<?xi32>
    %v15 = arith.index_cast %v14 : i32 to index
    %v16 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v17 = arith.minui %v15, %v16 : index
    %v18 = arith.minui %v13, %v17 : index
    %span22:2 = scf.for %p19 = %v18 to %v17 step %c1 iter_args(%jl20 = %n, %jh21 = %c0) -> (index, index) {
      scf.if %b9 {
        %v23 = arith.addi %p19, %pf32 : index
        %v24 = arith.minui %v23, %v8 : index
        %v25 = memref.load %a_crd[%v24] : memref<?xi32>
        %v26 = arith.index_cast %v25 : i32 to index
        %v27 = arith.minui %v26, %ktop : index
        memref.prefetch %b_pos[%v27], read, locality<3>, data : memref<?xi32>
        %v28 = arith.addi %p19, %pf16 : index
        %v29 = arith.minui %v28, %v8 : index
        %v30 = memref.load %a_crd[%v29] : memref<?xi32>
        %v31 = arith.index_cast %v30 : i32 to index
        %v32 = arith.minui %v31, %ktop : index
        %v33 = memref.load %b_pos[%v32] : memref<?xi32>
        %v34 = arith.index_cast %v33 : i32 to index
        memref.prefetch %b_crd[%v34], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v34], read, locality<3>, data : memref<?xf64>
      }
      %v35 = memref.load %a_crd[%p19] : memref<?xi32>
      %v36 = arith.index_cast %v35 : i32 to index
      %v37 = arith.minui %v36, %ktop : index
      %v38 = memref.load %a_val[%p19] : memref<?xf64>
      %v39 = arith.addi %v37, %c1 : index
      %v40 = memref.load %b_pos[%v37] : memref<?xi32>
      %v41 = arith.index_cast %v40 : i32 to index
      %v42 = memref.load %b_pos[%v39] : memref<?xi32>
      %v43 = arith.index_cast %v42 : i32 to index
      %v44 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v45 = arith.minui %v43, %v44 : index
      %v46 = arith.minui %v41, %v45 : index
      %span50:2 = scf.for %q47 = %v46 to %v45 step %c1 iter_args(%jl48 = %jl20, %jh49 = %jh21) -> (index, index) {
        %v51 = memref.load %b_crd[%q47] : memref<?xi32>
        %v52 = arith.index_cast %v51 : i32 to index
        %v53 = arith.minui %v52, %ntop : index
        %v54 = memref.load %b_val[%q47] : memref<?xf64>
        %v55 = arith.mulf %v38, %v54 : f64
        %v56 = arith.shrui %v53, %c6 : index
        %v57 = arith.andi %v53, %c63 : index
        %v58 = arith.index_cast %v57 : index to i64
        %v59 = arith.shli %o64, %v58 : i64
        %v60 = memref.load %bits[%v56] : memref<?xi64>
        %v61 = arith.andi %v60, %v59 : i64
        %v62 = arith.cmpi eq, %v61, %z64 : i64
        scf.if %v62 {
          memref.store %v55, %work[%v53] : memref<?xf64>
          %v63 = arith.ori %v60, %v59 : i64
          memref.store %v63, %bits[%v56] : memref<?xi64>
          %v64 = arith.shrui %v56, %c6 : index
          %v65 = arith.andi %v56, %c63 : index
          %v66 = arith.index_cast %v65 : index to i64
          %v67 = arith.shli %o64, %v66 : i64
          %v68 = memref.load %summary[%v64] : memref<?xi64>
          %v69 = arith.ori %v68, %v67 : i64
          memref.store %v69, %summary[%v64] : memref<?xi64>
        } else {
          %v70 = memref.load %work[%v53] : memref<?xf64>
          %v71 = arith.addf %v70, %v55 : f64
          memref.store %v71, %work[%v53] : memref<?xf64>
        }
        %v72 = arith.minui %jl48, %v53 : index
        %v73 = arith.maxui %jh49, %v53 : index
        scf.yield %v72, %v73 : index, index
      }
      scf.yield %span50#0, %span50#1 : index, index
    }
    %v74 = memref.load %c_pos[%i10] : memref<?xi32>
    %v75 = arith.index_cast %v74 : i32 to index
    %v76 = arith.shrui %span22#0, %c12 : index
    %v77 = arith.shrui %span22#1, %c12 : index
    %v78 = arith.addi %v77, %c1 : index
    %end81 = scf.for %g79 = %v76 to %v78 step %c1 iter_args(%off80 = %v75) -> (index) {
      %v82 = memref.load %summary[%g79] : memref<?xi64>
      %ws83:2 = scf.while (%wx84 = %v82, %wo85 = %off80) : (i64, index) -> (i64, index) {
        %b88 = arith.cmpi ne, %wx84, %z64 : i64
        scf.condition(%b88) %wx84, %wo85 : i64, index
      } do {
      ^bb0(%wx86: i64, %wo87: index):
        %v89 = math.cttz %wx86 : i64
        %v90 = arith.index_cast %v89 : i64 to index
        %v91 = arith.subi %wx86, %o64 : i64
        %v92 = arith.andi %wx86, %v91 : i64
        %v93 = arith.shli %g79, %c6 : index
        %v94 = arith.addi %v93, %v90 : index
        %v95 = arith.shli %v94, %c6 : index
        %v96 = memref.load %bits[%v94] : memref<?xi64>
        %ws97:2 = scf.while (%wx98 = %v96, %wo99 = %wo87) : (i64, index) -> (i64, index) {
          %b102 = arith.cmpi ne, %wx98, %z64 : i64
          scf.condition(%b102) %wx98, %wo99 : i64, index
        } do {
        ^bb0(%wx100: i64, %wo101: index):
          %v103 = math.cttz %wx100 : i64
          %v104 = arith.index_cast %v103 : i64 to index
          %v105 = arith.subi %wx100, %o64 : i64
          %v106 = arith.andi %wx100, %v105 : i64
          %v107 = arith.addi %v95, %v104 : index
          %v108 = arith.index_cast %v107 : index to i32
          memref.store %v108, %c_crd[%wo101] : memref<?xi32>
          %v109 = memref.load %work[%v107] : memref<?xf64>
          memref.store %v109, %c_val[%wo101] : memref<?xf64>
          %v110 = arith.addi %wo101, %c1 : index
          scf.yield %v106, %v110 : i64, index
        }
        memref.store %z64, %bits[%v94] : memref<?xi64>
        scf.yield %v92, %ws97#1 : i64, index
      }
      memref.store %z64, %summary[%g79] : memref<?xi64>
      scf.yield %ws83#1 : index
    }
  }
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return
}
