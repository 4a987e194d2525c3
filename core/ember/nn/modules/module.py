"""Module: the base class of every layer and model (matches torch.nn.Module).

Design (how ember differs inside, not in behaviour):

- A module keeps its parameters, buffers and submodules in the ordered dicts
  ``_parameters``, ``_buffers`` and ``_modules`` as PyTorch does, **and** mirrors every
  entry into the instance ``__dict__``. So ``self.weight`` in a ``forward`` is a plain
  instance-attribute lookup (~20 ns) instead of PyTorch's ``__getattr__`` fallback
  (~300 ns in Python). The three dicts are ``_SyncDict``s: a dict subclass whose
  mutating methods (``[k] = v``, ``del``, ``pop``, ``clear``, ...) update the owner's
  ``__dict__`` too (the owner is held by a weak reference), so code that writes
  ``module._parameters[name] = p`` directly stays in sync. Reads are plain dict reads.
- ``__call__`` checks the two hook dicts and calls ``forward`` directly when both are
  empty (the common case): no wrapper frames, no global state.
- ``load_state_dict`` checks every key and shape first and copies only when nothing is
  wrong, so a failed load leaves the module unchanged (PyTorch may have copied some
  tensors before it raises).
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._tensor import Tensor
from ..parameter import Parameter, Buffer

__all__ = ["Module", "RemovableHandle"]


# ---------------------------------------------------------------- helpers
def _typename(obj) -> str:
    """PyTorch's torch.typename: 'ember.FloatTensor' for tensors, 'int', 'pkg.mod.Class' otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    if module in ("builtins", "__builtin__", ""):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _addindent(s: str, spaces: int) -> str:
    """Indent every line of ``s`` but the first by ``spaces`` spaces."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and unexpected keys (matches PyTorch's)."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"

    __str__ = __repr__


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook
    (from every dict it was entered in). Usable as a context manager (matches
    torch.utils.hooks.RemovableHandle)."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, dict):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        """Unregister the hook; a second call does nothing."""
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _SyncDict(OrderedDict):
    """An OrderedDict that mirrors its entries into its owner module's ``__dict__``.

    Only the mutating methods are overridden; lookups and iteration are dict-speed.
    Pickles (and deep-copies) as a plain OrderedDict: ``Module.__setstate__`` rebinds it.
    """

    __slots__ = ("_owner",)

    def __init__(self, owner, items=()):
        super().__init__()
        self._owner = weakref.ref(owner)
        for k, v in (items.items() if isinstance(items, Mapping) else items):
            self[k] = v

    def _odict(self):
        m = self._owner()
        return None if m is None else m.__dict__

    def __setitem__(self, key, value):
        OrderedDict.__setitem__(self, key, value)
        d = self._odict()
        if d is not None and isinstance(key, str):
            d[key] = value

    def __delitem__(self, key):
        OrderedDict.__delitem__(self, key)
        d = self._odict()
        if d is not None:
            d.pop(key, None)

    _MISSING = object()

    def pop(self, key, default=_MISSING):
        if key in self:
            value = OrderedDict.pop(self, key)
            d = self._odict()
            if d is not None:
                d.pop(key, None)
            return value
        if default is _SyncDict._MISSING:
            raise KeyError(key)
        return default

    def popitem(self, last=True):
        key, value = OrderedDict.popitem(self, last)
        d = self._odict()
        if d is not None:
            d.pop(key, None)
        return key, value

    def clear(self):
        d = self._odict()
        if d is not None:
            for k in self:
                d.pop(k, None)
        OrderedDict.clear(self)

    def update(self, *args, **kwargs):
        for k, v in OrderedDict(*args, **kwargs).items():
            self[k] = v

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def __reduce__(self):
        return (OrderedDict, (list(self.items()),))

    def __copy__(self):
        return OrderedDict(self)

    def __deepcopy__(self, memo):
        import copy
        return OrderedDict((k, copy.deepcopy(v, memo)) for k, v in self.items())


def _forward_unimplemented(self, *input):
    """Subclasses define ``forward``; calling a module without one raises NotImplementedError."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


