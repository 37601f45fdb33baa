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
  %c76 = arith.constant 32 : index
  %k82 = arith.constant 0.00000000000000000e+00 : f64
  %c111 = arith.constant 16 : index
  %c118 = arith.constant 24 : index
  %k130 = arith.constant 0.00000000000000000e+00 : f64
  %k146 = arith.constant 0.00000000000000000e+00 : f64
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
      %i53 = arith.subi %i51, %i47 : index
      %i54 = arith.remui %i53, %c4 : index
      %i55 = arith.subi %i53, %i54 : index
      %i56 = arith.addi %i47, %i55 : index
      scf.for %iv57 = %i47 to %i56 step %c4 {
        %i59 = arith.addi %i52, %iv57 : index
        %i60 = arith.addi %iv57, %i45 : index
        %v61 = vector.load %out1[%iv57] : memref<8xf64>, vector<8xf64>
        %v62 = vector.load %in0_val[%i59] : memref<?xf64>, vector<8xf64>
        %v63 = vector.load %in1[%i60] : memref<8xf64>, vector<8xf64>
        %v64 = arith.mulf %v62, %v63 fastmath<contract> : vector<8xf64>
        %v65 = arith.addf %v61, %v64 fastmath<contract> : vector<8xf64>
        vector.store %v65, %out1[%iv57] : memref<8xf64>, vector<8xf64>
      }
      scf.for %iv66 = %i56 to %i51 step %c10 {
        %i68 = arith.addi %i52, %iv66 : index
        %i69 = arith.addi %iv66, %i45 : index
        %v70 = memref.load %out1[%iv66] : memref<8xf64>
        %v71 = memref.load %in0_val[%i68] : memref<?xf64>
        %v72 = memref.load %in1[%i69] : memref<8xf64>
        %v73 = arith.mulf %v71, %v72 fastmath<contract> : f64
        %v74 = arith.addf %v70, %v73 fastmath<contract> : f64
        memref.store %v74, %out1[%iv66] : memref<8xf64>
      }
    }
    %i75 = arith.subi %i35, %i31 : index
    %i77 = arith.remui %i75, %c76 : index
    %i78 = arith.subi %i75, %i77 : index
    %i79 = arith.addi %i31, %i78 : index
    scf.for %iv80 = %i31 to %i79 step %c76 {
      %s83 = vector.broadcast %k82 : f64 to vector<8xf64>
      %s84 = vector.broadcast %k82 : f64 to vector<8xf64>
      %s85 = vector.broadcast %k82 : f64 to vector<8xf64>
      %s86 = vector.broadcast %k82 : f64 to vector<8xf64>
      %r92:4 = scf.for %iv87 = %i15 to %i14 step %c10 iter_args(%a88 = %s83, %a89 = %s84, %a90 = %s85, %a91 = %s86) -> (vector<8xf64>, vector<8xf64>, vector<8xf64>, vector<8xf64>) {
        %l93 = memref.load %in0_crd0[%iv87] : memref<?xi64>
        %i94 = arith.index_cast %l93 : i64 to index
        %i95 = arith.subi %i94, %c20 : index
        %i96 = arith.minui %i95, %c24 : index
        %i97 = arith.addi %i96, %c20 : index
        %i98 = arith.muli %iv87, %c4 : index
        %i99 = arith.addi %i98, %iv80 : index
        %i100 = arith.addi %iv80, %i97 : index
        %v101 = vector.load %in0_val[%i99] : memref<?xf64>, vector<8xf64>
        %v102 = vector.load %in1[%i100] : memref<8xf64>, vector<8xf64>
        %v103 = arith.mulf %v101, %v102 fastmath<contract> : vector<8xf64>
        %v104 = arith.addf %a88, %v103 fastmath<contract> : vector<8xf64>
        %i105 = arith.addi %i99, %c4 : index
        %v106 = vector.load %in0_val[%i105] : memref<?xf64>, vector<8xf64>
        %i107 = arith.addi %i100, %c4 : index
        %v108 = vector.load %in1[%i107] : memref<8xf64>, vector<8xf64>
        %v109 = arith.mulf %v106, %v108 fastmath<contract> : vector<8xf64>
        %v110 = arith.addf %a89, %v109 fastmath<contract> : vector<8xf64>
        %i112 = arith.addi %i99, %c111 : index
        %v113 = vector.load %in0_val[%i112] : memref<?xf64>, vector<8xf64>
        %i114 = arith.addi %i100, %c111 : index
        %v115 = vector.load %in1[%i114] : memref<8xf64>, vector<8xf64>
        %v116 = arith.mulf %v113, %v115 fastmath<contract> : vector<8xf64>
        %v117 = arith.addf %a90, %v116 fastmath<contract> : vector<8xf64>
        %i119 = arith.addi %i99, %c118 : index
        %v120 = vector.load %in0_val[%i119] : memref<?xf64>, vector<8xf64>
        %i121 = arith.addi %i100, %c118 : index
        %v122 = vector.load %in1[%i121] : memref<8xf64>, vector<8xf64>
        %v123 = arith.mulf %v120, %v122 fastmath<contract> : vector<8xf64>
        %v124 = arith.addf %a91, %v123 fastmath<contract> : vector<8xf64>
        scf.yield %v104, %v110, %v117, %v124 : vector<8xf64>, vector<8xf64>, vector<8xf64>, vector<8xf64>
      }
      vector.store %r92#0, %out1[%iv80] : memref<8xf64>, vector<8xf64>
      %i125 = arith.addi %iv80, %c4 : index
      vector.store %r92#1, %out1[%i125] : memref<8xf64>, vector<8xf64>
      %i126 = arith.addi %iv80, %c111 : index
      vector.store %r92#2, %out1[%i126] : memref<8xf64>, vector<8xf64>
      %i127 = arith.addi %iv80, %c118 : index
      vector.store %r92#3, %out1[%i127] : memref<8xf64>, vector<8xf64>
    }
    scf.for %iv128 = %i79 to %i35 step %c10 {
      %r133:1 = scf.for %iv131 = %i15 to %i14 step %c10 iter_args(%a132 = %k130) -> (f64) {
        %l134 = memref.load %in0_crd0[%iv131] : memref<?xi64>
        %i135 = arith.index_cast %l134 : i64 to index
        %i136 = arith.subi %i135, %c20 : index
        %i137 = arith.minui %i136, %c24 : index
        %i138 = arith.addi %i137, %c20 : index
        %i139 = arith.muli %iv131, %c4 : index
        %i140 = arith.addi %i139, %iv128 : index
        %i141 = arith.addi %iv128, %i138 : index
        %v142 = memref.load %in0_val[%i140] : memref<?xf64>
        %v143 = memref.load %in1[%i141] : memref<8xf64>
        %v144 = arith.mulf %v142, %v143 fastmath<contract> : f64
        %v145 = arith.addf %a132, %v144 fastmath<contract> : f64
        scf.yield %v145 : f64
      }
      memref.store %r133#0, %out1[%iv128] : memref<8xf64>
    }
    scf.for %iv147 = %i35 to %i7 step %c10 {
      memref.store %k146, %out1[%iv147] : memref<8xf64>
    }
    scf.for %iv149 = %i15 to %i14 step %c10 {
      %l151 = memref.load %in0_crd0[%iv149] : memref<?xi64>
      %i152 = arith.index_cast %l151 : i64 to index
      %i153 = arith.subi %i152, %c20 : index
      %i154 = arith.minui %i153, %c24 : index
      %i155 = arith.addi %i154, %c20 : index
      %i156 = arith.subi %c3, %i155 : index
      %i157 = arith.maxsi %i35, %i156 : index
      %i158 = arith.minsi %i7, %c4 : index
      %i159 = arith.subi %c4, %i155 : index
      %i160 = arith.minsi %i158, %i159 : index
      %i161 = arith.maxsi %i160, %i157 : index
      %i162 = arith.muli %iv149, %c4 : index
      %i163 = arith.subi %i161, %i157 : index
      %i164 = arith.remui %i163, %c4 : index
      %i165 = arith.subi %i163, %i164 : index
      %i166 = arith.addi %i157, %i165 : index
      scf.for %iv167 = %i157 to %i166 step %c4 {
        %i169 = arith.addi %i162, %iv167 : index
        %i170 = arith.addi %iv167, %i155 : index
        %v171 = vector.load %out1[%iv167] : memref<8xf64>, vector<8xf64>
        %v172 = vector.load %in0_val[%i169] : memref<?xf64>, vector<8xf64>
        %v173 = vector.load %in1[%i170] : memref<8xf64>, vector<8xf64>
        %v174 = arith.mulf %v172, %v173 fastmath<contract> : vector<8xf64>
        %v175 = arith.addf %v171, %v174 fastmath<contract> : vector<8xf64>
        vector.store %v175, %out1[%iv167] : memref<8xf64>, vector<8xf64>
      }
      scf.for %iv176 = %i166 to %i161 step %c10 {
        %i178 = arith.addi %i162, %iv176 : index
        %i179 = arith.addi %iv176, %i155 : index
        %v180 = memref.load %out1[%iv176] : memref<8xf64>
        %v181 = memref.load %in0_val[%i178] : memref<?xf64>
        %v182 = memref.load %in1[%i179] : memref<8xf64>
        %v183 = arith.mulf %v181, %v182 fastmath<contract> : f64
        %v184 = arith.addf %v180, %v183 fastmath<contract> : f64
        memref.store %v184, %out1[%iv176] : memref<8xf64>
      }
    }
    scf.reduce
  }
  return %out1 : memref<8xf64>
}
