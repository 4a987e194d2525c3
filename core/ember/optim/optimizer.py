"""Optimizer: the base class of ember's optimizers (matches torch.optim.Optimizer).

An optimizer holds ``param_groups`` (a list of dicts: ``'params'`` -> list of tensors, plus
the hyperparameters of that group) and ``state`` (a dict keyed by parameter tensor holding
that parameter's buffers, e.g. Adam's ``exp_avg``). ``state_dict()`` packs both in
PyTorch's format, parameters replaced by their index in the order they appear in the
groups, so an ember optimizer state dict and a PyTorch one have the same structure.

A subclass implements ``step(self, closure=None)``; the base wraps it so that it runs
under ``ember.no_grad()``, calls the step hooks, and records that the optimizer stepped
(the lr schedulers warn when they step first).
"""
from __future__ import annotations

import copy
import functools
import itertools
import warnings
from collections import OrderedDict, defaultdict

from .._tensor import Tensor
from ..compiler._compiled import _COMPILING as _COMPILING_STATE
from .._grad_state import STATE as _AG

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _Required:
    """Marks a hyperparameter that every param group must set (PyTorch's ``required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()

# global hooks, run for every optimizer (register_optimizer_step_pre_hook / _post_hook)
_GLOBAL_PRE_HOOKS: OrderedDict = OrderedDict()
_GLOBAL_POST_HOOKS: OrderedDict = OrderedDict()
_hook_ids = itertools.count()


class _RemovableHandle:
    """Returned by the register_* functions: ``remove()`` unregisters the hook."""

    def __init__(self, hooks: dict, key: int):
        self._hooks, self.id = hooks, key

    def remove(self):
        """Unregister the hook (a second call does nothing), as torch.utils.hooks.RemovableHandle.remove."""
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_optimizer_step_pre_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's step; it may return
    ``(new_args, new_kwargs)``. Returns a handle with ``remove()`` (matches torch.optim.optimizer's)."""
    key = next(_hook_ids)
    _GLOBAL_PRE_HOOKS[key] = hook
    return _RemovableHandle(_GLOBAL_PRE_HOOKS, key)


def register_optimizer_step_post_hook(hook):
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's step. Returns a handle."""
    key = next(_hook_ids)
    _GLOBAL_POST_HOOKS[key] = hook
    return _RemovableHandle(_GLOBAL_POST_HOOKS, key)


def _typename(obj) -> str:
    """torch.typename's spelling: 'ember.FloatTensor' for tensors, the class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _wrap_step(step):
    """The subclass's ``step`` run under no_grad (grad enabled instead for an optimizer made with
    ``differentiable=True``, as PyTorch's ``_use_grad_for_differentiable``), with the step hooks around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self._optimizer_step_pre_hooks or _GLOBAL_PRE_HOOKS:
            for hook in itertools.chain(_GLOBAL_PRE_HOOKS.values(), self._optimizer_step_pre_hooks.values()):
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
        self._opt_called = True
        prev = _AG.enabled
        if self.defaults.get("differentiable", False):
            _AG.enabled = True     # the update is recorded: gradients flow through it
            _AG.update()
        else:
            _AG.enabled = False    # no_grad, inlined: this runs once per training step
            _AG.check = False
        try:
            out = step(self, *args, **kwargs)
        finally:
            _AG.enabled = prev
            _AG.update()
        if self._optimizer_step_post_hooks or _GLOBAL_POST_HOOKS:
            for hook in itertools.chain(self._optimizer_step_post_hooks.values(), _GLOBAL_POST_HOOKS.values()):
                hook(self, args, kwargs)
        return out
    wrapper._ember_wrapped_step = True
    return wrapper


