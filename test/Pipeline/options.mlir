// The options of --of-pipeline are declared once (PipelineOptions, a
// PassPipelineOptions) and parsed by MLIR's pass-options parser; a wrong
// option or value is named in the error, and of-opt --help lists them.
// RUN: of-opt %s --of-pipeline=cpu,stop-after=linalg,fuse=false | FileCheck %s
// RUN: not of-opt %s --of-pipeline=cpu,fuse=maybe 2>&1 | FileCheck %s --check-prefix=BOOL
// RUN: not of-opt %s --of-pipeline=cpu,fusion=true 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not of-opt %s --of-pipeline=cpu,stop-after=llvm 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not of-opt %s --of-pipeline=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not of-opt %s --of-pipeline=cpu,momentum=-1 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not of-opt %s --of-pipeline=cpu,accumulate=two 2>&1 | FileCheck %s --check-prefix=INT
// RUN: not of-opt %s "--of-pipeline=cpu,train=sgd momentum=0.9" 2>&1 | FileCheck %s --check-prefix=SPACE
// RUN: not of-opt %s --of-pipeline=cpu,schedule=zigzag 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: of-opt --help | FileCheck %s --check-prefix=HELP

// CHECK-LABEL: func.func @f
// CHECK: linalg.generic
// CHECK-NOT: ofrt.program
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = of.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// BOOL: --of-pipeline: 'fuse=maybe' is not a value fuse takes
// UNKNOWN: --of-pipeline: unknown option 'fusion'
// STAGE: --of-pipeline: stop-after takes sbp or partition or linalg or fusion or bufferize or plan, not 'llvm'
// TARGET: --of-pipeline: unknown target 'tpu' (this build knows: cpu, cuda)
// NEG: --of-pipeline: momentum takes a non-negative number, not '-1
// INT: --of-pipeline: 'accumulate=two' is not a value accumulate takes
// SPACE: --of-pipeline: 'train=sgd momentum=0.9' has a space
// SCHEDULE: --of-pipeline: schedule takes gpipe or 1f1b, not 'zigzag'
// HELP: --of-pipeline
// HELP: --stop-after=<string>
// HELP: --tf32
