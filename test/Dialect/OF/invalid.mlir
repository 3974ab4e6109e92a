// RUN: of-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{device must be "cpu" or "cuda", got "tpu"}}
of.placement @p {device = "tpu", shape = [2]}

// -----

// expected-error@+1 {{shape must have at least one axis}}
of.placement @p {device = "cpu", shape = []}

// -----

// expected-error@+1 {{shape[1] = 0 must be positive}}
of.placement @p {device = "cpu", shape = [2, 0]}

// -----

// expected-error@+1 {{shape [1099511627776] holds more than 1048576 devices}}
of.placement @p {device = "cpu", shape = [1099511627776]}

// -----

// The product checked before it overflows (2^32 * 2^32 was 0: one rank).
// expected-error@+1 {{shape [4294967296, 4294967296] holds more than 1048576 devices}}
of.placement @p {device = "cpu", shape = [4294967296, 4294967296]}

// -----

// expected-error@+1 {{has 3 ranks, but shape [2, 2] holds 4 devices}}
of.placement @p {device = "cpu", shape = [2, 2], ranks = [0, 1, 2]}

// -----

// expected-error@+1 {{ranks[1] = -1 is negative}}
of.placement @p {device = "cpu", shape = [2], ranks = [0, -1]}

// -----

// expected-error@+1 {{rank 3 appears more than once}}
of.placement @p {device = "cpu", shape = [2], ranks = [3, 3]}

// -----

