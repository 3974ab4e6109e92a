"""torch.backends.cudnn: the switches scripts set (see of.backends).
`benchmark` and `deterministic` choose how cuDNN picks its algorithms in
PyTorch; of's plans are fixed at compile time, so they change nothing."""

allow_tf32 = True
benchmark = False
deterministic = False
enabled = True
