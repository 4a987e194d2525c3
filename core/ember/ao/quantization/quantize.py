"""Eager-mode quantization workflows (matches torch.ao.quantization.quantize / fuse_modules).

- ``quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)``: swap Linear layers for dynamically
  quantized ones (weights int8 now, activations quantized per call).
- static post-training quantization: mark the quantized region with ``QuantStub`` /
  ``DeQuantStub``, set ``model.qconfig``, ``prepare`` (observers attached through forward hooks),
  run calibration batches, ``convert`` (modules swapped for ``ember.ao.nn.quantized`` ones built
  from the observed ranges).
- quantization-aware training: ``prepare_qat`` (modules swapped for fake-quantizing QAT versions,
  FakeQuantize on their outputs), train, ``convert``.
- ``fuse_modules``: conv+bn(+relu), conv+relu, linear+relu(, linear+bn) merged before quantizing.
"""
from __future__ import annotations

import copy

import ember
import ember.nn as nn

from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from ..nn.quantized import dynamic as nnqd
from .fake_quantize import FakeQuantizeBase
from .observer import ObserverBase
from .qconfig import default_dynamic_qconfig
from .stubs import DeQuantStub, QuantStub

__all__ = ["propagate_qconfig_", "prepare", "convert", "quantize", "quantize_dynamic", "prepare_qat", "quantize_qat",
           "fuse_modules", "get_default_static_quant_module_mappings", "get_default_qat_module_mappings",
           "get_default_dynamic_quant_module_mappings"]


def get_default_static_quant_module_mappings():
    """float (or QAT) module class -> quantized module class, used by ``convert``."""
    return {QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize, nn.Linear: nnq.Linear, nn.Conv2d: nnq.Conv2d,
            nnqat.Linear: nnq.Linear, nnqat.Conv2d: nnq.Conv2d, nni.LinearReLU: nniq.LinearReLU,
            nni.ConvReLU2d: nniq.ConvReLU2d, nniqat.LinearReLU: nniq.LinearReLU,
            nniqat.ConvReLU2d: nniq.ConvReLU2d}


def get_default_qat_module_mappings():
    """float module class -> QAT module class, used by ``prepare_qat``."""
    return {nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d, nni.LinearReLU: nniqat.LinearReLU,
            nni.ConvReLU2d: nniqat.ConvReLU2d}


def get_default_dynamic_quant_module_mappings():
    """float module class -> dynamically quantized module class, used by ``quantize_dynamic`` (nn.Linear ->
    ember.ao.nn.quantized.dynamic.Linear).
    """
    return {nn.Linear: nnqd.Linear}


# modules whose outputs get an observer in prepare (those convert needs output qparams for)
def _observed_types():
    return (QuantStub, nn.Linear, nn.Conv2d, nni.LinearReLU, nni.ConvReLU2d)


def propagate_qconfig_(module, qconfig_dict=None):
    """Give every submodule the ``qconfig`` of its nearest ancestor that has one (in place)."""
    def walk(m, inherited, prefix):
        qc = inherited
        if qconfig_dict:
            qc = qconfig_dict.get(type(m), qconfig_dict.get(prefix, qc))
        qc = getattr(m, "qconfig", None) if "qconfig" in m.__dict__ and m.__dict__["qconfig"] is not None else qc
        m.qconfig = qc
        for name, child in m.named_children():
            walk(child, qc, f"{prefix}.{name}" if prefix else name)
    walk(module, None, "")


def _observer_forward_hook(self, input, output):
    return self.activation_post_process(output)


def _add_observers(module, device):
    for name, child in module.named_children():
        if type(child) in (nnq.DeQuantize, nnq.Quantize) or isinstance(child, (DeQuantStub, FakeQuantizeBase)):
            continue
        if isinstance(child, _observed_types()) and getattr(child, "qconfig", None) is not None:
            obs = child.qconfig.activation()
            child.activation_post_process = obs.to(device) if device is not None else obs
            child._observer_hook = child.register_forward_hook(_observer_forward_hook)
        if not isinstance(child, nni._FusedModule):
            _add_observers(child, device)


