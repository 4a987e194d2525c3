"""Parametrizations: a module tensor computed from other tensors on every access (matches
torch.nn.utils.parametrize).

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (a ``ParametrizationList``, holding P as
submodule 0) and turns ``weight`` into a property on a per-module subclass
(``ParametrizedLinear``), so ``module.weight`` evaluates P(original) each time, assigning
``module.weight = X`` stores the right inverse of X, and the state dict carries
``parametrizations.weight.original``. A right_inverse that returns a tuple stores
``original0``, ``original1``, ... and P then takes that many tensors. ``cached()`` evaluates
each parametrized tensor once inside its block. ``remove_parametrizations`` restores a plain
parameter (keeping the original Parameter object, so optimizers stay valid).
"""
from __future__ import annotations

from contextlib import contextmanager

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Inside the block every parametrized tensor is computed once and reused (matches
    torch.nn.utils.parametrize.cached); nested blocks share one cache."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _set_original(dest, value):
    """Store ``value`` in the original tensor ``dest`` in place (keeping the Parameter object)."""
    with no_grad():
        if dest.shape == value.shape and dest.dtype == value.dtype:
            dest.copy_(value)
        else:
            Tensor.data.__set__(dest, value.detach())


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the ``original`` tensor(s) they act on
    (matches torch.nn.utils.parametrize.ParametrizationList). ``right_inverse(value)`` updates the
    originals so the chain evaluates to ``value``."""

    def __init__(self, modules, original, unsafe=False):
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, (list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(original).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (new.dtype != dtype or new.shape != shape):
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {dtype}\nright_inverse(original).dtype: {new.dtype}"
                                 if new.dtype != dtype else
                                 f"When `right_inverse` outputs one tensor, it may not change the shape.\n"
                                 f"original.shape: {shape}\nright_inverse(original).shape: {new.shape}")
            _set_original(original, new)
            self._register_original("original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(t).__name__}.")
                p = Parameter(Tensor.detach(t).clone(), original.requires_grad) if isinstance(original, Parameter) \
                    else Tensor.detach(t).clone()
                self._register_original(f"original{i}", p)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if z.shape != shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {shape}\n"
                                 f"parametrized shape: {z.shape}")

    def _register_original(self, name, t):
        if isinstance(t, Parameter):
            self.register_parameter(name, t)
        else:
            self.register_buffer(name, t)

    def right_inverse(self, value):
        """Set the originals so that the chain evaluates to ``value`` (each parametrization's right_inverse,
        last first). ValueError when the result does not fit the originals (unless ``unsafe``)."""
        with no_grad():
            for m in reversed(self):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if not self.unsafe and (value.dtype != self.original.dtype or value.shape != self.original.shape):
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} and shape "
                                     f"{value.shape} while `original` has dtype {self.original.dtype} and shape "
                                     f"{self.original.shape}")
                _set_original(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length "
                                     f"{self.ntensors}. Got {type(value).__name__}")
                for i, t in enumerate(value):
                    _set_original(getattr(self, f"original{i}"), t)

    def forward(self):
        """The parametrized tensor: the chain applied to the original(s)."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _inject_new_class(module):
    """Give ``module`` its own subclass ``Parametrized<Class>`` to hang properties on."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict().")

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        def default_deepcopy(self, memo):
            import copy
            obj = memo.get(id(self))
            if obj is not None:
                return obj
            replica = object.__new__(type(self))
            memo[id(self)] = replica
            Module.__setstate__(replica, copy.deepcopy(dict(self.__dict__), memo))
            return replica
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            if key not in _cache:
                _cache[key] = parametrization()
            return _cache[key]
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` be ``parametrization(original)`` (see the module docstring); a second
    call on the same name appends to the chain. ``unsafe=True`` skips the dtype / shape checks. Returns
    the module. ValueError "Module '...' does not have a parameter, a buffer, or a parametrized element
    with name '...'" and PyTorch's dtype / shape messages (matches
    torch.nn.utils.parametrize.register_parametrization)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless the "
                                 f"`unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {x.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization (or one on ``tensor_name``) (matches
    torch.nn.utils.parametrize.is_parametrized)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization on ``tensor_name``: it becomes a plain parameter (or buffer) again,
    holding the current parametrized value when ``leave_parametrized`` (the default) and the original
    otherwise; the original Parameter object is kept. The module regains its class when no
    parametrization is left. ValueError when there is none to remove or when the original is a tuple and
    ``leave_parametrized`` is False (matches torch.nn.utils.parametrize.remove_parametrizations)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set_original(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(Tensor.detach(t), t.requires_grad) if isinstance(parametrizations.original0, Parameter) \
            else Tensor.detach(t)
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered (matches
    torch.nn.utils.parametrize.type_before_parametrizations)."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register ``from_module``'s parametrizations (all, or those of ``tensor_name``) on ``to_module`` and copy
    their originals across (matches torch.nn.utils.parametrize.transfer_parametrizations_and_params)."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in from_module.parametrizations[name]:
            if not is_parametrized(to_module, name) or p not in list(to_module.parametrizations[name]):
                register_parametrization(to_module, name, p)
        src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
        for key in ("original",) if src.is_tensor else tuple(f"original{i}" for i in range(src.ntensors)):
            _set_original(getattr(dst, key), getattr(src, key))
    return to_module
