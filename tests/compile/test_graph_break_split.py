"""ember.compile splits a function at the top-level statement whose host read broke the capture
(core/ember/compiler/_split.py, docs/compile.md "Host reads"): the statements before it replay, the statement
runs eagerly, the statements after it are compiled on their own. Compiled and eager runs side by side, float64,
bit for bit: returned values, parameters, .grad and optimizer state."""
from __future__ import annotations

import inspect

import ember
import ember.nn as nn
import pytest
from _compile_steps import assert_same_state, batches, mlp_step

F = nn.functional
FACTOR = 1.0          # read by a break statement: a global changed between calls is seen there


def _models(opt="SGD", seed=0, **kw):
    """Two identical (model, optimizer) pairs: one for eager, one for compiled runs."""
    return [mlp_step(seed, opt=opt, **kw)[:2] for _ in range(2)]


def _assert_same_optim_state(o1, o2):
    for p1, p2 in zip(o1.param_groups[0]["params"], o2.param_groups[0]["params"]):
        s1, s2 = o1.state.get(p1, {}), o2.state.get(p2, {})
        assert s1.keys() == s2.keys()
        for k in s1:
            a, b = s1[k], s2[k]
            if isinstance(a, ember.Tensor):
                assert ember.equal(a, b), k
            else:
                assert a == b, k


def _split_row(cf):
    rows = [r for r in cf._compiled.info() if r["split"] is not None]
    assert len(rows) == 1, cf._compiled.info()
    return rows[0]


def _segment(row, kind):
    """The segment ``kind`` of an info row's split (or of a split's own info)."""
    split = row if "segments" in row else row["split"]
    return next(s for s in split["segments"] if s["segment"] == kind)


def _item_step(model, optim):
    def step(x, y):
        optim.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        return loss.item()
    return step


@pytest.mark.parametrize("opt,kw", [("SGD", {"momentum": 0.9}), ("Adam", {})])
def test_item_at_the_end_replays_the_step(opt, kw):
    (m1, o1), (m2, o2) = _models(opt, **kw)
    eager, compiled = _item_step(m1, o1), ember.compile(_item_step(m2, o2))
    for x, y in batches(8):
        a, b = eager(x, y), compiled(x, y)
        assert type(b) is float and a == b
        assert_same_state(m1, m2)
        _assert_same_optim_state(o1, o2)
    row = _split_row(compiled)
    assert row["eager_reason"] is None and "item()" in row["graph_breaks"][0][0]
    prefix = _segment(row, "prefix")["graphs"]
    assert sum(r["replays"] for r in prefix) >= 3 and all(r["kernel_calls"] > 0 for r in prefix), prefix
    assert all(r["eager_reason"] is None for r in prefix), prefix
    brk = _segment(row, "break")
    line = inspect.getsourcelines(_item_step)[1] + 6
    assert brk["lines"] == str(line) and brk["at"].endswith(f"test_graph_break_split.py:{line}")
    assert [s["segment"] for s in row["split"]["segments"]] == ["prefix", "break"]     # nothing after it
    # the profiler reports the same rows; the segments are not listed a second time as functions of their own
    names = [r["function"] for r in ember.profiler.compiled_graphs()]
    assert not any("[prefix" in n for n in names)


def test_accumulating_and_printing_host_values(capsys):
    (m1, o1), (m2, o2) = _models()

    def make(model, optim, log):
        def step(x, y):
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optim.step()
            log["total"] += loss.item()
            log["seen"].append(loss.item())
            print(f"loss {loss.item():.17g}")
        return step
    log1, log2 = {"total": 0.0, "seen": []}, {"total": 0.0, "seen": []}
    eager, compiled = make(m1, o1, log1), ember.compile(make(m2, o2, log2))
    data = batches(7)
    for x, y in data:
        assert eager(x, y) is None
    eager_out = capsys.readouterr().out
    for x, y in data:
        assert compiled(x, y) is None
    assert capsys.readouterr().out == eager_out and eager_out.count("loss") == 7    # every call prints
    assert log1 == log2 and len(log2["seen"]) == 7
    assert_same_state(m1, m2)
    row = _split_row(compiled)
    assert [s["segment"] for s in row["split"]["segments"]] == ["prefix", "break", "rest"]
    assert sum(r["replays"] for r in _segment(row, "prefix")["graphs"]) >= 2
    # the rest starts with another host read: nothing before it to replay, so it runs eagerly (and says so)
    rest = _segment(row, "rest")["graphs"]
    assert rest and all(r["split"] is None and "first statement" in r["eager_reason"] for r in rest), rest


def test_break_between_forward_and_backward_is_correct_and_runs_eagerly():
    (m1, o1), (m2, o2) = _models()
    hits = []

    def make(model, optim):
        def step(x, y):
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if loss.item() > 1.0:
                hits.append(1)
            loss.backward()
            optim.step()
            return loss
        return step
    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    for x, y in batches(6):
        assert ember.equal(eager(x, y), compiled(x, y))
        assert_same_state(m1, m2)
    assert len(hits) % 2 == 0 and hits              # the eager statement ran on every call of both
    row = _split_row(compiled)
    prefix = _segment(row, "prefix")["graphs"]
    # the prefix returns the loss before its backward ran: a forward alone is not replayed, it runs eagerly
    assert all(r["replays"] == 0 for r in prefix)
    assert any(r["eager_reason"] and "require grad" in r["eager_reason"] for r in prefix), prefix
    assert _segment(row, "rest")["eager_calls"] > 0   # so does the rest, which receives that loss


