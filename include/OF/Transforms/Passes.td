//===- Passes.td - OF transforms on upstream dialects ------*- tablegen -*-===//

#ifndef OF_TRANSFORMS_PASSES_TD
#define OF_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseElementwisePass : Pass<"of-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise linalg ops, leaving matrix products alone";
  let description = [{
    Upstream elementwise fusion (producer/consumer `linalg.generic` fusion
    and folding of reshapes into generics by expansion), controlled so that
    contractions (`linalg.contract`, matmul-like generics) are neither fused
    into nor reshaped: they stay whole so that the plan builder can hand
    them to BLAS, which is faster than a fused loop nest.

    ```mlir
    %a = linalg.generic ... { exp } ins(%x) outs(%e0)
    %b = linalg.generic ... { tanh } ins(%a) outs(%e1)
    // becomes one generic computing tanh(exp(x))
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // OF_TRANSFORMS_PASSES_TD
