"""Issue 20 part 2: ``ember.library.op_schemas()`` and ``ember ops``: every declared op with its
schema, calling convention, variants, primitive / composite, and per device where it resolves."""
import json
import subprocess
import sys

import pytest

import ember
from ember import _dispatch
from ember.library import op_schemas


@pytest.fixture(scope="module")
def schemas():
    return {s.name: s for s in op_schemas(["cpu"])}


def test_every_declared_op_is_listed(schemas):
    assert set(schemas) == set(_dispatch.ops)


def test_a_primitive_structured_op(schemas):
    add = schemas["add"]
    assert add.schema.startswith("add(Tensor self, Tensor other")
    assert add.structured and add.primitive and add.composite_calls == ()
    assert add.variants == ("functional", "in-place", "out=")
    assert add.sources["cpu"]["float32"] == "native"


def test_the_calling_convention_of_sized_int_lists(schemas):
    mp = schemas["max_pool2d_with_indices"]
    args = {a[0]: a for a in mp.arguments}
    assert args["kernel_size"][1] == "int[2]"
    assert args["kernel_size"][3] == "a tuple of 2 ints (a single value is repeated)"
    assert mp.outputs == 2


def test_a_composite_names_the_ops_it_calls(schemas):
    composites = [s for s in schemas.values() if not s.primitive]
    assert composites
    assert all(set(s.composite_calls) <= set(schemas) for s in composites)
    assert sum(1 for s in composites if s.composite_calls) > len(composites) // 2


def test_sources_agree_with_the_dispatcher(schemas):
    for name in ("add", "acos", "max_pool2d_with_indices"):
        for dt, src in schemas[name].sources["cpu"].items():
            assert src == _dispatch.ops[name].source(("cpu", "strided", getattr(ember, dt)))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ember", "ops", *args], capture_output=True, text=True, timeout=300)


def test_cli_table_detail_json_and_errors():
    r = _cli("--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert any(line.split()[:3] == ["add", "S", "yes"] for line in r.stdout.splitlines())
    r = _cli("add")
    assert r.returncode == 0 and r.stdout.startswith("add(Tensor self"), r.stdout + r.stderr
    assert "alpha: Scalar = 1 -> a Python number" in r.stdout
    r = _cli("--json", "--device", "cpu", "add")
    assert json.loads(r.stdout)[0]["sources"]["cpu"]["float32"] == "native"
    r = _cli("no_such_op")
    assert r.returncode == 2 and "no op named no_such_op" in r.stderr


def test_cli_missing_lists_only_ops_with_a_missing_dtype():
    r = _cli("--json", "--device", "cpu", "--missing")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert all("missing" in s["sources"]["cpu"].values() for s in listed)
    assert "add" not in {s["name"] for s in listed}


def test_the_guide_table_agrees_with_what_ember_ops_says():
    """docs/vendor-guide.md 2.6.1's table and kernel_form (what `ember ops NAME` prints) describe the same forms."""
    import pathlib
    import re
    from ember._op_schemas import kernel_form
    from ember._schema import parse_schema
    guide = (pathlib.Path(__file__).parents[2] / "docs" / "vendor-guide.md").read_text()
    table = dict(re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", guide, re.M))
    args = {a.name: a for a in parse_schema("t(Tensor self, int[2] a, int[] b, bool[2] c, ScalarType d, "
                                            "Device e, int[2]? f) -> Tensor").arguments}
    pairs = [("int[N]", "a", "a tuple of Python ints", "a tuple of 2 ints"),
             ("int[]", "b", "a tuple of Python ints", "a tuple of ints"),
             ("bool[N]", "c", "a tuple of N Python bools", "a tuple of 2 bools"),
             ("ScalarType", "d", "an `ember.dtype`", "an ember.dtype"),
             ("Device", "e", "an `ember.device`", "an ember.device")]
    for row, arg, in_guide, in_form in pairs:
        assert in_guide in table[row], (row, table[row])
        assert kernel_form(args[arg], "t").startswith(in_form), kernel_form(args[arg], "t")
    assert "| `T?` (optional) | `None`, or the value normalised as `T`" in guide
    assert kernel_form(args["f"], "t") == "a tuple of 2 ints (a single value is repeated), or None"
