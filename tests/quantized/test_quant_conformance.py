"""The conformance suite on the quantized dtypes (what ``ember conformance DEVICE --dtype qint8`` runs),
on cpu and on each other installed device."""
import pytest

import ember
from ember.testing.conformance import run_conformance

DEVICES = ["cpu"] + [d for d in ("vdev", "opencl") if hasattr(ember, d) and getattr(ember, d).is_available()]


@pytest.mark.parametrize("device", DEVICES)
def test_conformance_quantized_dtypes(device):
    dtypes = "qint8,quint8,qint32" if device != "opencl" else "qint8"
    r = run_conformance(device, dtypes=dtypes, device_checks=device == "cpu")
    failures = [o for o in r.outcomes if o.status == "failed"] if hasattr(r, "outcomes") else []
    assert r.exit_code == 0, "\n".join(str(getattr(o, "message", o)) for o in failures[:5])
    # every quantized op ran natively on every requested dtype it declares
    assert r.sources and all(src == "native" for src in r.sources.values()), r.sources


def test_default_run_does_not_test_quantized_dtypes():
    from ember.testing.conformance._runner import make_target
    assert "qint8" not in make_target("cpu").dtypes
    assert make_target("cpu", "qint8").dtypes == ["qint8"]
    with pytest.raises(ValueError, match="not declared by device type 'cpu'"):
        make_target("cpu", "qint7")