class Optimizer:
    """Base class of all optimizers (matches torch.optim.Optimizer).

    :param params: an iterable of tensors, or of dicts (param groups) each with a ``'params'``
        entry and per-group hyperparameters overriding ``defaults``.
    :param defaults: the hyperparameters' default values (a dict).
    Raises TypeError when ``params`` is a single tensor or holds non-tensors, ValueError
    when it is empty, when a parameter is a non-leaf tensor or appears in two groups.
    """

    #: hyperparameters an ember.compile replay reads from ``param_groups`` itself (the others are guards)
    _compile_live = frozenset()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_wrapped_step", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._opt_called = False
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ------------------------------------------------------------ param groups
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (a dict with ``'params'``); missing hyperparameters take the
        defaults. Raises TypeError / ValueError with PyTorch's messages (see the class doc)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}")
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.__dict__.get("_retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        param_set = set()
        for group in self.param_groups:
            param_set.update(group["params"])
        if not param_set.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------ gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (the default), or fill them with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is not None:
                    if set_to_none:
                        p._grad = None
                    else:
                        g = p._grad
                        if g._grad_fn is not None:
                            g = p._grad = g.detach()
                        else:
                            g._requires_grad = False
                        g.zero_()

    def step(self, closure=None):
        """Update the parameters once (subclasses implement it). ``closure`` re-evaluates the
        model and returns the loss; it runs with grad enabled."""
        raise NotImplementedError

    @staticmethod
    def _closure_loss(closure):
        """The loss ``closure()`` returns, computed with grad enabled (None without a closure)."""
        if closure is None:
            return None
        prev = _AG.enabled
        _AG.enabled = True
        _AG.update()
        try:
            return closure()
        finally:
            _AG.enabled = prev
            _AG.update()

    def _grads(self, group, name):
        """(params, grads) of ``group`` whose grad is set; RuntimeError for sparse grads."""
        params, grads = [], []
        for p in group["params"]:
            g = p._grad
            if g is not None:
                if g._layout.name != "strided":
                    raise RuntimeError(f"{name} does not support sparse gradients")
                params.append(p)
                grads.append(g)
        return params, grads

    # ------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` before this optimizer's step; it may return
        ``(new_args, new_kwargs)``. Returns a handle with ``remove()``."""
        key = next(_hook_ids)
        self._optimizer_step_pre_hooks[key] = hook
        return _RemovableHandle(self._optimizer_step_pre_hooks, key)

    def register_step_post_hook(self, hook):
        """Run ``hook(optimizer, args, kwargs)`` after this optimizer's step. Returns a handle."""
        key = next(_hook_ids)
        self._optimizer_step_post_hooks[key] = hook
        return _RemovableHandle(self._optimizer_step_post_hooks, key)

    # ------------------------------------------------------------ state dict
    def state_dict(self) -> dict:
        """``{'state': {index: {name: value}}, 'param_groups': [{..., 'params': [index, ...]}]}``:
        parameters are numbered in the order they appear in the groups. State tensors are
        referenced, not copied (as PyTorch)."""
        mapping: dict = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    @staticmethod
    def _cast(param, value, key=None, capturable=False):
        """A state value moved to ``param``'s device (and dtype, for floating params); 'step' is kept, except
        in a capturable group, where it becomes float32 on ``param``'s device (as PyTorch)."""
        if isinstance(value, Tensor):
            if key == "step":
                if capturable:
                    import ember
                    return value.to(dtype=ember.float32, device=param.device)
                return value
            if param.is_floating_point():
                return value.to(dtype=param.dtype, device=param.device)
            return value.to(device=param.device)
        if isinstance(value, dict):
            return {k: Optimizer._cast(param, v, key=k, capturable=capturable) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast(param, v, capturable=capturable) for v in value)
        return value

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict()`` (ember's or PyTorch's format): hyperparameters from its groups,
        state tensors cast to their parameter's device and floating dtype ('step' kept as is).
        ValueError when the number of groups or a group's size differs."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))
        capturable = {i: s.get("capturable", False) or bool(s.get("fused", False))
                      for s in saved_groups for i in s["params"]}
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast(param, v, capturable=capturable.get(k, False))
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self.__dict__.setdefault("_opt_called", False)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ------------------------------------------------------------ helpers for subclasses
    @staticmethod
    def _check_common(lr, weight_decay=0.0, eps=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps is not None and not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")

    @staticmethod
    def _check_fused(fused, foreach, differentiable):
        """``fused=True`` (Adam, AdamW, SGD, Adagrad, as PyTorch): PyTorch's errors for combinations it refuses;
        otherwise accepted - the update is the single-tensor one, which PyTorch's fused cpu kernels match bit for
        bit in float64."""
        if fused:
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")

    @staticmethod
    def _check_unsupported(fused=None, differentiable=False, capturable=False, name=None):
        """RuntimeError for the flags ember does not implement. ``differentiable`` reaches here from the
        optimizers whose update is not written for autograd yet (``name`` says which); ``capturable``
        only from optimizers without a capturable path (none today)."""
        if fused:
            raise RuntimeError("`fused=True` is not supported by ember's optimizers")
        if differentiable:
            raise RuntimeError(f"`differentiable=True` is not supported by ember's {name or 'optimizers'}: its "
                               "update runs under no_grad, so gradients do not flow through it (SGD, Adam, "
                               "AdamW, Adagrad, RMSprop and Adadelta support it)")
        if capturable:
            raise RuntimeError("`capturable=True` is not supported by ember's optimizers")


def _value(x):
    """A hyperparameter as a Python number (tensor learning rates are read on the host)."""
    return x.item() if isinstance(x, Tensor) else x


def _hyper(x, capturable):
    """A hyperparameter for a step: a Python number, or with ``capturable`` a tensor one kept as a 0-dim
    tensor (PyTorch's ``_to_scalar``) so that the step does not read it back to the host."""
    if capturable and isinstance(x, Tensor):
        return x.reshape(()) if x.dim() else x
    return _value(x)


def _rdiv(number, t):
    """``number / t`` rounded as PyTorch's ``Tensor.__rtruediv__``: ``t.reciprocal() * number`` (a tensor
    ``number`` divides truly)."""
    if isinstance(number, Tensor):
        return number / t
    return t.reciprocal().mul_(number)


def _scalar_dtype():
    """The dtype of 'step' and the other 0-dim state counters: float64 when that is the default dtype,
    float32 otherwise (PyTorch's ``_get_scalar_dtype``)."""
    import ember
    return ember.float64 if ember.get_default_dtype() is ember.float64 else ember.float32


def _step_tensor(device=None):
    """A new 'step' counter: a 0-dim float tensor (``_scalar_dtype``) on cpu, or on ``device`` (capturable
    optimizers keep it beside the parameter), as PyTorch."""
    import ember
    return ember.zeros((), dtype=_scalar_dtype(), device=device)


def _capturable_devices() -> list:
    """The device types a capturable step may run on: every registered type but cpu and meta (PyTorch's
    ``_get_capturable_supported_devices`` lists its accelerators: cuda, xpu, hpu, privateuseone, xla)."""
    from .. import _registry
    return [name for name in _registry.device_types if name not in ("cpu", "meta")]


def _compiling() -> bool:
    """Inside ember.compile's warm-up or capture: optimizers take their capturable path (step counts and bias
    corrections stay tensors, so a replay never bakes in a host-computed number), as PyTorch's do under
    torch.compile."""
    return getattr(_COMPILING_STATE, "on", False)


def _compile_buffer(opt, key, n, dtype):
    """The cpu tensor of ``n`` elements of ``dtype`` that ember.compile's recorded host calls fill for the update
    ``key`` names (a parameter, or any hashable key); made on first use or when its size or dtype changed. Kept on
    the optimizer, outside its state (``state_dict`` is unchanged)."""
    from .._factory import empty_on
    from .._device import device as _device
    store = opt.__dict__.setdefault("_compiled_scalars", {})
    out = store.get(key)
    if out is None or out._shape != (n,) or out._dtype is not dtype:
        out = store[key] = empty_on((n,), dtype, _device("cpu"))
    return out


def _compile_scalars(opt, key, fn, n=None):
    """A float64 cpu tensor holding the ``n`` numbers ``fn()`` returns for the update ``key`` names (a parameter,
    or any hashable key), filled through ``ember.compiler``'s recorded host call (a replay recomputes them).
    ``n`` None: as many as a first call of ``fn`` returns."""
    from ..compiler._capture import host_scalars
    from .. import _dtype as D
    out = opt.__dict__.get("_compiled_scalars", {}).get(key)
    if n is None:                    # (sized by a first call of fn: how many numbers it returns)
        n = out._shape[0] if out is not None and out._dtype is D.float64 else len(fn())
    return host_scalars(fn, _compile_buffer(opt, key, n, D.float64))


def _check_capturable(param, *state, what="params and state_steps"):
    """AssertionError (PyTorch's class and message) unless ``param`` and its 0-dim ``state`` tensors share one
    device type that supports capture; cpu does not, as in PyTorch. Not checked while ember.compile captures
    (PyTorch skips it under torch.compile too)."""
    if _compiling():
        return
    supported = _capturable_devices()
    kind = param.device.type
    if not (all(t.device.type == kind for t in state) and kind in supported):
        raise AssertionError(f"If capturable=True, {what} must be on supported devices: {supported}.")