# ---------------------------------------------------------------- Module
class Module:
    """Base class of all neural-network modules (matches torch.nn.Module).

    Subclasses call ``super().__init__()`` first, then assign ``Parameter``s, tensors
    registered with ``register_buffer`` and other Modules as attributes; ``forward``
    computes the output and is run by calling the module (``module(x)``), which also runs
    any forward pre/post hooks.
    """

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs):
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = _SyncDict(self)
        d["_buffers"] = _SyncDict(self)
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = _SyncDict(self)
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks:
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_hooks(self, args, kwargs):
        """The slow path of ``__call__``: forward pre-hooks, forward, forward hooks; full backward hooks wrap
        the tensor inputs (after the pre-hooks) and outputs (after the forward hooks)."""
        called_always = set()
        bw_hook = None
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if isinstance(result, tuple) and len(result) == 2:
                            args, kwargs = result
                        else:
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {result}.")
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            if self._backward_hooks or self._backward_pre_hooks:
                from ._backward_hook import BackwardHook
                bw_hook = BackwardHook(self, self._backward_hooks, self._backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            output = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                if result is not None:
                    output = result
            if bw_hook is not None:
                output = bw_hook.setup_output_hook(output)
            return output
        except Exception:
            # hooks registered with always_call=True run even when forward (or a hook) raised
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception as e:
                        import warnings
                        warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                      f"that was silenced as another error was raised in forward: {e}")
            raise

    _call_impl = __call__

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Run ``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``)
        before ``forward``; a non-None result replaces the args (a non-tuple is wrapped), or
        with ``with_kwargs`` must be an ``(args, kwargs)`` pair. Returns a RemovableHandle."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Run ``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after
        ``forward``; a non-None result replaces the output. ``always_call``: also run when
        forward raised (with output None). Returns a RemovableHandle."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                   self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the module's tensor inputs
        have been computed; grad_input / grad_output are tuples (None for an input that needs no gradient),
        and a non-None result (a tuple of the same length) replaces grad_input. Returns a RemovableHandle
        (matches torch.nn.Module.register_full_backward_hook)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_output)`` when the gradients w.r.t. the module's tensor outputs have been
        computed, before those w.r.t. its inputs; a non-None result (a tuple of the same length) replaces
        grad_output. Returns a RemovableHandle (matches torch.nn.Module.register_full_backward_pre_hook)."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    # ------------------------------------------------------------ registration
    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a Parameter, or None) as ``name``; matches torch's errors
        (AttributeError before ``__init__``, TypeError / KeyError for bad names and values)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if name not in self._parameters and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                                "(ember.nn.Parameter or None required)")
            if param._grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                                 f"created explicitly. To express '{name}' as a function of another Tensor, "
                                 "compute the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Register ``tensor`` (or None) as buffer ``name``; ``persistent=False`` keeps it out of
        ``state_dict``. Errors as torch.nn.Module.register_buffer."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if name not in self._buffers and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ember Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.__dict__.get("persistent", persistent)
            plain = Tensor.detach(tensor)
            if tensor._requires_grad:
                plain.requires_grad_(True)
            tensor = plain
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        """Register ``module`` (or None) as submodule ``name`` (matches torch.nn.Module.add_module)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if name not in self._modules and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, d, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, d, keep="_modules")
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(ember.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._drop(name, d, keep="_buffers")
            self.register_buffer(name, value)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(ember.nn.Buffer, ember.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _drop(self, name, d, keep):
        """Forget ``name`` everywhere but in the dict ``keep`` (before re-registering it)."""
        d.pop(name, None)
        for attr in ("_parameters", "_buffers", "_modules"):
            if attr != keep:
                store = d.get(attr)
                if store is not None and name in store:
                    del store[name]
        if keep != "_buffers":
            nps = d.get("_non_persistent_buffers_set")
            if nps is not None:
                nps.discard(name)

    def __getattr__(self, name):
        # reached only when normal lookup failed: entries are mirrored into __dict__, so this
        # is the error path (plus a fallback for dicts edited behind the module's back)
        d = self.__dict__
        for attr in ("_parameters", "_buffers", "_modules"):
            store = d.get(attr)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()):
            del self._parameters[name]
        elif name in d.get("_buffers", ()):
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in d.get("_modules", ()):
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = set(object.__dir__(self))
        keys.update(self._parameters, self._modules, self._buffers)
        return sorted(k for k in keys if isinstance(k, str) and not k[:1].isdigit())

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        state = dict(state)
        d = self.__dict__
        d.update(state)
        for attr in ("_parameters", "_buffers", "_modules"):
            d[attr] = _SyncDict(self, state.get(attr, {}))
        for attr in ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
                     "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_post_hooks"):
            if attr not in d:
                d[attr] = OrderedDict()
        d.setdefault("_non_persistent_buffers_set", set())
        d.setdefault("training", True)

    # ------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None:
                    continue
                if remove_duplicate:
                    if id(v) in memo:
                        continue
                    memo.add(id(v))
                yield (module_prefix + "." + k if module_prefix else k), v

    def parameters(self, recurse: bool = True):
        """Iterator over the parameters (this module's and, with ``recurse``, its submodules'),
        each shared parameter once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterator over ``(dotted name, parameter)`` pairs; ``remove_duplicate=False`` also yields
        a parameter shared by several modules under each name."""
        return self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                   remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Iterator over the buffers (including non-persistent ones)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Iterator over ``(dotted name, buffer)`` pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                   remove_duplicate=remove_duplicate)

    def children(self):
        """Iterator over the immediate submodules (each once)."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """Iterator over ``(name, submodule)`` for the immediate submodules (each once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        """Iterator over all modules of the tree (this one first), each once."""
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Iterator over ``(dotted name, module)`` for the whole tree, depth first, this module
        first with name ``prefix``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` ("" is self); AttributeError naming the
        missing part otherwise."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target`` (AttributeError otherwise)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target`` (AttributeError otherwise)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True):
        """Set training mode (``mode=False`` is evaluation) on this module and all submodules;
        returns self. ValueError when ``mode`` is not a bool."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                if g._grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # ------------------------------------------------------------ conversion
    def _apply(self, fn, recurse=True):
        """Apply ``fn`` to every parameter (in place, keeping the Parameter objects), its
        gradient, and every buffer (replaced)."""
        from ...autograd.grad_mode import no_grad
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for key, param in self._parameters.items():
                if param is None:
                    continue
                new = fn(param)
                if new is not param:
                    Tensor.data.__set__(param, new)
                g = param._grad
                if g is not None:
                    new_g = fn(g)
                    if new_g is not g:
                        Tensor.data.__set__(g, new_g)
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        """Call ``fn(module)`` on every submodule (children first) and on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``, keywords ``device``, ``dtype``, ``non_blocking``,
        ``memory_format`` (applied to 4-D / 5-D parameters and buffers). Only floating point (and complex) tensors change dtype. In place; returns self.
        TypeError for a non-floating ``dtype`` (matches torch.nn.Module.to)."""
        from ..._ops._copy import _parse_to
        kwargs = dict(kwargs)
        fmt = kwargs.pop("memory_format", None)
        dev, dtype, _, non_blocking = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            t_dtype = dtype if (dtype is not None and (t._dtype.is_floating_point or t._dtype.is_complex)) else None
            if fmt is not None and t.dim() in (4, 5):      # memory_format applies to 4-D / 5-D tensors, as PyTorch
                t = t.to(dev if dev is not None else t._device, t_dtype if t_dtype is not None else t._dtype,
                         non_blocking=non_blocking, memory_format=fmt)
                return t
            if dev is None and t_dtype is None:
                return t
            if (dev is None or t._device == dev) and (t_dtype is None or t._dtype is t_dtype):
                return t
            return t.to(dev if dev is not None else t._device, t_dtype if t_dtype is not None else t._dtype,
                        non_blocking=non_blocking)

        return self._apply(convert)

    def cpu(self):
        """Move every parameter and buffer to the CPU; returns self."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        """Move every parameter and buffer to a CUDA device; returns self."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type``; returns self."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Cast floating point parameters and buffers to float32; returns self."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast floating point parameters and buffers to float64; returns self."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast floating point parameters and buffers to float16; returns self."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast floating point parameters and buffers to bfloat16; returns self."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def share_memory(self):
        """Move parameters and buffers into shared memory (``Tensor.share_memory_``); returns self."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------ state dict
    def get_extra_state(self):
        """Extra state saved in ``state_dict`` under ``_extra_state`` when a subclass overrides this."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        """Restore what ``get_extra_state`` returned (subclasses that override it override this too)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else Tensor.detach(param)
        nps = self._non_persistent_buffers_set
        for name, buf in self._buffers.items():
            if buf is not None and name not in nps:
                destination[prefix + name] = buf if keep_vars else Tensor.detach(buf)
        if self._has_extra_state():
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached
        unless ``keep_vars``), with PyTorch's ``_metadata`` attribute (matches
        torch.nn.Module.state_dict)."""
        if args:        # PyTorch's deprecated positional form: (destination, prefix, keep_vars)
            if destination is None and len(args) > 0:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {"version": self._version})
            if result is not None:
                destination = result
        return destination

    def _check_state(self, state_dict, prefix, missing, unexpected, errors, copies, assign):
        """Check this module's entries of ``state_dict`` (recursively); queue the copies."""
        local = [(n, p) for n, p in self._parameters.items() if p is not None]
        local += [(n, b) for n, b in self._buffers.items()
                  if b is not None and n not in self._non_persistent_buffers_set]
        local_names = {n for n, _ in local}
        for name, current in local:
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected ember.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
                continue
            if value._shape != current._shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                              f"the shape in current model is {current.shape}.")
                continue
            copies.append((self, name, current, value))
        extra_key = prefix + "_extra_state"
        if self._has_extra_state():
            if extra_key in state_dict:
                copies.append((self, "_extra_state", None, state_dict[extra_key]))
            else:
                missing.append(extra_key)
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)[0]
                if head not in self._modules and head not in local_names:
                    unexpected.append(key)
        for name, child in self._modules.items():
            if child is not None:
                child._check_state(state_dict, prefix + name + ".", missing, unexpected, errors, copies, assign)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and persistent buffers from ``state_dict`` (under no_grad).

        ``strict``: missing or unexpected keys are an error. Returns
        ``_IncompatibleKeys(missing_keys, unexpected_keys)``. RuntimeError "Error(s) in loading
        state_dict for <Class>:\\n\\t..." listing missing / unexpected keys (when strict), size
        mismatches and non-tensor values (always); the module is left unchanged when it raises.
        ``assign=True`` makes the module's tensors the state dict's tensors instead of copying.
        Matches torch.nn.Module.load_state_dict.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors, copies = [], [], [], []
        self._check_state(state_dict, "", missing, unexpected, errors, copies, assign)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        from ...autograd.grad_mode import no_grad
        with no_grad():
            for module, name, current, value in copies:
                if current is None:
                    module.set_extra_state(value)
                elif assign:
                    if isinstance(current, Parameter):
                        module._parameters[name] = value if isinstance(value, Parameter) else \
                            Parameter(value, requires_grad=current._requires_grad)
                    else:
                        if current._requires_grad and not value._requires_grad:
                            value = Tensor.detach(value).requires_grad_(True)
                        module._buffers[name] = value
                else:
                    current.copy_(value)
        result = _IncompatibleKeys(missing, unexpected)
        for module in self.modules():
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, result)
        return result

    def register_load_state_dict_post_hook(self, hook):
        """Run ``hook(module, incompatible_keys)`` after ``load_state_dict``; returns a handle."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _register_state_dict_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------ repr
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        """The layer's own settings, shown inside its repr (subclasses override; '' here)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"

    def compile(self, *args, **kwargs):
        """No compiler in ember: a no-op kept for source compatibility."""
        return None