def _device_of(module):
    p = next(iter(module.parameters()), None)
    return p.device if p is not None else None


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None, prepare_custom_config_dict=None):
    """Attach observers for static quantization (matches torch.ao.quantization.prepare).

    Every submodule gets its ancestors' ``qconfig``; QuantStub, Linear, Conv2d and the fused
    LinearReLU / ConvReLU2d with a qconfig get ``activation_post_process = qconfig.activation()``
    called on their output by a forward hook. Run calibration data through the result, then
    ``convert``. Returns the prepared model (a deep copy unless ``inplace``).
    """
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if getattr(model, "qconfig", None) is None and not any(getattr(m, "qconfig", None) for m in model.modules()):
        import warnings
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct configuration "
                      "through `qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules")
    _add_observers(model, _device_of(model))
    return model


def _swap(module, mapping, is_reference=False):
    """Swap module (or its children, recursively) for their mapped quantized versions, in place."""
    for name, child in list(module.named_children()):
        if isinstance(child, (ObserverBase, FakeQuantizeBase)):
            continue
        if not isinstance(child, nni._FusedModule):
            _swap(child, mapping)
        new = _swap_one(child, mapping)
        if new is not child:
            setattr(module, name, new)
    return module


def _swap_one(mod, mapping):
    cls = mapping.get(type(mod))
    has_qconfig = getattr(mod, "qconfig", None) is not None
    if cls is not None and (has_qconfig or type(mod) is DeQuantStub):
        if type(mod) in (nn.Linear, nn.Conv2d, nni.LinearReLU, nni.ConvReLU2d, QuantStub, nnqat.Linear,
                         nnqat.Conv2d, nniqat.LinearReLU, nniqat.ConvReLU2d) and \
                getattr(mod, "activation_post_process", None) is None:
            return mod          # no observer: left in float (as PyTorch leaves unobserved modules)
        return cls.from_float(mod)
    # not swapped: drop the observer and its hook
    if "activation_post_process" in mod._modules and not isinstance(mod, (QuantStub,)):
        h = mod.__dict__.get("_observer_hook")
        if h is not None:
            h.remove()
        del mod.activation_post_process
    return mod


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False, convert_custom_config_dict=None):
    """Swap observed modules for quantized ones (matches torch.ao.quantization.convert): QuantStub ->
    Quantize, DeQuantStub -> DeQuantize, Linear / Conv2d (and fused, and QAT versions) -> the
    ``ember.ao.nn.quantized`` / ``.intrinsic.quantized`` modules, with weights quantized by their
    qconfig's weight observer (or the QAT module's fake-quantizer) and output qparams from the
    attached observer. Returns the converted model (a deep copy unless ``inplace``)."""
    if not inplace:
        module = copy.deepcopy(module)
    _swap(module, mapping or get_default_static_quant_module_mappings())
    if remove_qconfig:
        for m in module.modules():
            if "qconfig" in m.__dict__:
                del m.__dict__["qconfig"]
    return module


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """prepare, ``run_fn(model, *run_args)`` to calibrate, convert (matches torch.ao.quantization.quantize)."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_dynamic(model, qconfig_spec=None, dtype=None, mapping=None, inplace=False):
    """Replace Linear layers by dynamically quantized ones (matches torch.ao.quantization.quantize_dynamic).

    :param qconfig_spec: a set of module types (``{nn.Linear}``) or a dict {type or submodule name:
        qconfig}; default all Linear layers.
    :param dtype: ``ember.qint8`` (the default); float16 dynamic quantization is not implemented.
    :returns: the quantized model (a deep copy unless ``inplace``).
    :raises NotImplementedError: for another dtype.
    """
    dtype = ember.qint8 if dtype is None else dtype
    if dtype is not ember.qint8:
        raise NotImplementedError(f"quantize_dynamic: ember supports dtype=ember.qint8, got {dtype!r}")
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, (set, frozenset, list, tuple)):
        qconfig_spec = {t: default_dynamic_qconfig for t in qconfig_spec}
    mapping = mapping or get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)

    def walk(m, prefix):
        for name, child in list(m.named_children()):
            full = f"{prefix}.{name}" if prefix else name
            qc = qconfig_spec.get(full, qconfig_spec.get(type(child)))
            cls = mapping.get(type(child))
            if qc is not None and cls is not None:
                child.qconfig = qc
                setattr(m, name, cls.from_float(child))
            else:
                walk(child, full)
    walk(model, "")
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Prepare for quantization-aware training (matches torch.ao.quantization.prepare_qat): the model
    (with ``qconfig`` from ``get_default_qat_qconfig``) gets QAT modules (fake-quantized weights) and
    FakeQuantize on the outputs. Train it, then ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    mapping = mapping or get_default_qat_module_mappings()

    def walk(m):
        for name, child in list(m.named_children()):
            cls = mapping.get(type(child))
            if cls is not None and getattr(child, "qconfig", None) is not None:
                setattr(m, name, cls.from_float(child))
            else:
                walk(child)
    walk(model)
    _qat_observers(model, _device_of(model))
    return model


def _qat_observers(module, device):
    qat_types = (QuantStub, nnqat.Linear, nnqat.Conv2d)
    for name, child in module.named_children():
        if isinstance(child, qat_types) and getattr(child, "qconfig", None) is not None:
            obs = child.qconfig.activation()
            child.activation_post_process = obs.to(device) if device is not None else obs
            child._observer_hook = child.register_forward_hook(_observer_forward_hook)
        elif not isinstance(child, FakeQuantizeBase):
            _qat_observers(child, device)


def quantize_qat(model, run_fn, run_args, inplace=False):
    """prepare_qat, ``run_fn(model, *run_args)`` to train, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


