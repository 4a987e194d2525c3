"""LazyModuleMixin: modules whose parameter shapes are inferred from the first input (matches
torch.nn.modules.lazy.LazyModuleMixin).

A lazy module registers its not-yet-shaped tensors as ``UninitializedParameter`` /
``UninitializedBuffer``. A forward pre-hook calls ``initialize_parameters(*args)`` on the
first call, which materializes them (same objects, so an optimizer built before the first
forward keeps working) and draws their initial values; the hook then removes itself and,
when ``cls_to_become`` is set, the module becomes that class (LazyLinear -> Linear).
``load_state_dict`` into an uninitialized module materializes each uninitialized tensor
with the shape found in the state dict.
"""
from __future__ import annotations

from ..parameter import UninitializedBuffer, is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mix in before the concrete layer class (``class LazyLinear(LazyModuleMixin, Linear)``); the
    subclass implements ``initialize_parameters(*input)``. RuntimeError "module X has not been fully
    initialized" when that leaves a tensor uninitialized."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        """Whether any parameter or buffer of this module (not its children) is still uninitialized."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the uninitialized tensors from the first input (the subclass's job)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _apply(self, fn, recurse=True):
        # Module._apply replaces buffers by fn(buffer): keep an uninitialized buffer uninitialized, with the
        # new dtype and device (parameters are converted in place, so they stay uninitialized anyway)
        lazy = [name for name, b in self._buffers.items() if is_lazy(b)]
        super()._apply(fn, recurse)
        for name in lazy:
            b = self._buffers[name]
            if not is_lazy(b):
                self._buffers[name] = UninitializedBuffer(b.requires_grad, device=b.device, dtype=b.dtype)
        return self

    def _check_state(self, state_dict, prefix, missing, unexpected, errors, copies, assign):
        # materialize uninitialized tensors with the shapes found in the state dict, then load as usual
        for name, t in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if key in state_dict and is_lazy(t) and not is_lazy(state_dict[key]):
                t.materialize(tuple(state_dict[key]._shape))
        super()._check_state(state_dict, prefix, missing, unexpected, errors, copies, assign)
        if not self.has_uninitialized_params():
            self._finish_initialization()

    def _finish_initialization(self):
        self._initialize_hook.remove()
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
                           "dummy forward pass to correctly initialize the modules")


def _infer_parameters(module, args, kwargs):
    """The forward pre-hook: materialize from the first input, then retire the hook (and the class)."""
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._finish_initialization()