// expected-note@+1 {{see existing symbol definition here}}
of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{redefinition of symbol named 'p'}}
of.placement @p {device = "cpu", shape = [2]}

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{S(2) is out of range for a rank-2 tensor}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [S(2)]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{S(-1) splits a negative dimension}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [S(-1)]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{unknown SBP entry 'X'; expected S(<dim>), B, P or P(max)}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [X]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{expected an SBP entry: S(<dim>), B, P or P(max)}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [1]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{unknown partial reduction 'min'; expected P, P(sum) or P(max)}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [P(min)]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{expected the placement symbol (e.g. @mesh) first in #of.sbp}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<[S(0)]>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{#of.sbp needs one entry per placement axis, got none}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, []>>)

// -----

of.placement @p {device = "cpu", shape = [2]}
// expected-error@+1 {{expected ']'}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@p, [S(0) B]>>)

// -----

// expected-error@+1 {{#of.sbp refers to @missing, which is not an of.placement}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@missing, [B]>>)

// -----

// A symbol that is not a placement.
func.func private @g()
// expected-error@+1 {{#of.sbp refers to @g, which is not an of.placement}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@g, [B]>>)

// -----

of.placement @mesh {device = "cpu", shape = [2, 2]}
// expected-error@+1 {{#of.sbp on @mesh has 1 entries, but the placement has 2 axes (one entry per axis)}}
func.func private @f(%x: tensor<4x4xf32, #of.sbp<@mesh, [S(0)]>>)

// -----

of.placement @row {device = "cpu", shape = [2]}
func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{#of.sbp on @row has 2 entries, but the placement has 1 axis (one entry per axis)}}
  %0 = of.relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32, #of.sbp<@row, [B, B]>>
  return
}

// -----

of.placement @a {device = "cpu", shape = [2]}
of.placement @b {device = "cpu", shape = [2]}
func.func @f(%x: tensor<4xf32, #of.sbp<@a, [B]>>, %y: tensor<4xf32, #of.sbp<@b, [B]>>) {
  // expected-error@+1 {{mixes placements @a and @b ('tensor<4xf32, #of.sbp<@a, [B]>>' and 'tensor<4xf32, #of.sbp<@b, [B]>>'); move tensors between placements with of.boxing}}
  %0 = of.add %x, %y : (tensor<4xf32, #of.sbp<@a, [B]>>, tensor<4xf32, #of.sbp<@b, [B]>>) -> tensor<4xf32, #of.sbp<@a, [B]>>
  return
}

// -----

// expected-error@+1 {{unknown argument attribute 'of.nmae'; known: of.name, of.global, of.param, of.weight_decay}}
func.func private @f(%x: tensor<4xf32> {of.nmae = "x"})

// -----

// expected-error@+1 {{of.name of argument 0 must be a non-empty string}}
func.func private @f(%x: tensor<4xf32> {of.name = 3})

// -----

// expected-error@+1 {{of.weight_decay of argument 0 needs of.param (only parameters are decayed)}}
func.func private @f(%x: tensor<4xf32> {of.weight_decay = 0.0 : f64})

// -----

// expected-error@+1 {{of.weight_decay of argument 0 must be a non-negative finite float}}
func.func private @f(%x: tensor<4xf32> {of.param, of.weight_decay = -1.0 : f64})

// -----

// expected-error@+1 {{of.param of argument 0 takes no value}}
func.func private @f(%x: tensor<4xf32> {of.param = 1})

// -----

// expected-error@+1 {{unknown result attribute 'of.param'; known: of.name, of.global, of.update}}
func.func private @f() -> (tensor<4xf32> {of.param})

// -----

// expected-error@+1 {{of.update of result 0 must be the index of an argument}}
func.func private @f(%x: tensor<4xf32>) -> (tensor<4xf32> {of.update = 1})

// -----

// expected-error@+1 {{of.update: result 0 of type 'tensor<2xf32>' cannot update argument 0 of type 'tensor<4xf32>'}}
func.func private @f(%x: tensor<4xf32>) -> (tensor<2xf32> {of.update = 0})

// -----

func.func @f(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of numeric values}}
  %0 = of.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = of.exp %x : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{result type 'tensor<5xf32>' does not match the inferred 'tensor<4xf32>'}}
  %0 = of.relu %x : (tensor<4xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{approximate must be "none" or "tanh", got "erf"}}
  %0 = of.gelu %x {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %y: tensor<3xf32>) {
  // expected-error@+1 {{shapes [4, 8] and [3] do not broadcast}}
  %0 = of.add %x, %y : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error@+1 {{operands have different element types 'f32' and 'bf16'; convert one with of.cast}}
  %0 = of.mul %x, %y : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{operands have different element types 'f32' and 'i32'}}
  %0 = of.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{changes the shape from [4] to [2, 2]; of.cast only converts the element type}}
  %0 = of.cast %x : tensor<4xf32> to tensor<2x2xf16>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{value of type 'tensor<2xf32>' does not match the result type 'tensor<3xf32>'}}
  %0 = of.constant dense<[1.0, 2.0]> : tensor<2xf32> -> tensor<3xf32>
  return
}

// -----

of.placement @p {device = "cpu", shape = [2]}
func.func @f() {
  // expected-error@+1 {{value type must not carry an encoding; write the distribution on the result type after `->`}}
  %0 = of.constant dense<1.0> : tensor<2xf32, #of.sbp<@p, [B]>>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{expected a tensor value such as dense<...>}}
  %0 = of.constant 1.0 : f32
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{cannot broadcast shape [4] to [4, 3]: dimension 0 has size 4}}
  %0 = of.broadcast_to %x : (tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @f(%x: tensor<4x4xf32>) {
  // expected-error@+1 {{cannot broadcast rank 2 to the lower rank 1}}
  %0 = of.broadcast_to %x : (tensor<4x4xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error@+1 {{changes the element type from 'f32' to 'f16'}}
  %0 = of.broadcast_to %x : (tensor<4xf32>) -> tensor<2x4xf16>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)}}
  %0 = of.reshape %x : (tensor<4x6xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{changes the element type from 'f32' to 'i32'}}
  %0 = of.reshape %x : (tensor<4x6xf32>) -> tensor<24xi32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{permutation [0, 0] is not a permutation of 0..1}}
  %0 = of.transpose %x, [0, 0] : (tensor<4x6xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{starts must have 2 entries, got 1}}
  %0 = of.slice %x {starts = array<i64: 0>, limits = array<i64: 4, 6>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{strides[1] = 0 must be positive}}
  %0 = of.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 6>, strides = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{starts[0] = -1 must be non-negative}}
  %0 = of.slice %x {starts = array<i64: -1, 0>, limits = array<i64: 4, 6>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{slice [0, 7) of dimension 1 is out of bounds [0, 6]}}
  %0 = of.slice %x {starts = array<i64: 0, 0>, limits = array<i64: 4, 7>} : (tensor<4x6xf32>) -> tensor<4x7xf32>
  return
}

