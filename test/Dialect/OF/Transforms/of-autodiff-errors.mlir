// --of-autodiff diagnostics.
// RUN: of-opt %s --split-input-file --of-autodiff -verify-diagnostics

// expected-error@+1 {{the first result of a function with of.param arguments must be the scalar loss (a rank-0 float tensor), got 'tensor<3xf32>'}}
func.func @not_scalar(%a: tensor<3xf32> {of.param}) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}

// -----

// expected-error@+1 {{parameter 0 must be a float tensor, got 'tensor<3xi32>'}}
func.func @int_param(%a: tensor<3xi32> {of.param}) -> tensor<f32> {
  %c = of.constant dense<1.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// Gradient ops have no gradients of their own (no second derivatives).
func.func @second_order(%x: tensor<1x1x4x4xf32>, %g: tensor<1x1x3x3xf32> {of.param}) -> tensor<f32> {
  // expected-error@+1 {{'of.conv2d_grad_filter' op is on the path from a parameter to the loss but has no gradient (GradientOpInterface)}}
  %y = of.conv2d_grad_filter %x, %g : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  %l = of.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{--of-autodiff: @taken_grad exists already}}
func.func @taken(%x: tensor<f32> {of.param}) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func @taken_grad(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
