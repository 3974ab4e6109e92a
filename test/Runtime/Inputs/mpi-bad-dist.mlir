// x is f32 [7, 4] S(0) over 2 ranks: rank 0 holds 4 rows, rank 1 holds 3,
// but the one program of both ranks says [3, 4].
module {
  ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
    ofrt.buffer @x input binding "x" size 48 {dist = #ofrt.dist<global_shape = [7, 4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0)]>} : tensor<3x4xf32>
    ofrt.output "x" = @x
  }
}
