# -*- Python -*-
# lit configuration of the OF test suite.

import os
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "OF"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.of_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%of_src_root", config.of_src_root))
config.substitutions.append(("%of_obj_root", config.of_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.of_tools_dir, config.llvm_tools_dir]
tools = ["of-opt", "of-translate", "of-run"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.of_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

import sys
config.substitutions.append(("%python", sys.executable))

# of-sign is built where libsodium-dev is installed (tools/CMakeLists.txt).
if os.path.exists(os.path.join(config.of_tools_dir, "of-sign")):
    config.available_features.add("of-sign")

# ptxas (the CUDA toolkit's assembler) turns PTX into cubins; without it
# the cubin tests of --of-pipeline=cuda are unsupported (PTX needs only the
# toolkit's libdevice).
import shutil
if shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("ptxas")
# The toolkit's libdevice, which every --of-pipeline=cuda compile links
# (fma, floor, fabs of the kernels' math); without it those tests are
# unsupported.
_toolkits = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
if any(t and os.path.exists(os.path.join(t, "nvvm/libdevice/libdevice.10.bc"))
       for t in _toolkits + ["/usr/local/cuda"]):
    config.available_features.add("libdevice")

# A CUDA GPU with its driver: the GPU execution tests run only there (they
# are reported UNSUPPORTED elsewhere, never passed).
try:
    _smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                          timeout=30)
    _gpus = [l for l in _smi.stdout.splitlines() if l.startswith("GPU ")]
    if _smi.returncode == 0 and _gpus:
        config.available_features.add("cuda-gpu")
    # Multi-rank NCCL needs a GPU per rank.
    if _smi.returncode == 0 and len(_gpus) >= 2:
        config.available_features.add("cuda-gpus-2")
except (OSError, subprocess.SubprocessError):
    pass

# The toolkit's libcuda link stub: loading it exercises the CUDA executor's
# "no driver" path on machines without a GPU.
_cuda_stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
if os.path.exists(_cuda_stub):
    config.available_features.add("cuda-stub")
    config.substitutions.append(("%cuda_stub", _cuda_stub))
# The toolkit's GPU libraries, which libofrt loads and resolves without a
# GPU (of-run --check-libraries).
for _feature, _file in (("cublas-library", "libcublas.so.13"),
                        ("cublaslt-library", "libcublasLt.so.13"),
                        ("cudnn-library", "libcudnn.so.9"),
                        ("nccl-library", "libnccl.so.2")):
    if os.path.exists(os.path.join("/usr/local/cuda/lib64", _file)):
        config.available_features.add(_feature)