def test_two_breaks_split_recursively():
    (m1, o1), (m2, o2) = _models("Adam")

    def make(model, optim, log):
        def step(x, y):
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optim.step()
            log.append(loss.item())
            with ember.no_grad():
                out = model(x).softmax(-1)
                conf = out.amax(-1)
            log.append(conf.mean().item())
            return conf * 2
        return step
    l1, l2 = [], []
    eager, compiled = make(m1, o1, l1), ember.compile(make(m2, o2, l2))
    for x, y in batches(10):
        assert ember.equal(eager(x, y), compiled(x, y))
        assert_same_state(m1, m2)
        _assert_same_optim_state(o1, o2)
    assert l1 == l2 and len(l2) == 20
    row = _split_row(compiled)
    assert sum(r["replays"] for r in _segment(row, "prefix")["graphs"]) >= 3
    inner = [r for r in _segment(row, "rest")["graphs"] if r["split"] is not None]
    assert len(inner) == 1, _segment(row, "rest")
    assert [s["segment"] for s in inner[0]["split"]["segments"]] == ["prefix", "break", "rest"]
    assert sum(r["replays"] for r in _segment(inner[0], "prefix")["graphs"]) >= 2     # the no_grad forward
    assert sum(r["replays"] for r in _segment(inner[0], "rest")["graphs"]) >= 2       # `return conf * 2`


def test_closure_cells_and_globals_are_seen_live():
    global FACTOR
    (m1, o1), (m2, o2) = _models()
    (m3, o3), (m4, o4) = _models(seed=5)

    def make(model, optim):
        def step(x, y):
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optim.step()
            return loss.item() * FACTOR

        def swap(m, o):
            nonlocal model, optim
            model, optim = m, o
        return step, swap
    eager, swap_e = make(m1, o1)
    step, swap_c = make(m2, o2)
    compiled = ember.compile(step)
    data = batches(10)
    try:
        for i, (x, y) in enumerate(data):
            if i == 5:                               # rebinds the cells the compiled segments read
                swap_e(m3, o3)
                swap_c(m4, o4)
                FACTOR = 2.0                         # read by the eager break statement
            assert eager(x, y) == compiled(x, y)
    finally:
        FACTOR = 1.0
    assert_same_state(m1, m2)
    assert_same_state(m3, m4)
    assert not ember.equal(m3[0].weight, mlp_step(5)[0][0].weight)       # the second pair trained


def test_a_method_is_split_with_its_instance():
    (m1, o1), (m2, o2) = _models()

    class Trainer:
        def __init__(self, model, optim):
            self.model, self.optim = model, optim

        def step(self, x, y, scale=1.0):
            self.optim.zero_grad()
            loss = F.cross_entropy(self.model(x), y) * scale
            loss.backward()
            self.optim.step()
            return loss.item()
    t1, t2 = Trainer(m1, o1), Trainer(m2, o2)
    compiled = ember.compile(t2.step)
    for x, y in batches(6):
        assert t1.step(x, y) == compiled(x, y)
        assert_same_state(m1, m2)
    assert sum(r["replays"] for r in _segment(_split_row(compiled), "prefix")["graphs"]) >= 2


def _eager_reasons(cf):
    return [r["eager_reason"] for r in cf._compiled.info() if r["eager_reason"]]


def test_what_is_not_split_runs_eagerly_and_says_why():
    m, _, step = mlp_step()
    lam = ember.compile(lambda x, y: step(x, y).item())

    def loop(x):
        for _ in range(3):
            x = x * 2
            if x.sum().item() > 1e9:
                break
        return x + 1

    def early_return(x, flag):
        if flag:
            return x
        y = x * 2
        return y.sum().item()
    ns = {}
    exec("def from_exec(x):\n    y = x * 3\n    return y.sum().item()\n", ns)
    cases = [(lam, batches(1)[0], "a lambda"),
             (ember.compile(loop), (ember.ones(3),), "first statement"),
             (ember.compile(early_return), (ember.ones(3), False), "return statement (line"),
             (ember.compile(ns["from_exec"]), (ember.ones(3),), "source is not available")]
    for cf, args, why in cases:
        for _ in range(4):
            cf(*args)
        reasons = _eager_reasons(cf)
        assert reasons and "graph break: Tensor.item()" in reasons[0] and "; not split: " in reasons[0], reasons
        assert why in reasons[0], reasons
        assert all(r["split"] is None for r in cf._compiled.info())
    assert ember.equal(ember.compile(loop)(ember.ones(3)), loop(ember.ones(3)))


