"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (matches torch.nn)."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping, Iterable
from itertools import islice

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


class Container(Module):
    """Deprecated: a Module whose keyword arguments become its submodules (matches torch.nn.Container; it
    warns FutureWarning "`nn.Container` is deprecated. All of its functionality is now implemented in
    `nn.Module`. Subclass that instead.")."""

    def __init__(self, **kwargs):
        import warnings
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


def _index(idx, n):
    """A non-negative index into a sequence of length ``n``; IndexError "index i is out of range"."""
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx + n if idx < 0 else idx


def _renumber(module, values):
    """Re-register ``values`` under the keys "0", "1", ... (after a deletion or insertion)."""
    module._modules.clear()
    for i, m in enumerate(values):
        module._modules[str(i)] = m


class Sequential(Module):
    """Modules run one after the other: ``Sequential(m1, m2, ...)`` or
    ``Sequential(OrderedDict([(name, m), ...]))``; ``forward(x)`` feeds each module's output
    to the next. Supports indexing (an int gives the module, a slice a new Sequential),
    ``len``, ``append``, ``insert``, ``extend``, ``pop``, ``+`` and ``*`` (matches torch.nn.Sequential).
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def forward(self, input):
        """Feed ``input`` through each module in order and return the last output; shapes and dtypes are whatever
        the chain produces (matches torch.nn.Sequential.forward).
        """
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self._modules))
        return next(islice(self._modules.values(), i, None))

    def __setitem__(self, idx, module):
        i = _index(idx, len(self._modules))
        key = next(islice(self._modules.keys(), i, None))
        setattr(self, key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            i = _index(idx, len(self._modules))
            delattr(self, next(islice(self._modules.keys(), i, None)))
        _renumber(self, list(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        ret = Sequential()
        for layer in self:
            ret.append(layer)
        for layer in other:
            ret.append(layer)
        return ret

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        for layer in other:
            self.append(layer)
        return self

    def __mul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        ret = Sequential()
        for _ in range(other):
            for layer in self:
                ret.append(layer)
        return ret

    __rmul__ = __mul__

    def __imul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        layers = list(self)
        for _ in range(other - 1):
            for layer in layers:
                self.append(layer)
        return self

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``; IndexError outside [-len, len]."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        values = list(self._modules.values())
        values.insert(index, module)
        _renumber(self, values)
        return self

    def extend(self, sequential):
        """Append every module of an iterable; returns self."""
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key):
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]


class ModuleList(Module):
    """A list of modules, registered as submodules "0", "1", ... (matches torch.nn.ModuleList).
    Its repr groups runs of identical modules as PyTorch's does ("(0-2): 3 x Linear(...)")."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self._modules)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self._modules))), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_index(idx, len(self._modules))))
        _renumber(self, list(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for i, module in enumerate(list(self) + list(other)):
            combined.add_module(str(i), module)
        return combined

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        values = list(self._modules.values())
        values.insert(index, module)
        for m in values:
            if m is not None and not isinstance(m, Module):
                raise TypeError(f"{type(m).__name__} is not a Module subclass")
        _renumber(self, values)

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at index ``key``."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append the modules of an iterable; TypeError for a non-iterable. Returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def __repr__(self):
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines = []
        start = 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                body = _addindent(reprs[start], 2)
                if i - start == 1:
                    lines.append(f"({start}): {body}")
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x {body}")
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]


class ModuleDict(Module):
    """An ordered dict of submodules (matches torch.nn.ModuleDict)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove ``key`` and return its module."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """A view of the module names, in insertion order (matches torch.nn.ModuleDict.keys)."""
        return self._modules.keys()

    def items(self):
        """A view of (name, module) pairs, in insertion order (matches torch.nn.ModuleDict.items)."""
        return self._modules.items()

    def values(self):
        """A view of the modules, in insertion order (matches torch.nn.ModuleDict.values)."""
        return self._modules.values()

    def update(self, modules):
        """Add the modules of a mapping or of an iterable of (key, module) pairs.

        TypeError for anything else, and for pairs of the wrong length (PyTorch's messages).
        """
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got " +
                            type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for key, module in modules.items():
                self[key] = module
        else:
            for j, m in enumerate(modules):
                if not isinstance(m, Iterable):
                    raise TypeError("ModuleDict update sequence element #" + str(j) + " should be Iterable; is" +
                                    type(m).__name__)
                if not len(m) == 2:
                    raise ValueError("ModuleDict update sequence element #" + str(j) + " has length " +
                                     str(len(m)) + "; 2 is required")
                self[m[0]] = m[1]


def _param_summary(p):
    kind = "Parameter containing" if isinstance(p, Parameter) else "Tensor"
    dev = "" if p.device.type == "cpu" else f" ({p.device})"
    size = "x".join(str(s) for s in p.shape)
    return f"{kind}: [{p.dtype} of size {size}{dev}]"


class ParameterList(Module):
    """A list of parameters registered as "0", "1", ...; plain tensors put in it become
    Parameters (matches torch.nn.ParameterList)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for p in list(self)[idx]:
                out.append(p)
            return out
        return getattr(self, str(_index(idx, self._size)))

    def __setitem__(self, idx, param):
        idx = _index(idx, self._size)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(getattr(self, str(i)) for i in range(self._size))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value):
        """Add ``value`` at the end (a tensor becomes a Parameter); returns self."""
        new_idx = self._size
        self._size += 1
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(new_idx), value)
        return self

    def extend(self, values):
        """Append every value of an iterable; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " +
                            type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        """One line per entry: ``(k): Parameter containing: [ember.float32 of size AxB]`` (plus the device when not
        cpu) for tensors, ``(k): Object of type: T`` otherwise.
        """
        lines = []
        for k, p in enumerate(self):
            if isinstance(p, Tensor):
                lines.append(f"  ({k}): {_param_summary(p)}")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters; plain tensors put in it become Parameters (matches
    torch.nn.ParameterDict)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is '"
                            f"{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """Return the entry for ``key``, first storing ``default`` (a tensor becomes a Parameter) when ``key`` is
        absent (matches torch.nn.ParameterDict.setdefault).
        """
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        """Remove every entry (matches torch.nn.ParameterDict.clear)."""
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        """Remove ``key`` and return its value (matches torch.nn.ParameterDict.pop)."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove and return the most recently inserted (key, value) pair (matches torch.nn.ParameterDict.popitem).
        """
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        k = next(reversed(self._keys))
        v = self[k]
        del self[k]
        return k, v

    def get(self, key, default=None):
        """The value for ``key``, or ``default`` when absent (matches torch.nn.ParameterDict.get)."""
        return self[key] if key in self else default

    def keys(self):
        """A view of the keys, in insertion order (matches torch.nn.ParameterDict.keys)."""
        return self._keys.keys()

    def items(self):
        """A generator of (key, value) pairs, in insertion order (matches torch.nn.ParameterDict.items)."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """A generator of the values, in insertion order (matches torch.nn.ParameterDict.values)."""
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Add the entries of a mapping or an iterable of (key, value) pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got " +
                            type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j) + " should be Iterable; is" +
                                    type(p).__name__)
                if not len(p) == 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j) + " has length " +
                                     str(len(p)) + "; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self):
        """One line per entry: ``(key): Parameter containing: [ember.float32 of size AxB]`` (plus the device when
        not cpu) for tensors, ``(key): Object of type: T`` otherwise.
        """
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                lines.append(f"  ({k}): {_param_summary(p)}")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
