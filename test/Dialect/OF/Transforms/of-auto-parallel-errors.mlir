// --of-auto-parallel: what it refuses, and why.
// RUN: of-opt %s -split-input-file --of-auto-parallel -verify-diagnostics -o /dev/null
// RUN: not of-opt %s -split-input-file --of-auto-parallel=factorize=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIXED
// RUN: not of-opt %s -split-input-file --of-auto-parallel=solver=oracle -o /dev/null 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not of-opt %s -split-input-file --of-auto-parallel=placement=nowhere -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOWHERE

// SOLVER: error: --of-auto-parallel: solver takes cbc, greedy or exhaustive, not 'oracle'
// NOWHERE: error: --of-auto-parallel: no placement @nowhere
// A split written by the user fixes the mesh's shape; factorizing needs one
// placement.
// FIXED: error: --of-auto-parallel: factorize needs a module with one placement, not 2
// FIXED: error: --of-auto-parallel: factorize needs a program without split or partial annotations (they fix the mesh's shape)

// Two placements and no annotation: which one is meant must be said.
of.placement @a {device = "cpu", shape = [2]}
of.placement @b {device = "cpu", shape = [2]}
// expected-error@+1 {{--of-auto-parallel: the module has several placements; name one with placement=NAME}}
func.func @which(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %y = of.relu %x : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// A pipeline (two placements in use) is not searched yet.
of.placement @a {device = "cpu", shape = [2]}
of.placement @b {device = "cpu", shape = [2]}
// expected-error@+1 {{--of-auto-parallel handles a function on one placement; this one uses 2 (a pipeline)}}
func.func @stages(%x: tensor<8x8xf32, #of.sbp<@a, [B]>>) -> tensor<8x8xf32, #of.sbp<@b, [B]>> {
  %y = of.relu %x : (tensor<8x8xf32, #of.sbp<@a, [B]>>) -> tensor<8x8xf32>
  %z = of.boxing %y : tensor<8x8xf32> -> tensor<8x8xf32, #of.sbp<@b, [B]>>
  return %z : tensor<8x8xf32, #of.sbp<@b, [B]>>
}

// -----

// A shape no split of which fits still gets the whole-tensor layout; an
// op without signatures is refused.
of.placement @a {device = "cpu", shape = [2]}
func.func @fine(%x: tensor<1xf32>) -> tensor<1xf32> {
  // expected-remark@-1 {{auto-parallel on @a [2]: exact reductions (optimal)}}
  %y = of.relu %x : (tensor<1xf32>) -> tensor<1xf32>
  return %y : tensor<1xf32>
}

// -----

of.placement @mesh {device = "cpu", shape = [4]}
func.func @fixed(%x: tensor<8x8xf32, #of.sbp<@mesh, [S(0)]>>) -> tensor<8x8xf32> {
  // expected-remark@-1 {{auto-parallel on @mesh [4]}}
  %y = of.relu %x : (tensor<8x8xf32, #of.sbp<@mesh, [S(0)]>>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
