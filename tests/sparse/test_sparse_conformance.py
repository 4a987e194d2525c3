"""The conformance suite with --layout sparse_coo, end to end (the plugin's samplers through the
runner): every entry passes on cpu and vdev, and a subset on opencl (the full opencl run is the CI's
``ember conformance opencl --layout sparse_coo``)."""
from __future__ import annotations

import subprocess
import sys

import ember
import pytest
from _sparse_helpers import DEVICES
from ember.testing.conformance import run_conformance
from ember.testing.opdb import op_db

SPARSE_IDS = {"add.sparse_coo", "sub.sparse_coo", "mul.sparse_coo", "true_divide.sparse_coo", "sum.sparse_coo",
              "mm.sparse_coo", "matmul.sparse_coo", "index_select.sparse_coo", "cat.sparse_coo", "neg.sparse_coo",
              "abs.sparse_coo", "t.sparse_coo", "transpose.sparse_coo", "narrow.sparse_coo", "sparse_coo_tensor",
              "sparse_to_dense", "sparse_coalesce", "sparse_values", "sparse_mm", "sparse_sum", "sparse_softmax",
              "sparse_log_softmax", "exp.sparse_coo"}


def test_entries_are_contributed_with_samplers():
    db = {o.id: o for o in op_db() if "sparse_coo" in o.layout_samplers}
    assert SPARSE_IDS <= set(db), SPARSE_IDS - set(db)
    s = db["add.sparse_coo"].layout_samplers["sparse_coo"](db["add.sparse_coo"], "cpu", ember.float32, False)
    first = next(iter(s))
    assert first.input.is_sparse and first.args[0].is_sparse


def _check(results):
    assert results.exit_code == 0, "\n".join(f"{o.test} {o.op} {o.dtype}: {o.message[:400]}"
                                             for o in results.failures[:5])
    tested = {o.op for o in results.outcomes if o.status == "passed"}
    return tested


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "opencl"])
def test_conformance_sparse_layout(device):
    r = run_conformance(device, layout="sparse_coo", device_checks=False)
    tested = _check(r)
    assert SPARSE_IDS <= tested, SPARSE_IDS - tested
    assert {o.test for o in r.outcomes if o.status == "passed"} >= {"op", "grad", "errors"}


@pytest.mark.skipif("opencl" not in DEVICES, reason="ember-opencl (PoCL) is not installed")
def test_conformance_sparse_layout_opencl_subset():
    r = run_conformance("opencl", layout="sparse_coo", ops="add*,mm*,sparse_mm,sparse_coalesce,sparse_softmax",
                        dtypes="float32,int64", device_checks=False)
    tested = _check(r)
    assert {"add.sparse_coo", "sparse_mm", "sparse_coalesce"} <= tested


def test_conformance_cli_layout_flag():
    r = subprocess.run([sys.executable, "-m", "ember", "conformance", "cpu", "--layout", "sparse_coo", "--op",
                        "sparse_mm,add*", "--dtype", "float64"], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "layout sparse_coo" in r.stdout and "result: PASSED" in r.stdout