# ---------------------------------------------------------------- fusion
def _fold_bn(weight, bias, bn, conv):
    """Weight and bias of a conv / linear followed by batch norm ``bn`` (eval statistics)."""
    var_rsqrt = ember.rsqrt(bn.running_var + bn.eps)
    gamma = bn.weight if bn.weight is not None else ember.ones_like(bn.running_var)
    beta = bn.bias if bn.bias is not None else ember.zeros_like(bn.running_mean)
    b = bias if bias is not None else ember.zeros_like(bn.running_mean)
    shape = [-1] + [1] * (weight.dim() - 1)
    w = weight * (gamma * var_rsqrt).reshape(shape)
    b = (b - bn.running_mean) * var_rsqrt * gamma + beta
    return w, b


def _fuse_bn_into(mod, bn):
    fused = copy.deepcopy(mod)
    with ember.no_grad():
        w, b = _fold_bn(mod.weight.detach(), None if mod.bias is None else mod.bias.detach(), bn, mod)
    fused.weight = nn.Parameter(w)
    fused.bias = nn.Parameter(b)
    return fused


def _fuse(mods, is_qat):
    types = tuple(type(m) for m in mods)
    if any(m.training for m in mods) and not is_qat and nn.BatchNorm2d in types + tuple(
            t for t in types if t.__name__.startswith("BatchNorm")):
        raise AssertionError("Fusion only for eval!")
    if types == (nn.Conv2d, nn.BatchNorm2d):
        return _fuse_bn_into(mods[0], mods[1])
    if types == (nn.Conv2d, nn.BatchNorm2d, nn.ReLU):
        return nni.ConvReLU2d(_fuse_bn_into(mods[0], mods[1]), mods[2])
    if types == (nn.Conv2d, nn.ReLU):
        return nni.ConvReLU2d(mods[0], mods[1])
    if types == (nn.Linear, nn.ReLU):
        return nni.LinearReLU(mods[0], mods[1])
    if types == (nn.Linear, nn.BatchNorm1d):
        return _fuse_bn_into(mods[0], mods[1])
    raise NotImplementedError(f"Cannot fuse modules: {types}")


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=None, fuse_custom_config_dict=None):
    """Fuse lists of consecutive submodules (matches torch.ao.quantization.fuse_modules).

    :param modules_to_fuse: a list of names (``["0", "1", "2"]``, dotted for nested modules) or a list
        of such lists. Supported sequences: conv-bn, conv-bn-relu, conv-relu, linear-relu, linear-bn
        (batch norm folded into the weights, so the model must be in eval mode: AssertionError
        "Fusion only for eval!" otherwise). The first module becomes the fused one, the others
        ``nn.Identity``.
    :raises NotImplementedError: for another sequence of types.
    """
    if not inplace:
        model = copy.deepcopy(model)
    groups = [modules_to_fuse] if modules_to_fuse and isinstance(modules_to_fuse[0], str) else modules_to_fuse
    for names in groups:
        mods = [model.get_submodule(n) for n in names]
        fused = (fuser_func or (lambda ms, is_qat=False: _fuse(ms, is_qat)))(mods)
        for i, n in enumerate(names):
            parent_name, _, attr = n.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, attr, fused if i == 0 else nn.Identity())
    return model
