// The scatter of an embedding gradient: by default the columns outermost
// (each column's loop over the positions independent, for a GPU's
// threads); with row-scatters (the CPU pipeline's choice) the positions
// outermost and each row's columns inside.
// RUN: of-opt %s --convert-of-to-linalg | FileCheck %s --check-prefix=COLS
// RUN: of-opt %s --convert-of-to-linalg=row-scatters=true | FileCheck %s --check-prefix=ROWS
// RUN: of-opt %s --of-pipeline=cpu,stop-after=linalg | FileCheck %s --check-prefix=ROWS

// COLS-LABEL: func.func @scatter
// COLS: %[[C4:.*]] = arith.constant 4 : index
// COLS: scf.for %[[C:[a-z0-9_]+]] = %{{.*}} to %[[C4]]
// COLS: scf.for %[[P:[a-z0-9_]+]] = %{{.*}} to %{{.*}}
// COLS: tensor.extract %{{.*}}[%[[P]]] : tensor<6xi64>
// COLS: scf.if
// COLS: tensor.extract %{{.*}}[%[[P]], %[[C]]] : tensor<6x4xf32>

// ROWS-LABEL: func.func @scatter
// ROWS: %[[C6:.*]] = arith.constant 6 : index
// ROWS: scf.for %[[P:[a-z0-9_]+]] = %{{.*}} to %[[C6]]
// ROWS: scf.for %[[C:[a-z0-9_]+]] =
// ROWS: tensor.extract %{{.*}}[%[[P]]] : tensor<6xi64>
// ROWS: scf.if
// ROWS: tensor.extract %{{.*}}[%[[P]], %[[C]]] : tensor<6x4xf32>
func.func @scatter(%ids: tensor<6xi64>, %dy: tensor<6x4xf32>, %w: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %r = of.embedding_grad %ids, %dy into %w : (tensor<6xi64>, tensor<6x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}