// -----

func.func @f() {
  // expected-error@+1 {{needs at least one input}}
  %0 = of.concat {axis = 0} : () -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{axis 2 is out of range for a rank-2 tensor}}
  %0 = of.concat %x, %x {axis = 2} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>, %y: tensor<6xf32>) {
  // expected-error@+1 {{input 1 has a different rank}}
  %0 = of.concat %x, %y {axis = 0} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>, %y: tensor<4x6xf16>) {
  // expected-error@+1 {{input 1 has element type 'f16', expected 'f32'}}
  %0 = of.concat %x, %y {axis = 0} : (tensor<4x6xf32>, tensor<4x6xf16>) -> tensor<8x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>, %y: tensor<4x5xf32>) {
  // expected-error@+1 {{input 1 has shape [4, 5], which differs from [4, 6] outside the concatenation axis}}
  %0 = of.concat %x, %y {axis = 0} : (tensor<4x6xf32>, tensor<4x5xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{axes must name at least one dimension}}
  %0 = of.reduce_sum %x {axes = array<i64>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{axis -3 is out of range for a rank-2 tensor}}
  %0 = of.reduce_max %x {axes = array<i64: -3>} : (tensor<4x6xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{axis -1 is reduced twice}}
  %0 = of.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<4x6xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x6xf32>) {
  // expected-error@+1 {{result type 'tensor<4xf32>' does not match the inferred 'tensor<4x1xf32>'}}
  %0 = of.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<4x6xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %y: tensor<4x4xf32>) {
  // expected-error@+1 {{operands must have rank >= 2, got ranks 1 and 2}}
  %0 = of.matmul %x, %y : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %y: tensor<7x4xf32>) {
  // expected-error@+1 {{contracting dimensions differ: lhs has 8, rhs has 7}}
  %0 = of.matmul %x, %y : (tensor<4x8xf32>, tensor<7x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8xf32>, %y: tensor<3x8x4xf32>) {
  // expected-error@+1 {{batch dimensions [2] and [3] do not broadcast}}
  %0 = of.matmul %x, %y : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %y: tensor<8x4xbf16>) {
  // expected-error@+1 {{operands have different element types 'f32' and 'bf16'}}
  %0 = of.matmul %x, %y : (tensor<4x8xf32>, tensor<8x4xbf16>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{axis 2 is out of range for a rank-2 tensor}}
  %0 = of.softmax %x {axis = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{weight must have the normalised shape [8], got 'tensor<4xf32>'}}
  %0 = of.layer_norm %x weight %g : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf16>) {
  // expected-error@+1 {{bias has element type 'f16', expected 'f32'}}
  %0 = of.layer_norm %x weight %g bias %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{epsilon must be positive}}
  %0 = of.layer_norm %x {epsilon = 0.0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{axis -3 is out of range for a rank-2 tensor}}
  %0 = of.rms_norm %x {axis = -3} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{epsilon must be positive}}
  %0 = of.rms_norm %x {epsilon = -1.0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %t: tensor<10x4x2xf32>) {
  // expected-error@+1 {{weight must be a [vocab, dim] matrix, got 'tensor<10x4x2xf32>'}}
  %0 = of.embedding %ids, %t : (tensor<4xi64>, tensor<10x4x2xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xf32>, %t: tensor<10x4xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of i32 or i64 values}}
  %0 = of.embedding %ids, %t : (tensor<4xf32>, tensor<10x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @f(%ids: tensor<4xi64>, %dy: tensor<4x4xf32>, %t: tensor<12x4xf32>) {
  // expected-error@+1 {{the table added to, 'tensor<12x4xf32>', is not of the result's type 'tensor<10x4xf32>'}}
  %0 = of.embedding_grad %ids, %dy into %t : (tensor<4xi64>, tensor<4x4xf32>, tensor<12x4xf32>) -> tensor<10x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{input must be NCHW and weight OIHW (rank 4), got ranks 3 and 4}}
  %0 = of.conv2d %x, %w : (tensor<8x3x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{strides must have 2 entries, got 1}}
  %0 = of.conv2d %x, %w {strides = array<i64: 1>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{padding[2] = -1 must be non-negative}}
  %0 = of.conv2d %x, %w {padding = array<i64: 0, 0, -1, 0>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{dilation[0] = 0 must be positive}}
  %0 = of.conv2d %x, %w {dilation = array<i64: 0, 1>} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4x32x32xf32>, %w: tensor<16x2x3x3xf32>) {
  // expected-error@+1 {{groups = 3 must be positive and divide the input (4) and output (16) channels}}
  %0 = of.conv2d %x, %w {groups = 3} : (tensor<8x4x32x32xf32>, tensor<16x2x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4x32x32xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{weight has 3 input channels per group, expected 4}}
  %0 = of.conv2d %x, %w : (tensor<8x4x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{bias must be 'tensor<16xf32>', got 'tensor<8xf32>'}}
  %0 = of.conv2d %x, %w, %b : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<8x16x30x30xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x2x2xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{the kernel does not fit the padded input}}
  %0 = of.conv2d %x, %w : (tensor<8x3x2x2xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x1x1xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32xf32>) {
  // expected-error@+1 {{input must be an NCHW (rank-4) tensor}}
  %0 = of.max_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<8x3x32xf32>) -> tensor<8x3x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x32x32xf32>) {
  // expected-error@+1 {{kernel_size[1] = 0 must be positive}}
  %0 = of.avg_pool2d %x {kernel_size = array<i64: 2, 0>} : (tensor<8x3x32x32xf32>) -> tensor<8x3x16x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x3x1x1xf32>) {
  // expected-error@+1 {{the window does not fit the padded input}}
  %0 = of.max_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<8x3x1x1xf32>) -> tensor<8x3x1x1xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{input must be [N, C, ...] with rank >= 2}}
  %0:3 = of.batch_norm %x, %c, %c, %c, %c : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>, %c: tensor<4xf32>, %d: tensor<5xf32>) {
  // expected-error@+1 {{running_var must be 'tensor<4xf32>', got 'tensor<5xf32>'}}
  %0:3 = of.batch_norm %x, %c, %c, %c, %d : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{epsilon must be positive}}
  %0:3 = of.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0} : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{momentum = 2.000000e+00 must be in [0, 1]}}
  %0:3 = of.batch_norm %x, %c, %c, %c, %c {momentum = 2.0} : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error@+1 {{p = 1.000000e+00 must be in [0, 1)}}
  %0 = of.dropout %x, %s {p = 1.0} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error@+1 {{operand #1 must be 0-d tensor<i64> seed}}
  %0 = of.dropout %x, %s {p = 0.5} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%l: tensor<8x10xf32>, %y: tensor<10xi64>) {
  // expected-error@+1 {{labels of shape [10] must have the logits' shape [8, 10] without its last (class) dimension}}
  %0 = of.cross_entropy %l, %y : (tensor<8x10xf32>, tensor<10xi64>) -> tensor<10xf32>
  return
}

// -----

of.placement @p {device = "cpu", shape = [2]}
func.func @f(%x: tensor<4xf32, #of.sbp<@p, [S(0)]>>) {
  // expected-error@+1 {{changes the tensor from 'tensor<4xf32>' to 'tensor<8xf32>'; of.boxing changes only the distribution}}
  %0 = of.boxing %x : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<8xf32, #of.sbp<@p, [B]>>
  return
}

// -----

of.placement @p {device = "cpu", shape = [2]}
func.func @f(%x: tensor<4xf32, #of.sbp<@p, [S(0)]>>) {
  // expected-error@+1 {{result must carry an #of.sbp distribution}}
  %0 = of.boxing %x : tensor<4xf32, #of.sbp<@p, [S(0)]>> -> tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<4xf32, "other">) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of numeric values without an encoding or with an #of.sbp encoding}}
  %0 = of.relu %x : (tensor<4xf32, "other">) -> tensor<4xf32>
  return
}

// -----

func.func @f(%dy: tensor<2x4x3x3xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error@+1 {{grad must be the forward convolution's result 'tensor<2x4x4x4xf32>', got 'tensor<2x4x3x3xf32>'}}
  %0 = of.conv2d_grad_input %dy, %w : (tensor<2x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x4x4x4xf32>) {
  // expected-error@+1 {{weight has 2 input channels per group, expected 3}}
  %0 = of.conv2d_grad_filter %x, %dy : (tensor<2x3x6x6xf32>, tensor<2x4x4x4xf32>) -> tensor<4x2x3x3xf32>
  return
}

// -----

func.func @f(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x3x3x3xf32>) {
  // expected-error@+1 {{kind must be "max" or "avg", got "min"}}
  %0 = of.pool2d_grad %x, %dy {kind = "min", kernel_size = array<i64: 2, 2>} : (tensor<2x3x6x6xf32>, tensor<2x3x3x3xf32>) -> tensor<2x3x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x3x6x6xf32>, %dy: tensor<2x3x2x2xf32>) {
  // expected-error@+1 {{grad must be the forward pooling's result 'tensor<2x3x3x3xf32>', got 'tensor<2x3x2x2xf32>'}}
  %0 = of.pool2d_grad %x, %dy {kind = "avg", kernel_size = array<i64: 2, 2>} : (tensor<2x3x6x6xf32>, tensor<2x3x2x2xf32>) -> tensor<2x3x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %e: tensor<2x8x6x6xf32>) {
  // expected-error@+1 {{unknown library function 'dnn.conv3d' (known: dnn.conv2d, dnn.conv2d_grad_input, dnn.conv2d_grad_filter, dnn.pool2d, dnn.pool2d_grad, dnn.batch_norm, dnn.batch_norm_grad)}}
  %0 = of.library_call "dnn.conv3d"(%x, %w) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %e: tensor<2x8x6x6xf32>) {
  // expected-error@+1 {{dnn.conv2d parameters: the output extent does not follow from the input, kernel, padding, dilation and stride}}
  %0 = of.library_call "dnn.conv2d"(%x, %w) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 2, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %e: tensor<2x8x6x6xf32>) {
  // expected-error@+1 {{operand 1 has shape [8, 4, 3, 3], the parameters of dnn.conv2d give [8, 2, 3, 3]}}
  %0 = of.library_call "dnn.conv2d"(%x, %w) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 2>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8x8xf32>, %e: tensor<2x8x6x6xf32>) {
  // expected-error@+1 {{dnn.conv2d_grad_filter takes 2 inputs, got 1}}
  %0 = of.library_call "dnn.conv2d_grad_filter"(%x) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf16>, %e: tensor<2x8x6x6xf32>) {
  // expected-error@+1 {{operands must share one floating-point type}}
  %0 = of.library_call "dnn.conv2d"(%x, %w) into %e {params = array<i64: 2, 4, 8, 8, 8, 3, 3, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1>} : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf16>) into tensor<2x8x6x6xf32> -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x6x6xf32>, %e: tensor<1x2x3x3xf32>) {
  // expected-error@+1 {{dnn.pool2d takes 15 parameters, got 14}}
  %0 = of.library_call "dnn.pool2d"(%x) into %e {params = array<i64: 1, 2, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0>} : (tensor<1x2x6x6xf32>) into tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x6x6xf32>, %e: tensor<1x2x3x3xf32>) {
  // expected-error@+1 {{dnn.pool2d parameters: the mode must be 0 (max), 1 (avg counting padding) or 2 (avg not counting it)}}
  %0 = of.library_call "dnn.pool2d"(%x) into %e {params = array<i64: 1, 2, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 3>} : (tensor<1x2x6x6xf32>) into tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x6x6xf32>, %e: tensor<1x2x4x4xf32>) {
  // expected-error@+1 {{dnn.pool2d parameters: padding must be smaller than the window}}
  %0 = of.library_call "dnn.pool2d"(%x) into %e {params = array<i64: 1, 2, 6, 6, 2, 2, 4, 4, 2, 2, 2, 0, 0, 0, 0>} : (tensor<1x2x6x6xf32>) into tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @f(%x: tensor<1x2x6x6xf32>, %dy: tensor<1x2x3x3xf32>, %e: tensor<1x2x3x3xf32>) {
  // expected-error@+1 {{operand 2 has shape [1, 2, 3, 3], the parameters of dnn.pool2d_grad give [1, 2, 6, 6]}}
  %0 = of.library_call "dnn.pool2d_grad"(%x, %dy) into %e {params = array<i64: 1, 2, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 0>} : (tensor<1x2x6x6xf32>, tensor<1x2x3x3xf32>) into tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @f(%x: tensor<8x4x3xf32>, %c: tensor<4xf32>) {
  // expected-error@+1 {{grad must have the input's type 'tensor<8x4x3xf32>', got 'tensor<4xf32>'}}
  %0:3 = of.batch_norm_grad %x, %c, %c : (tensor<8x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<8x4x3xf32>, %c: tensor<3xf32>) {
  // expected-error@+1 {{weight must be 'tensor<4xf32>', got 'tensor<3xf32>'}}
  %0:3 = of.batch_norm_grad %x, %x, %c : (tensor<8x4x3xf32>, tensor<8x4x3xf32>, tensor<3xf32>) -> (tensor<8x4x3xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f(%x: tensor<2x8x36xf32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{dnn.batch_norm writes 3 inits, got 1}}
  %0 = of.library_call "dnn.batch_norm"(%x, %c, %c) into %x {params = array<i64: 2, 8, 36, 4532020583610935537>} : (tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>) into tensor<2x8x36xf32> -> tensor<2x8x36xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x36xf32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{dnn.batch_norm parameters: epsilon must be positive and finite}}
  %0:3 = of.library_call "dnn.batch_norm"(%x, %c, %c) into %x, %c, %c {params = array<i64: 2, 8, 36, 0>} : (tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>) into tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x8x36xf64>, %c: tensor<8xf64>) {
  // expected-error@+1 {{dnn.batch_norm is f32 only, got 'f64'}}
  %0:3 = of.library_call "dnn.batch_norm"(%x, %c, %c) into %x, %c, %c {params = array<i64: 2, 8, 36, 4532020583610935537>} : (tensor<2x8x36xf64>, tensor<8xf64>, tensor<8xf64>) into tensor<2x8x36xf64>, tensor<8xf64>, tensor<8xf64> -> tensor<2x8x36xf64>, tensor<8xf64>, tensor<8xf64>
  return
}

// -----

func.func @f(%x: tensor<2x8x36xf32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{operand 5 has shape [8], the parameters of dnn.batch_norm_grad give [2, 8, 36]}}
  %0:3 = of.library_call "dnn.batch_norm_grad"(%x, %x, %c, %c, %c) into %c, %c, %c {params = array<i64: 2, 8, 36, 4532020583610935537>} : (tensor<2x8x36xf32>, tensor<2x8x36xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) into tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @topk_k(%x: tensor<2x5xf32>) {
  // expected-error@+1 {{k = 6 must be in [0, 5] (the last dimension)}}
  %v, %i = of.topk %x {k = 6 : i64} : (tensor<2x5xf32>) -> (tensor<2x6xf32>, tensor<2x6xi64>)
  return
}
