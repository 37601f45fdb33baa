// Golden IR: emitter_diai_spmv (emitter path)
// y = A x, A DIA-I 8x8 (diagonals by rows)
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0_pos0: memref<?xi64>, %in0_crd0: memref<?xi64>, %in0_val: memref<?xf64>, %in1: memref<8xf64>) -> memref<8xf64> attributes {llvm.emit_c_interface} {
  %c2 = arith.constant 65536 : index
  %c3 = arith.constant 0 : index
  %c4 = arith.constant 8 : index
  %c10 = arith.constant 1 : index
  %c20 = arith.constant -7 : index
  %c24 = arith.constant 14 : index
  %k36 = arith.constant 0.00000000000000000e+00 : f64
  %c63 = arith.constant 32 : index
  %k69 = arith.constant 0.00000000000000000e+00 : f64
  %c98 = arith.constant 16 : index
  %c105 = arith.constant 24 : index
  %k117 = arith.constant 0.00000000000000000e+00 : f64
  %k133 = arith.constant 0.00000000000000000e+00 : f64
  %out1 = memref.alloc() : memref<8xf64>
  scf.parallel (%iv5) = (%c3) to (%c4) step (%c2) {
    %i6 = arith.addi %iv5, %c2 : index
    %i7 = arith.minsi %i6, %c4 : index
    %l8 = memref.load %in0_pos0[%c3] : memref<?xi64>
    %i9 = arith.index_cast %l8 : i64 to index
    %l11 = memref.load %in0_pos0[%c10] : memref<?xi64>
    %i12 = arith.index_cast %l11 : i64 to index
    %i13 = memref.dim %in0_crd0, %c3 : memref<?xi64>
    %i14 = arith.minui %i12, %i13 : index
    %i15 = arith.minui %i9, %i14 : index
    %r19:2 = scf.for %iv16 = %i15 to %i14 step %c10 iter_args(%a17 = %c3, %a18 = %c3) -> (index, index) {
      %l21 = memref.load %in0_crd0[%iv16] : memref<?xi64>
      %i22 = arith.index_cast %l21 : i64 to index
      %i23 = arith.subi %i22, %c20 : index
      %i25 = arith.minui %i23, %c24 : index
      %i26 = arith.addi %i25, %c20 : index
      %i27 = arith.minsi %a17, %i26 : index
      %i28 = arith.maxsi %a18, %i26 : index
      scf.yield %i27, %i28 : index, index
    }
    %i29 = arith.subi %c3, %r19#0 : index
    %i30 = arith.maxsi %iv5, %i29 : index
    %i31 = arith.minsi %i30, %i7 : index
    %i32 = arith.minsi %i7, %c4 : index
    %i33 = arith.subi %c4, %r19#1 : index
    %i34 = arith.minsi %i32, %i33 : index
    %i35 = arith.maxsi %i34, %i31 : index
    scf.for %iv37 = %iv5 to %i31 step %c10 {
      memref.store %k36, %out1[%iv37] : memref<8xf64>
    }
    scf.for %iv39 = %i15 to %i14 step %c10 {
      %l41 = memref.load %in0_crd0[%iv39] : memref<?xi64>
      %i42 = arith.index_cast %l41 : i64 to index
      %i43 = arith.subi %i42, %c20 : index
      %i44 = arith.minui %i43, %c24 : index
      %i45 = arith.addi %i44, %c20 : index
      %i46 = arith.subi %c3, %i45 : index
      %i47 = arith.maxsi %iv5, %i46 : index
      %i48 = arith.minsi %i31, %c4 : index
      %i49 = arith.subi %c4, %i45 : index
      %i50 = arith.minsi %i48, %i49 : index
      %i51 = arith.maxsi %i50, %i47 : index
      %i52 = arith.muli %iv39, %c4 : index
      scf.for %iv53 = %i47 to %i51 step %c10 {
        %i55 = arith.addi %i52, %iv53 : index
        %i56 = arith.addi %iv53, %i45 : index
        %v57 = memref.load %in0_val[%i55] : memref<?xf64>
        %v58 = memref.load %in1[%i56] : memref<8xf64>
        %v59 = memref.load %out1[%iv53] : memref<8xf64>
        %v60 = arith.mulf %v57, %v58 fastmath<contract> : f64
        %v61 = arith.addf %v59, %v60 fastmath<contract> : f64
        memref.store %v61, %out1[%iv53] : memref<8xf64>
      }
    }
    %i62 = arith.subi %i35, %i31 : index
    %i64 = arith.remui %i62, %c63 : index
    %i65 = arith.subi %i62, %i64 : index
    %i66 = arith.addi %i31, %i65 : index
    scf.for %iv67 = %i31 to %i66 step %c63 {
      %s70 = vector.broadcast %k69 : f64 to vector<8xf64>
      %s71 = vector.broadcast %k69 : f64 to vector<8xf64>
      %s72 = vector.broadcast %k69 : f64 to vector<8xf64>
      %s73 = vector.broadcast %k69 : f64 to vector<8xf64>
      %r79:4 = scf.for %iv74 = %i15 to %i14 step %c10 iter_args(%a75 = %s70, %a76 = %s71, %a77 = %s72, %a78 = %s73) -> (vector<8xf64>, vector<8xf64>, vector<8xf64>, vector<8xf64>) {
        %l80 = memref.load %in0_crd0[%iv74] : memref<?xi64>
        %i81 = arith.index_cast %l80 : i64 to index
        %i82 = arith.subi %i81, %c20 : index
        %i83 = arith.minui %i82, %c24 : index
        %i84 = arith.addi %i83, %c20 : index
        %i85 = arith.muli %iv74, %c4 : index
        %i86 = arith.addi %i85, %iv67 : index
        %i87 = arith.addi %iv67, %i84 : index
        %v88 = vector.load %in0_val[%i86] : memref<?xf64>, vector<8xf64>
        %v89 = vector.load %in1[%i87] : memref<8xf64>, vector<8xf64>
        %v90 = arith.mulf %v88, %v89 fastmath<contract> : vector<8xf64>
        %v91 = arith.addf %a75, %v90 fastmath<contract> : vector<8xf64>
        %i92 = arith.addi %i86, %c4 : index
        %v93 = vector.load %in0_val[%i92] : memref<?xf64>, vector<8xf64>
        %i94 = arith.addi %i87, %c4 : index
        %v95 = vector.load %in1[%i94] : memref<8xf64>, vector<8xf64>
        %v96 = arith.mulf %v93, %v95 fastmath<contract> : vector<8xf64>
        %v97 = arith.addf %a76, %v96 fastmath<contract> : vector<8xf64>
        %i99 = arith.addi %i86, %c98 : index
        %v100 = vector.load %in0_val[%i99] : memref<?xf64>, vector<8xf64>
        %i101 = arith.addi %i87, %c98 : index
        %v102 = vector.load %in1[%i101] : memref<8xf64>, vector<8xf64>
        %v103 = arith.mulf %v100, %v102 fastmath<contract> : vector<8xf64>
        %v104 = arith.addf %a77, %v103 fastmath<contract> : vector<8xf64>
        %i106 = arith.addi %i86, %c105 : index
        %v107 = vector.load %in0_val[%i106] : memref<?xf64>, vector<8xf64>
        %i108 = arith.addi %i87, %c105 : index
        %v109 = vector.load %in1[%i108] : memref<8xf64>, vector<8xf64>
        %v110 = arith.mulf %v107, %v109 fastmath<contract> : vector<8xf64>
        %v111 = arith.addf %a78, %v110 fastmath<contract> : vector<8xf64>
        scf.yield %v91, %v97, %v104, %v111 : vector<8xf64>, vector<8xf64>, vector<8xf64>, vector<8xf64>
      }
      vector.store %r79#0, %out1[%iv67] : memref<8xf64>, vector<8xf64>
      %i112 = arith.addi %iv67, %c4 : index
      vector.store %r79#1, %out1[%i112] : memref<8xf64>, vector<8xf64>
      %i113 = arith.addi %iv67, %c98 : index
      vector.store %r79#2, %out1[%i113] : memref<8xf64>, vector<8xf64>
      %i114 = arith.addi %iv67, %c105 : index
      vector.store %r79#3, %out1[%i114] : memref<8xf64>, vector<8xf64>
    }
    scf.for %iv115 = %i66 to %i35 step %c10 {
      %r120:1 = scf.for %iv118 = %i15 to %i14 step %c10 iter_args(%a119 = %k117) -> (f64) {
        %l121 = memref.load %in0_crd0[%iv118] : memref<?xi64>
        %i122 = arith.index_cast %l121 : i64 to index
        %i123 = arith.subi %i122, %c20 : index
        %i124 = arith.minui %i123, %c24 : index
        %i125 = arith.addi %i124, %c20 : index
        %i126 = arith.muli %iv118, %c4 : index
        %i127 = arith.addi %i126, %iv115 : index
        %i128 = arith.addi %iv115, %i125 : index
        %v129 = memref.load %in0_val[%i127] : memref<?xf64>
        %v130 = memref.load %in1[%i128] : memref<8xf64>
        %v131 = arith.mulf %v129, %v130 fastmath<contract> : f64
        %v132 = arith.addf %a119, %v131 fastmath<contract> : f64
        scf.yield %v132 : f64
      }
      memref.store %r120#0, %out1[%iv115] : memref<8xf64>
    }
    scf.for %iv134 = %i35 to %i7 step %c10 {
      memref.store %k133, %out1[%iv134] : memref<8xf64>
    }
    scf.for %iv136 = %i15 to %i14 step %c10 {
      %l138 = memref.load %in0_crd0[%iv136] : memref<?xi64>
      %i139 = arith.index_cast %l138 : i64 to index
      %i140 = arith.subi %i139, %c20 : index
      %i141 = arith.minui %i140, %c24 : index
      %i142 = arith.addi %i141, %c20 : index
      %i143 = arith.subi %c3, %i142 : index
      %i144 = arith.maxsi %i35, %i143 : index
      %i145 = arith.minsi %i7, %c4 : index
      %i146 = arith.subi %c4, %i142 : index
      %i147 = arith.minsi %i145, %i146 : index
      %i148 = arith.maxsi %i147, %i144 : index
      %i149 = arith.muli %iv136, %c4 : index
      scf.for %iv150 = %i144 to %i148 step %c10 {
        %i152 = arith.addi %i149, %iv150 : index
        %i153 = arith.addi %iv150, %i142 : index
        %v154 = memref.load %in0_val[%i152] : memref<?xf64>
        %v155 = memref.load %in1[%i153] : memref<8xf64>
        %v156 = memref.load %out1[%iv150] : memref<8xf64>
        %v157 = arith.mulf %v154, %v155 fastmath<contract> : f64
        %v158 = arith.addf %v156, %v157 fastmath<contract> : f64
        memref.store %v158, %out1[%iv150] : memref<8xf64>
      }
    }
    scf.reduce
  }
  return %out1 : memref<8xf64>
}
