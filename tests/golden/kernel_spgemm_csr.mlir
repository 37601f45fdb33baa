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
    %v15 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v16 = arith.constant 2147483647 : index
    %v17 = arith.minui %v15, %v16 : index
    %v18 = arith.index_cast %v17 : index to i32
    %v19 = memref.load %a_pos[%v14] : memref<?xi32>
    %v20 = arith.minui %v19, %v18 : i32
    %v21 = memref.load %a_pos[%i12] : memref<?xi32>
    %v22 = arith.minui %v21, %v20 : i32
    %v23 = arith.index_castui %v22 : i32 to index
    %v24 = arith.index_castui %v20 : i32 to index
    %rc27 = scf.for %p25 = %v23 to %v24 step %c1 iter_args(%u26 = %c0) -> (index) {
      scf.if %b11 {
        %v28 = arith.addi %p25, %pf32 : index
        %v29 = arith.minui %v28, %v10 : index
        %v30 = memref.load %a_crd[%v29] : memref<?xi32>
        %v31 = arith.constant 5 : i32
        %v32 = arith.minui %v30, %v31 : i32
        %v33 = arith.index_castui %v32 : i32 to index
        memref.prefetch %b_pos[%v33], read, locality<3>, data : memref<?xi32>
        %v34 = arith.addi %p25, %pf16 : index
        %v35 = arith.minui %v34, %v10 : index
        %v36 = memref.load %a_crd[%v35] : memref<?xi32>
        %v37 = arith.constant 5 : i32
        %v38 = arith.minui %v36, %v37 : i32
        %v39 = arith.index_castui %v38 : i32 to index
        %v40 = memref.load %b_pos[%v39] : memref<?xi32>
        %v41 = arith.index_cast %v40 : i32 to index
        memref.prefetch %b_crd[%v41], read, locality<3>, data : memref<?xi32>
      }
      %v42 = memref.load %a_crd[%p25] : memref<?xi32>
      %v43 = arith.constant 5 : i32
      %v44 = arith.minui %v42, %v43 : i32
      %v45 = arith.index_castui %v44 : i32 to index
      %v46 = arith.addi %v45, %c1 : index
      %v47 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v48 = arith.constant 2147483647 : index
      %v49 = arith.minui %v47, %v48 : index
      %v50 = arith.index_cast %v49 : index to i32
      %v51 = memref.load %b_pos[%v46] : memref<?xi32>
      %v52 = arith.minui %v51, %v50 : i32
      %v53 = memref.load %b_pos[%v45] : memref<?xi32>
      %v54 = arith.minui %v53, %v52 : i32
      %v55 = arith.index_castui %v54 : i32 to index
      %v56 = arith.index_castui %v52 : i32 to index
      %rc59 = scf.for %q57 = %v55 to %v56 step %c1 iter_args(%u58 = %u26) -> (index) {
        %v60 = memref.load %b_crd[%q57] : memref<?xi32>
        %v61 = arith.constant 3 : i32
        %v62 = arith.minui %v60, %v61 : i32
        %v63 = arith.index_castui %v62 : i32 to index
        %v64 = memref.load %mark1[%v63] : memref<?xi32>
        %b65 = arith.cmpi ne, %v64, %v13 : i32
        %v66 = arith.select %b65, %c1, %c0 : index
        memref.store %v13, %mark1[%v63] : memref<?xi32>
        %v67 = arith.addi %u58, %v66 : index
        scf.yield %v67 : index
      }
      scf.yield %rc59 : index
    }
    %v68 = arith.index_cast %rc27 : index to i32
    memref.store %v68, %cpos[%v14] : memref<?xi32>
  }
  memref.dealloc %mark1 : memref<?xi32>
  %v69 = arith.index_cast %c0 : index to i32
  memref.store %v69, %cpos[%c0] : memref<?xi32>
  %nnz = scf.for %i = %c0 to %m step %c1 iter_args(%s = %c0) -> (index) {
    %v70 = arith.addi %i, %c1 : index
    %v71 = memref.load %cpos[%v70] : memref<?xi32>
    %v72 = arith.index_cast %v71 : i32 to index
    %v73 = arith.addi %s, %v72 : index
    %v74 = arith.index_cast %v73 : index to i32
    memref.store %v74, %cpos[%v70] : memref<?xi32>
    scf.yield %v73 : index
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
  %v75 = memref.load %a_pos[%m] : memref<?xi32>
  %v76 = arith.index_cast %v75 : i32 to index
  %v77 = memref.dim %b_crd, %c0 : memref<?xi32>
  %v78 = arith.constant 87381 : index
  %v79 = memref.dim %a_crd, %c0 : memref<?xi32>
  %v80 = arith.subi %v79, %c1 : index
  %v81 = arith.subi %v76, %c1 : index
  %v82 = arith.minui %v81, %v80 : index
  %b83 = arith.cmpi uge, %v77, %v78 : index
  scf.for %i84 = %c0 to %m step %c1 {
    %v85 = arith.addi %i84, %c1 : index
    %v86 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v87 = arith.constant 2147483647 : index
    %v88 = arith.minui %v86, %v87 : index
    %v89 = arith.index_cast %v88 : index to i32
    %v90 = memref.load %a_pos[%v85] : memref<?xi32>
    %v91 = arith.minui %v90, %v89 : i32
    %v92 = memref.load %a_pos[%i84] : memref<?xi32>
    %v93 = arith.minui %v92, %v91 : i32
    %v94 = arith.index_castui %v93 : i32 to index
    %v95 = arith.index_castui %v91 : i32 to index
    %span99:2 = scf.for %p96 = %v94 to %v95 step %c1 iter_args(%jl97 = %n, %jh98 = %c0) -> (index, index) {
      scf.if %b83 {
        %v100 = arith.addi %p96, %pf32 : index
        %v101 = arith.minui %v100, %v82 : index
        %v102 = memref.load %a_crd[%v101] : memref<?xi32>
        %v103 = arith.constant 5 : i32
        %v104 = arith.minui %v102, %v103 : i32
        %v105 = arith.index_castui %v104 : i32 to index
        memref.prefetch %b_pos[%v105], read, locality<3>, data : memref<?xi32>
        %v106 = arith.addi %p96, %pf16 : index
        %v107 = arith.minui %v106, %v82 : index
        %v108 = memref.load %a_crd[%v107] : memref<?xi32>
        %v109 = arith.constant 5 : i32
        %v110 = arith.minui %v108, %v109 : i32
        %v111 = arith.index_castui %v110 : i32 to index
        %v112 = memref.load %b_pos[%v111] : memref<?xi32>
        %v113 = arith.index_cast %v112 : i32 to index
        memref.prefetch %b_crd[%v113], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v113], read, locality<3>, data : memref<?xf64>
      }
      %v114 = memref.load %a_crd[%p96] : memref<?xi32>
      %v115 = arith.constant 5 : i32
      %v116 = arith.minui %v114, %v115 : i32
      %v117 = arith.index_castui %v116 : i32 to index
      %v118 = memref.load %a_val[%p96] : memref<?xf64>
      %v119 = arith.addi %v117, %c1 : index
      %v120 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v121 = arith.constant 2147483647 : index
      %v122 = arith.minui %v120, %v121 : index
      %v123 = arith.index_cast %v122 : index to i32
      %v124 = memref.load %b_pos[%v119] : memref<?xi32>
      %v125 = arith.minui %v124, %v123 : i32
      %v126 = memref.load %b_pos[%v117] : memref<?xi32>
      %v127 = arith.minui %v126, %v125 : i32
      %v128 = arith.index_castui %v127 : i32 to index
      %v129 = arith.index_castui %v125 : i32 to index
      %span133:2 = scf.for %q130 = %v128 to %v129 step %c1 iter_args(%jl131 = %jl97, %jh132 = %jh98) -> (index, index) {
        %v134 = memref.load %b_crd[%q130] : memref<?xi32>
        %v135 = arith.constant 3 : i32
        %v136 = arith.minui %v134, %v135 : i32
        %v137 = arith.index_castui %v136 : i32 to index
        %v138 = memref.load %b_val[%q130] : memref<?xf64>
        %v139 = arith.mulf %v118, %v138 : f64
        %v140 = arith.shrui %v137, %c6 : index
        %v141 = arith.andi %v137, %c63 : index
        %v142 = arith.index_cast %v141 : index to i64
        %v143 = arith.shli %o64, %v142 : i64
        %v144 = memref.load %bits[%v140] : memref<?xi64>
        %v145 = arith.andi %v144, %v143 : i64
        %v146 = arith.cmpi eq, %v145, %z64 : i64
        scf.if %v146 {
          memref.store %v139, %work[%v137] : memref<?xf64>
          %v147 = arith.ori %v144, %v143 : i64
          memref.store %v147, %bits[%v140] : memref<?xi64>
          %v148 = arith.shrui %v140, %c6 : index
          %v149 = arith.andi %v140, %c63 : index
          %v150 = arith.index_cast %v149 : index to i64
          %v151 = arith.shli %o64, %v150 : i64
          %v152 = memref.load %summary[%v148] : memref<?xi64>
          %v153 = arith.ori %v152, %v151 : i64
          memref.store %v153, %summary[%v148] : memref<?xi64>
        } else {
          %v154 = memref.load %work[%v137] : memref<?xf64>
          %v155 = arith.addf %v154, %v139 : f64
          memref.store %v155, %work[%v137] : memref<?xf64>
        }
        %v156 = arith.minui %jl131, %v137 : index
        %v157 = arith.maxui %jh132, %v137 : index
        scf.yield %v156, %v157 : index, index
      }
      scf.yield %span133#0, %span133#1 : index, index
    }
    %v158 = memref.load %cpos[%i84] : memref<?xi32>
    %v159 = arith.index_cast %v158 : i32 to index
    %v160 = arith.shrui %span99#0, %c12 : index
    %v161 = arith.shrui %span99#1, %c12 : index
    %v162 = arith.addi %v161, %c1 : index
    %end165 = scf.for %g163 = %v160 to %v162 step %c1 iter_args(%off164 = %v159) -> (index) {
      %v166 = memref.load %summary[%g163] : memref<?xi64>
      %ws167:2 = scf.while (%wx168 = %v166, %wo169 = %off164) : (i64, index) -> (i64, index) {
        %b172 = arith.cmpi ne, %wx168, %z64 : i64
        scf.condition(%b172) %wx168, %wo169 : i64, index
      } do {
      ^bb0(%wx170: i64, %wo171: index):
        %v173 = math.cttz %wx170 : i64
        %v174 = arith.index_cast %v173 : i64 to index
        %v175 = arith.subi %wx170, %o64 : i64
        %v176 = arith.andi %wx170, %v175 : i64
        %v177 = arith.shli %g163, %c6 : index
        %v178 = arith.addi %v177, %v174 : index
        %v179 = arith.shli %v178, %c6 : index
        %v180 = memref.load %bits[%v178] : memref<?xi64>
        %ws181:2 = scf.while (%wx182 = %v180, %wo183 = %wo171) : (i64, index) -> (i64, index) {
          %b186 = arith.cmpi ne, %wx182, %z64 : i64
          scf.condition(%b186) %wx182, %wo183 : i64, index
        } do {
        ^bb0(%wx184: i64, %wo185: index):
          %v187 = math.cttz %wx184 : i64
          %v188 = arith.index_cast %v187 : i64 to index
          %v189 = arith.subi %wx184, %o64 : i64
          %v190 = arith.andi %wx184, %v189 : i64
          %v191 = arith.addi %v179, %v188 : index
          %v192 = arith.index_cast %v191 : index to i32
          memref.store %v192, %ccrd[%wo185] : memref<?xi32>
          %v193 = memref.load %work[%v191] : memref<?xf64>
          memref.store %v193, %cval[%wo185] : memref<?xf64>
          %v194 = arith.addi %wo185, %c1 : index
          scf.yield %v190, %v194 : i64, index
        }
        memref.store %z64, %bits[%v178] : memref<?xi64>
        scf.yield %v176, %ws181#1 : i64, index
      }
      memref.store %z64, %summary[%g163] : memref<?xi64>
      scf.yield %ws167#1 : index
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
    %v15 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v16 = arith.constant 2147483647 : index
    %v17 = arith.minui %v15, %v16 : index
    %v18 = arith.index_cast %v17 : index to i32
    %v19 = memref.load %a_pos[%v14] : memref<?xi32>
    %v20 = arith.minui %v19, %v18 : i32
    %v21 = memref.load %a_pos[%i12] : memref<?xi32>
    %v22 = arith.minui %v21, %v20 : i32
    %v23 = arith.index_castui %v22 : i32 to index
    %v24 = arith.index_castui %v20 : i32 to index
    %rc27 = scf.for %p25 = %v23 to %v24 step %c1 iter_args(%u26 = %c0) -> (index) {
      scf.if %b11 {
        %v28 = arith.addi %p25, %pf32 : index
        %v29 = arith.minui %v28, %v10 : index
        %v30 = memref.load %a_crd[%v29] : memref<?xi32>
        %v31 = arith.constant 5 : i32
        %v32 = arith.minui %v30, %v31 : i32
        %v33 = arith.index_castui %v32 : i32 to index
        memref.prefetch %b_pos[%v33], read, locality<3>, data : memref<?xi32>
        %v34 = arith.addi %p25, %pf16 : index
        %v35 = arith.minui %v34, %v10 : index
        %v36 = memref.load %a_crd[%v35] : memref<?xi32>
        %v37 = arith.constant 5 : i32
        %v38 = arith.minui %v36, %v37 : i32
        %v39 = arith.index_castui %v38 : i32 to index
        %v40 = memref.load %b_pos[%v39] : memref<?xi32>
        %v41 = arith.index_cast %v40 : i32 to index
        memref.prefetch %b_crd[%v41], read, locality<3>, data : memref<?xi32>
      }
      %v42 = memref.load %a_crd[%p25] : memref<?xi32>
      %v43 = arith.constant 5 : i32
      %v44 = arith.minui %v42, %v43 : i32
      %v45 = arith.index_castui %v44 : i32 to index
      %v46 = arith.addi %v45, %c1 : index
      %v47 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v48 = arith.constant 2147483647 : index
      %v49 = arith.minui %v47, %v48 : index
      %v50 = arith.index_cast %v49 : index to i32
      %v51 = memref.load %b_pos[%v46] : memref<?xi32>
      %v52 = arith.minui %v51, %v50 : i32
      %v53 = memref.load %b_pos[%v45] : memref<?xi32>
      %v54 = arith.minui %v53, %v52 : i32
      %v55 = arith.index_castui %v54 : i32 to index
      %v56 = arith.index_castui %v52 : i32 to index
      %rc59 = scf.for %q57 = %v55 to %v56 step %c1 iter_args(%u58 = %u26) -> (index) {
        %v60 = memref.load %b_crd[%q57] : memref<?xi32>
        %v61 = arith.constant 3 : i32
        %v62 = arith.minui %v60, %v61 : i32
        %v63 = arith.index_castui %v62 : i32 to index
        %v64 = memref.load %mark1[%v63] : memref<?xi32>
        %b65 = arith.cmpi ne, %v64, %v13 : i32
        %v66 = arith.select %b65, %c1, %c0 : index
        memref.store %v13, %mark1[%v63] : memref<?xi32>
        %v67 = arith.addi %u58, %v66 : index
        scf.yield %v67 : index
      }
      scf.yield %rc59 : index
    }
    %v68 = arith.index_cast %rc27 : index to i32
    memref.store %v68, %c_pos[%v14] : memref<?xi32>
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
    %v12 = memref.dim %a_crd, %c0 : memref<?xi32>
    %v13 = arith.constant 2147483647 : index
    %v14 = arith.minui %v12, %v13 : index
    %v15 = arith.index_cast %v14 : index to i32
    %v16 = memref.load %a_pos[%v11] : memref<?xi32>
    %v17 = arith.minui %v16, %v15 : i32
    %v18 = memref.load %a_pos[%i10] : memref<?xi32>
    %v19 = arith.minui %v18, %v17 : i32
    %v20 = arith.index_castui %v19 : i32 to index
    %v21 = arith.index_castui %v17 : i32 to index
    %span25:2 = scf.for %p22 = %v20 to %v21 step %c1 iter_args(%jl23 = %n, %jh24 = %c0) -> (index, index) {
      scf.if %b9 {
        %v26 = arith.addi %p22, %pf32 : index
        %v27 = arith.minui %v26, %v8 : index
        %v28 = memref.load %a_crd[%v27] : memref<?xi32>
        %v29 = arith.constant 5 : i32
        %v30 = arith.minui %v28, %v29 : i32
        %v31 = arith.index_castui %v30 : i32 to index
        memref.prefetch %b_pos[%v31], read, locality<3>, data : memref<?xi32>
        %v32 = arith.addi %p22, %pf16 : index
        %v33 = arith.minui %v32, %v8 : index
        %v34 = memref.load %a_crd[%v33] : memref<?xi32>
        %v35 = arith.constant 5 : i32
        %v36 = arith.minui %v34, %v35 : i32
        %v37 = arith.index_castui %v36 : i32 to index
        %v38 = memref.load %b_pos[%v37] : memref<?xi32>
        %v39 = arith.index_cast %v38 : i32 to index
        memref.prefetch %b_crd[%v39], read, locality<3>, data : memref<?xi32>
        memref.prefetch %b_val[%v39], read, locality<3>, data : memref<?xf64>
      }
      %v40 = memref.load %a_crd[%p22] : memref<?xi32>
      %v41 = arith.constant 5 : i32
      %v42 = arith.minui %v40, %v41 : i32
      %v43 = arith.index_castui %v42 : i32 to index
      %v44 = memref.load %a_val[%p22] : memref<?xf64>
      %v45 = arith.addi %v43, %c1 : index
      %v46 = memref.dim %b_crd, %c0 : memref<?xi32>
      %v47 = arith.constant 2147483647 : index
      %v48 = arith.minui %v46, %v47 : index
      %v49 = arith.index_cast %v48 : index to i32
      %v50 = memref.load %b_pos[%v45] : memref<?xi32>
      %v51 = arith.minui %v50, %v49 : i32
      %v52 = memref.load %b_pos[%v43] : memref<?xi32>
      %v53 = arith.minui %v52, %v51 : i32
      %v54 = arith.index_castui %v53 : i32 to index
      %v55 = arith.index_castui %v51 : i32 to index
      %span59:2 = scf.for %q56 = %v54 to %v55 step %c1 iter_args(%jl57 = %jl23, %jh58 = %jh24) -> (index, index) {
        %v60 = memref.load %b_crd[%q56] : memref<?xi32>
        %v61 = arith.constant 3 : i32
        %v62 = arith.minui %v60, %v61 : i32
        %v63 = arith.index_castui %v62 : i32 to index
        %v64 = memref.load %b_val[%q56] : memref<?xf64>
        %v65 = arith.mulf %v44, %v64 : f64
        %v66 = arith.shrui %v63, %c6 : index
        %v67 = arith.andi %v63, %c63 : index
        %v68 = arith.index_cast %v67 : index to i64
        %v69 = arith.shli %o64, %v68 : i64
        %v70 = memref.load %bits[%v66] : memref<?xi64>
        %v71 = arith.andi %v70, %v69 : i64
        %v72 = arith.cmpi eq, %v71, %z64 : i64
        scf.if %v72 {
          memref.store %v65, %work[%v63] : memref<?xf64>
          %v73 = arith.ori %v70, %v69 : i64
          memref.store %v73, %bits[%v66] : memref<?xi64>
          %v74 = arith.shrui %v66, %c6 : index
          %v75 = arith.andi %v66, %c63 : index
          %v76 = arith.index_cast %v75 : index to i64
          %v77 = arith.shli %o64, %v76 : i64
          %v78 = memref.load %summary[%v74] : memref<?xi64>
          %v79 = arith.ori %v78, %v77 : i64
          memref.store %v79, %summary[%v74] : memref<?xi64>
        } else {
          %v80 = memref.load %work[%v63] : memref<?xf64>
          %v81 = arith.addf %v80, %v65 : f64
          memref.store %v81, %work[%v63] : memref<?xf64>
        }
        %v82 = arith.minui %jl57, %v63 : index
        %v83 = arith.maxui %jh58, %v63 : index
        scf.yield %v82, %v83 : index, index
      }
      scf.yield %span59#0, %span59#1 : index, index
    }
    %v84 = memref.load %c_pos[%i10] : memref<?xi32>
    %v85 = arith.index_cast %v84 : i32 to index
    %v86 = arith.shrui %span25#0, %c12 : index
    %v87 = arith.shrui %span25#1, %c12 : index
    %v88 = arith.addi %v87, %c1 : index
    %end91 = scf.for %g89 = %v86 to %v88 step %c1 iter_args(%off90 = %v85) -> (index) {
      %v92 = memref.load %summary[%g89] : memref<?xi64>
      %ws93:2 = scf.while (%wx94 = %v92, %wo95 = %off90) : (i64, index) -> (i64, index) {
        %b98 = arith.cmpi ne, %wx94, %z64 : i64
        scf.condition(%b98) %wx94, %wo95 : i64, index
      } do {
      ^bb0(%wx96: i64, %wo97: index):
        %v99 = math.cttz %wx96 : i64
        %v100 = arith.index_cast %v99 : i64 to index
        %v101 = arith.subi %wx96, %o64 : i64
        %v102 = arith.andi %wx96, %v101 : i64
        %v103 = arith.shli %g89, %c6 : index
        %v104 = arith.addi %v103, %v100 : index
        %v105 = arith.shli %v104, %c6 : index
        %v106 = memref.load %bits[%v104] : memref<?xi64>
        %ws107:2 = scf.while (%wx108 = %v106, %wo109 = %wo97) : (i64, index) -> (i64, index) {
          %b112 = arith.cmpi ne, %wx108, %z64 : i64
          scf.condition(%b112) %wx108, %wo109 : i64, index
        } do {
        ^bb0(%wx110: i64, %wo111: index):
          %v113 = math.cttz %wx110 : i64
          %v114 = arith.index_cast %v113 : i64 to index
          %v115 = arith.subi %wx110, %o64 : i64
          %v116 = arith.andi %wx110, %v115 : i64
          %v117 = arith.addi %v105, %v114 : index
          %v118 = arith.index_cast %v117 : index to i32
          memref.store %v118, %c_crd[%wo111] : memref<?xi32>
          %v119 = memref.load %work[%v117] : memref<?xf64>
          memref.store %v119, %c_val[%wo111] : memref<?xf64>
          %v120 = arith.addi %wo111, %c1 : index
          scf.yield %v116, %v120 : i64, index
        }
        memref.store %z64, %bits[%v104] : memref<?xi64>
        scf.yield %v102, %ws107#1 : i64, index
      }
      memref.store %z64, %summary[%g89] : memref<?xi64>
      scf.yield %ws93#1 : index
    }
  }
  memref.dealloc %bits : memref<?xi64>
  memref.dealloc %summary : memref<?xi64>
  memref.dealloc %work : memref<?xf64>
  return
}
