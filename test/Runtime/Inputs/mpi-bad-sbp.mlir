// Two sbp entries for a one-axis mesh.
module {
  ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
    ofrt.buffer @x input binding "x" size 48 {dist = #ofrt.dist<global_shape = [6, 4], mesh = [2], mesh_ranks = [0, 1], sbp = [S(0), B]>} : tensor<3x4xf32>
    ofrt.output "x" = @x
  }
}
