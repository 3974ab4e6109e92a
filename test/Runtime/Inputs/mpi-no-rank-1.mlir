// A plan for world ranks 0 and 2 only: rank 1 has no program of "main".
module {
  ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0>} {
    ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
    ofrt.buffer @r arena offset 0 size 16 : tensor<4xf32>
    ofrt.collective all_reduce @x to @r group [0, 2] {shape = array<i64: 4>}
    ofrt.output "r" = @r
  }
  ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 2>} {
    ofrt.buffer @x input binding "x" size 16 : tensor<4xf32>
    ofrt.buffer @r arena offset 0 size 16 : tensor<4xf32>
    ofrt.collective all_reduce @x to @r group [0, 2] {shape = array<i64: 4>}
    ofrt.output "r" = @r
  }
}
