"""docs/pytorch-coverage.md is what scripts/pytorch_coverage.py generates
from the frontend and the tests: an API added, renamed or removed without
regenerating the doc fails here, and so does a claimed API no test uses."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import pytorch_coverage  # noqa: E402


def test_the_coverage_doc_is_current():
    text, untested = pytorch_coverage.render()
    with open(pytorch_coverage.DOC, encoding="utf-8") as f:
        doc = f.read()
    # the list depends on PyTorch's namespaces: another PyTorch, another list
    version = torch.__version__.split("+")[0]
    if f"PyTorch {version}\n" not in doc:
        pytest.skip(f"docs/pytorch-coverage.md was generated against another PyTorch; "
                    f"this machine has {version}")
    assert doc == text, ("docs/pytorch-coverage.md is stale: run PYTHONPATH=build/python "
                         "python3 scripts/pytorch_coverage.py --write")
    assert not untested, f"claimed PyTorch APIs no test uses: {untested}"
