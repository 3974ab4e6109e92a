// --of-explain-sbp: each op's chosen signature with its cost, and the
// alternatives, cheapest first; a machine file changes the costs.
// RUN: of-opt %s --of-explain-sbp -verify-diagnostics -o /dev/null
// RUN: echo '{"flops": 1e12, "memory_bandwidth": 1e11, "axes": [{"latency": 1e-3, "bandwidth": 1e6}]}' > %t.json
// RUN: of-opt %s --of-explain-sbp=machine-file=%t.json 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: not of-opt %s --of-explain-sbp=machine-file=%t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo '{"axes": [{"latency": -1}]}' > %t.bad.json
// RUN: not of-opt %s --of-explain-sbp=machine-file=%t.bad.json 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not of-opt %s --of-explain-sbp=interconnect=carrier-pigeon 2>&1 | FileCheck %s --check-prefix=PRESET

// SLOW: remark: chose [B], [S(1)] -> [S(1)] at {{.*}} (boxing 0.00e+00 s); alternatives: [S(1)], [S(0)] -> [P] at 1.13e-03 s
// MISSING: error: cannot read machine file
// BAD: error: machine file '{{.*}}': 'latency' must be a positive number
// PRESET: error: unknown interconnect 'carrier-pigeon' (expected mpi-shm, nvlink, infiniband, h100-cluster or h200-cluster)

of.placement @p {device = "cpu", shape = [2]}
func.func @f(%x: tensor<6x8xf32, #of.sbp<@p, [B]>>, %w: tensor<8x16xf32, #of.sbp<@p, [S(1)]>>) -> tensor<6x16xf32> {
  // expected-remark@+1 {{chose [B], [S(1)] -> [S(1)] at 7.94e-08 s (boxing 0.00e+00 s); alternatives: [S(1)], [S(0)] -> [P] at 1.15e-06 s; [S(0)], [B] -> [S(0)] at 1.22e-06 s; [B], [B] -> [B] at 1.25e-06 s;}}
  %h = of.matmul %x, %w : (tensor<6x8xf32, #of.sbp<@p, [B]>>, tensor<8x16xf32, #of.sbp<@p, [S(1)]>>) -> tensor<6x16xf32>
  // expected-remark@+1 {{chose [S(1)] -> [S(1)] at}}
  %g = of.gelu %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  return %g : tensor<6x16xf32>
}
