// Golden IR: emitter_diai_spmv (emitter path)
// y = A x, A DIA-I 8x8 (diagonals by rows)
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%in0_pos0: memref<?xi64>, %in0_crd0: memref<?xi64>, %in0_val: memref<?xf64>, %in1: memref<8xf64>) -> memref<8xf64> attributes {llvm.emit_c_interface} {
  %c2 = arith.constant 0 : index
  %c3 = arith.constant 8 : index
  %c4 = arith.constant 1 : index
  %k7 = arith.constant 0.00000000000000000e+00 : f64
  %c8 = arith.constant 131072 : index
  %c23 = arith.constant -7 : index
  %c25 = arith.constant 14 : index
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
    %n16 = memref.dim %in0_crd0, %c2 : memref<?xi64>
    %i17 = arith.minui %i15, %n16 : index
    %i18 = arith.minui %i13, %i17 : index
    scf.for %iv19 = %i18 to %i17 step %c4 {
      %l21 = memref.load %in0_crd0[%iv19] : memref<?xi64>
      %i22 = arith.index_cast %l21 : i64 to index
      %i24 = arith.subi %i22, %c23 : index
      %i26 = arith.minui %i24, %c25 : index
      %i27 = arith.addi %i26, %c23 : index
      %i28 = arith.subi %c2, %i27 : index
      %i29 = arith.subi %c3, %i27 : index
      %i30 = arith.maxsi %i28, %c2 : index
      %i31 = arith.minsi %i29, %c3 : index
      %i32 = arith.maxsi %i30, %iv9 : index
      %i33 = arith.minsi %i31, %i11 : index
      %i34 = arith.muli %iv19, %c3 : index
      %i35 = arith.subi %i33, %i32 : index
      %i36 = arith.maxsi %i35, %c2 : index
      %i37 = arith.remui %i36, %c3 : index
      %i38 = arith.subi %i36, %i37 : index
      %i39 = arith.addi %i32, %i38 : index
      scf.for %iv40 = %i32 to %i39 step %c3 {
        %i42 = arith.addi %i34, %iv40 : index
        %i43 = arith.addi %iv40, %i27 : index
        %v44 = vector.load %in0_val[%i42] : memref<?xf64>, vector<8xf64>
        %v45 = vector.load %in1[%i43] : memref<8xf64>, vector<8xf64>
        %v46 = arith.mulf %v44, %v45 fastmath<contract> : vector<8xf64>
        %v47 = vector.load %out1[%iv40] : memref<8xf64>, vector<8xf64>
        %v48 = arith.addf %v47, %v46 fastmath<contract> : vector<8xf64>
        vector.store %v48, %out1[%iv40] : memref<8xf64>, vector<8xf64>
      }
      scf.for %iv49 = %i39 to %i33 step %c4 {
        %i51 = arith.addi %i34, %iv49 : index
        %i52 = arith.addi %iv49, %i27 : index
        %v53 = memref.load %in0_val[%i51] : memref<?xf64>
        %v54 = memref.load %in1[%i52] : memref<8xf64>
        %v55 = arith.mulf %v53, %v54 fastmath<contract> : f64
        %v56 = memref.load %out1[%iv49] : memref<8xf64>
        %v57 = arith.addf %v56, %v55 fastmath<contract> : f64
        memref.store %v57, %out1[%iv49] : memref<8xf64>
      }
    }
    scf.reduce
  }
  return %out1 : memref<8xf64>
}
