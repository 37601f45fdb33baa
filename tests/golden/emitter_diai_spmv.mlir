// Golden IR: emitter_diai_spmv (emitter path)
// y = A x, A DIA-I 8x8 (diagonals by rows)
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0_pos0: memref<?xi64>, %in0_crd0: memref<?xi64>, %in0_val: memref<?xf64>, %in1: memref<8xf64>) -> memref<8xf64> attributes {llvm.emit_c_interface} {
  %c2 = arith.constant 0 : index
  %c3 = arith.constant 8 : index
  %c4 = arith.constant 1 : index
  %k7 = arith.constant 0.00000000000000000e+00 : f64
  %c8 = arith.constant 131072 : index
  %out1 = memref.alloc() : memref<8xf64>
  scf.for %iv5 = %c2 to %c3 step %c4 {
    memref.store %k7, %out1[%iv5] : memref<8xf64>
  }
  scf.parallel (%iv9) = (%c2) to (%c3) step (%c8) {
    %i10 = arith.addi %iv9, %c8 : index
    %i11 = arith.minsi %i10, %c3 : index
    %l12 = memref.load %in0_pos0[%c2] : memref<?xi64>
    %i13 = arith.index_cast %l12 : i64 to index
    %l14 = memref.load %in0_pos0[%c4] : memref<?xi64>
    %i15 = arith.index_cast %l14 : i64 to index
    scf.for %iv16 = %i13 to %i15 step %c4 {
      %l18 = memref.load %in0_crd0[%iv16] : memref<?xi64>
      %i19 = arith.index_cast %l18 : i64 to index
      %i20 = arith.subi %c2, %i19 : index
      %i21 = arith.subi %c3, %i19 : index
      %i22 = arith.maxsi %i20, %c2 : index
      %i23 = arith.minsi %i21, %c3 : index
      %i24 = arith.maxsi %i22, %iv9 : index
      %i25 = arith.minsi %i23, %i11 : index
      %i26 = arith.muli %iv16, %c3 : index
      %i27 = arith.subi %i25, %i24 : index
      %i28 = arith.maxsi %i27, %c2 : index
      %i29 = arith.remui %i28, %c3 : index
      %i30 = arith.subi %i28, %i29 : index
      %i31 = arith.addi %i24, %i30 : index
      scf.for %iv32 = %i24 to %i31 step %c3 {
        %i34 = arith.addi %i26, %iv32 : index
        %i35 = arith.addi %iv32, %i19 : index
        %v36 = vector.load %in0_val[%i34] : memref<?xf64>, vector<8xf64>
        %v37 = vector.load %in1[%i35] : memref<8xf64>, vector<8xf64>
        %v38 = arith.mulf %v36, %v37 fastmath<contract> : vector<8xf64>
        %v39 = vector.load %out1[%iv32] : memref<8xf64>, vector<8xf64>
        %v40 = arith.addf %v39, %v38 fastmath<contract> : vector<8xf64>
        vector.store %v40, %out1[%iv32] : memref<8xf64>, vector<8xf64>
      }
      scf.for %iv41 = %i31 to %i25 step %c4 {
        %i43 = arith.addi %i26, %iv41 : index
        %i44 = arith.addi %iv41, %i19 : index
        %v45 = memref.load %in0_val[%i43] : memref<?xf64>
        %v46 = memref.load %in1[%i44] : memref<8xf64>
        %v47 = arith.mulf %v45, %v46 fastmath<contract> : f64
        %v48 = memref.load %out1[%iv41] : memref<8xf64>
        %v49 = arith.addf %v48, %v47 fastmath<contract> : f64
        memref.store %v49, %out1[%iv41] : memref<8xf64>
      }
    }
    scf.reduce
  }
  return %out1 : memref<8xf64>
}
