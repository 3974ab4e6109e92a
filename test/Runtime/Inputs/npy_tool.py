"""Writes the .npy inputs of the of-run lit tests and checks the outputs.

  npy_tool.py inputs DIR    writes x.npy, y.npy, ids.npy, the gemm and dtype
                            inputs, and the malformed files of the error tests
  npy_tool.py check DIR     checks DIR/out (sample.ofp), DIR/gemm (gemm-f32.ofp)
                            and DIR/dtypes (dtypes.ofp) against NumPy
"""
import os
import sys

import numpy as np


def sample_inputs():
    x = (np.arange(16, dtype=np.float32) * 0.5 - 3).astype(np.float32)
    y = (np.arange(16, dtype=np.float32) * -0.25 + 1).astype(np.float32)
    return x, y


def sample_weight():
    i, j = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    return (i - 2 * j).astype(np.float32)


def gemm_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 6, 5)).astype(np.float32)  # [batch, k, m]
    b = rng.standard_normal((7, 6)).astype(np.float32)  # [n, k]
    return a, b


def dtype_inputs():
    values = np.array([[0, 1, 2], [3, 4, 5]])
    arrays = {
        "f32": values.astype("<f4") / 4,
        "f64": values.astype("<f8") / 3,
        "f16": values.astype("<f2") / 2,
        "i64": values.astype("<i8") - (1 << 40),
        "i32": values.astype("<i4") - 100000,
        "i8": values.astype("|i1") - 3,
        "i1": values % 2 == 1,
    }
    # bf16 as raw bits: the upper halves of the f32 values.
    arrays["bf16"] = (arrays["f32"].view("<u4") >> 16).astype("<u2")
    return arrays


def write_inputs(directory):
    x, y = sample_inputs()
    np.save(os.path.join(directory, "x.npy"), x)
    np.save(os.path.join(directory, "y.npy"), y)
    np.save(os.path.join(directory, "ids.npy"),
            np.array([0, 1, 2, 3, 20, 5, 6, 7], dtype=np.int32))
    a, b = gemm_inputs()
    np.save(os.path.join(directory, "a.npy"), a)
    np.save(os.path.join(directory, "b.npy"), b)
    for name, array in dtype_inputs().items():
        np.save(os.path.join(directory, name + ".npy"), array)
    # Versions 2.0 and 3.0 of the format read like 1.0.
    with open(os.path.join(directory, "f32-v2.npy"), "wb") as f:
        np.lib.format.write_array(f, dtype_inputs()["f32"], version=(2, 0))
    with open(os.path.join(directory, "f64-v3.npy"), "wb") as f:
        np.lib.format.write_array(f, dtype_inputs()["f64"], version=(3, 0))
    try:  # np.save of an ml_dtypes.bfloat16 array, where installed
        import ml_dtypes
        bf16 = dtype_inputs()["f32"].astype(ml_dtypes.bfloat16)
        np.save(os.path.join(directory, "bf16-ml.npy"), bf16)
    except ImportError:
        np.save(os.path.join(directory, "bf16-ml.npy"),
                dtype_inputs()["bf16"].view("V2"))

    # Malformed or mismatched inputs for the error tests.
    np.save(os.path.join(directory, "x-f64.npy"), x.astype(np.float64))
    np.save(os.path.join(directory, "x-4x4.npy"), x.reshape(4, 4))
    np.save(os.path.join(directory, "x-fortran.npy"),
            np.asfortranarray(x.reshape(4, 4)))
    np.save(os.path.join(directory, "x-big-endian.npy"), x.astype(">f4"))
    data = open(os.path.join(directory, "x.npy"), "rb").read()
    open(os.path.join(directory, "x-truncated.npy"), "wb").write(data[:-4])
    open(os.path.join(directory, "x-trailing.npy"), "wb").write(data + b"\0" * 8)
    open(os.path.join(directory, "not-npy.npy"), "wb").write(b"hello world\n")
    header = data.replace(b"'shape'", b"'shapes'")
    open(os.path.join(directory, "x-bad-key.npy"), "wb").write(header)


def check_outputs(directory):
    x, y = sample_inputs()
    out = os.path.join(directory, "out")
    total = np.load(os.path.join(out, "sum.npy"))
    product = np.load(os.path.join(out, "y.gemm.npy"))
    copy = np.load(os.path.join(out, "copy.npy"))
    assert total.dtype == np.float32 and total.shape == (16,), total
    np.testing.assert_array_equal(total, x + y)
    expected = total.reshape(4, 4).astype(np.float64) @ sample_weight()
    assert product.shape == (4, 4)
    np.testing.assert_allclose(product, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(copy, product)

    a, b = gemm_inputs()
    c = np.load(os.path.join(directory, "gemm", "c.npy"))
    assert c.shape == (3, 5, 10), c.shape  # rows padded to n + 3
    expected = np.einsum("bkm,nk->bmn", a.astype(np.float64), b)
    np.testing.assert_allclose(c[:, :, :7], expected, rtol=1e-5, atol=1e-5)

    for name, array in dtype_inputs().items():
        result = np.load(os.path.join(directory, "dtypes", name + ".out.npy"))
        assert result.dtype == array.dtype, (name, result.dtype, array.dtype)
        np.testing.assert_array_equal(result, array)
    # bf16 read as '<V2' (ml_dtypes) comes back as raw bits.
    result = np.load(os.path.join(directory, "dtypes-ml", "bf16.out.npy"))
    np.testing.assert_array_equal(result, dtype_inputs()["bf16"])
    print("outputs match")


if __name__ == "__main__":
    {"inputs": write_inputs, "check": check_outputs}[sys.argv[1]](sys.argv[2])
