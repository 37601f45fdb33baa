// Golden IR: emitter_gpu_diai_spmv (emitter-gpu path)
// y = A x on the GPU (y given), A DIA-I 8x8 f32: a thread per row
// Regenerate: UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py

func.func @main(%pos: memref<?xi64>, %crd: memref<?xi64>, %val: memref<?xf32>, %b: memref<8xf32>, %c: memref<8xf32>) -> memref<8xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.constant 8 : index
  %cols = arith.constant 8 : index
  %ncols = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %p0 = memref.load %pos[%c0] : memref<?xi64>
    %p1 = memref.load %pos[%c1] : memref<?xi64>
    %lo = arith.index_cast %p0 : i64 to index
    %hi = arith.index_cast %p1 : i64 to index
    %init = memref.load %c[%i] : memref<8xf32>
    %sum = scf.for %d = %lo to %hi step %c1 iter_args(%acc = %init) -> (f32) {
      %o0 = memref.load %crd[%d] : memref<?xi64>
      %o = arith.index_cast %o0 : i64 to index
      %j = arith.addi %i, %o : index
      %ge = arith.cmpi sge, %j, %c0 : index
      %lt = arith.cmpi slt, %j, %cols : index
      %in = arith.andi %ge, %lt : i1
      %r = scf.if %in -> (f32) {
        %dr = arith.muli %d, %rows : index
        %k = arith.addi %dr, %i : index
        %v = memref.load %val[%k] : memref<?xf32>
        %xv = memref.load %b[%j] : memref<8xf32>
        %m = arith.mulf %v, %xv : f32
        %s = arith.addf %acc, %m : f32
        scf.yield %s : f32
      } else {
        scf.yield %acc : f32
      }
      scf.yield %r : f32
    }
    memref.store %sum, %c[%i] : memref<8xf32>
    scf.reduce
  }
  return %c : memref<8xf32>
}
