// RUN: of-opt --of-fuse-elementwise %s | FileCheck %s

// --of-fuse-elementwise on its own: an elementwise linalg.generic whose only
// reader is another elementwise generic fuses into it, so the intermediate
// tensor (and its loop) disappears.
#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0, %arg1 : tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[S:.*]] = arith.addf
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[S]]
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK-NOT: linalg.generic
func.func @chain(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%s : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %m : tensor<8xf32>
}
