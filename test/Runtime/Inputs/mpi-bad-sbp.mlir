// Two sbp entries for a one-axis mesh.
module {
  ofrt.program "main" attributes {arena_size = 64 : i64, device = "cpu", ranks = array<i64: 0, 1>} {
    ofrt.buffer @x input binding "x" size 48 {dist = {global_shape = array<i64: 6, 4>, mesh = array<i64: 2>, mesh_ranks = array<i64: 0, 1>, sbp = array<i64: 0, -1>}} : tensor<3x4xf32>
    ofrt.output "x" = @x
  }
}
