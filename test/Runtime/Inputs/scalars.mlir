// Two scalar inputs, an i64 and an f32, doubled.
func.func @f(%n: tensor<i64> {of.name = "n"}, %s: tensor<f32> {of.name = "s"})
    -> (tensor<i64> {of.name = "n2"}, tensor<f32> {of.name = "s2"}) {
  %a = of.add %n, %n : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %b = of.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %a, %b : tensor<i64>, tensor<f32>
}