def test_fullgraph_still_raises_naming_the_line():
    m, _, inner = mlp_step()

    def step(x, y):
        loss = inner(x, y)
        return loss.item()
    strict = ember.compile(step, fullgraph=True)
    x, y = batches(1)[0]
    strict(x, y)                                                    # the warm-up runs eagerly
    line = inspect.getsourcelines(step)[1] + 2
    with pytest.raises(ember.compiler.GraphBreakError, match=rf"test_graph_break_split.py:{line}: Tensor.item\(\)"):
        strict(x, y)


def test_a_break_in_a_called_helper_splits_at_the_calling_statement():
    (m1, o1), (m2, o2) = _models()

    def log_loss(loss, out):
        out.append(round(loss.item(), 12))

    def make(model, optim, out):
        def step(x, y):
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optim.step()
            log_loss(loss, out)
            return loss
        return step
    l1, l2 = [], []
    eager, compiled = make(m1, o1, l1), ember.compile(make(m2, o2, l2))
    for x, y in batches(8):
        assert ember.equal(eager(x, y), compiled(x, y))
    assert l1 == l2
    assert_same_state(m1, m2)
    row = _split_row(compiled)
    assert sum(r["replays"] for r in _segment(row, "prefix")["graphs"]) >= 2
    rest = _segment(row, "rest")                     # `return loss`: nothing to capture, run as it is
    assert rest["graphs"] == [] and "nothing to capture" in rest["runs"] and rest["eager_calls"] >= 4


def test_reset_forgets_the_segments():
    (m1, o1), (m2, o2) = _models()
    eager, compiled = _item_step(m1, o1), ember.compile(_item_step(m2, o2))
    data = batches(8)
    for x, y in data[:4]:
        assert eager(x, y) == compiled(x, y)
    ember.compiler.reset()
    assert not compiled._compiled.entries and not compiled._compiled.__dict__.get("_splits")
    for x, y in data[4:]:
        assert eager(x, y) == compiled(x, y)
    assert_same_state(m1, m2)


def test_a_parameter_bound_before_the_break_is_the_parameter_itself():
    (m1, o1), (m2, o2) = _models()

    def make(model, optim):
        def step(x, y):
            w = model[0].weight                      # returned by the prefix: the parameter, not a copy
            optim.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optim.step()
            return loss.item(), w.grad.sum().item(), w is model[0].weight
        return step
    eager, compiled = make(m1, o1), ember.compile(make(m2, o2))
    for x, y in batches(7):
        assert eager(x, y) == compiled(x, y)
    assert sum(r["replays"] for r in _segment(_split_row(compiled), "prefix")["graphs"]) >= 2


def test_tracebacks_and_later_breaks_name_the_users_lines():
    (m, o), _ = _models()
    bad = [1.0]

    def step(x, y):
        o.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        o.step()
        value = loss.item() / bad[0]
        with ember.no_grad():
            out = m(x).sum(1)
        return value, out.max().item()
    eager = [step(x, y) for x, y in batches(7)]
    m2, o2 = _models()[1]
    m, o = m2, o2                                    # the same step on fresh copies, compiled
    compiled = ember.compile(step)
    assert [compiled(x, y) for x, y in batches(7)] == eager
    bad[0] = 0.0
    first = inspect.getsourcelines(step)[1]
    with pytest.raises(ZeroDivisionError) as err:   # raised by the eager break statement, at the user's line
        compiled(*batches(1)[0])
    last = err.traceback[-1]
    assert last.path.name == "test_graph_break_split.py" and last.lineno + 1 == first + 5
    row = _split_row(compiled)
    assert row["split"]["at"].endswith(f"test_graph_break_split.py:{first + 5}")
    # `value` (read on the host) is used only by the final return: the rest is cut before it, so the no_grad
    # forward replays without `value` in its signature, and the return (a second host read) runs eagerly
    rest = _segment(row, "rest")
    assert "cut before its final return" in rest["runs"]
    assert rest["split"]["statement"] == 1 and _segment(rest["split"], "break")["lines"] == str(first + 8)
    assert sum(r["replays"] for r in _segment(rest["split"], "prefix")["graphs"]) >= 2


def test_the_decorator_form_is_split():
    (m1, o1), (m2, o2) = _models()
    eager = _item_step(m1, o1)

    @ember.compile
    def step(x, y):
        o2.zero_grad()
        loss = F.cross_entropy(m2(x), y)
        loss.backward()
        o2.step()
        return loss.item()
    for x, y in batches(7):
        assert eager(x, y) == step(x, y)
    assert_same_state(m1, m2)
    assert sum(r["replays"] for r in _segment(_split_row(step), "prefix")["graphs"]) >= 2


def test_global_and_generator_functions_are_not_split():
    def uses_global(x):
        global FACTOR
        y = x * FACTOR
        return y.sum().item()

    def gen(x):
        y = x * 2
        yield y.sum().item()
    cf = ember.compile(uses_global)
    for _ in range(4):
        assert cf(ember.ones(3)) == 3.0
    assert "declares global names" in _eager_reasons(cf)[0]
    split, why = ember.compiler._split.describe(gen)
    assert split is None and "generator" in why
