"""Op database entries: reductions, scans, order statistics, sorting, unique, searchsorted.

References are numpy with PyTorch's semantics: integer and bool sums / products / cumsums
give int64, ``mean`` / ``var`` take floating and complex inputs only, ``max`` / ``amax``
propagate NaN, ``argmax`` / ``max(dim)`` give the first index of the extreme (NaN counts as
the maximum), ``cummax`` the last, ``median`` is the lower median, ``mode`` the smallest most
frequent value with the index of its last occurrence, ``sort`` is stable with NaN last,
``unique`` is sorted.

The entries are assembled here (``_build``); their references, samples and error inputs live in
``_reduction_reduce`` (sum / mean / max / var / norm / all families) and ``_reduction_order``
(scans, order statistics, sort, unique, searchsorted). The small helpers the other H-A2
category modules (linalg, shape, indexing, nn) share live in ``_reduction_helpers`` and are
re-exported here: ``upcast`` (run a reference in float64 for float16 / bfloat16 inputs),
``distinct`` / ``ties`` / ``with_nan`` sample tensors, and ``values_only``.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from .._opinfo import OpInfo
from .._samples import ALL_DTYPES, FLOATING_AND_COMPLEX, REAL, REAL_AND_BOOL
from ._reduction_helpers import (np_dtype, upcast, distinct, ties, with_nan,  # noqa: F401 (re-exported)
                                 grad_unless_ambiguous, values_only)
from ._reduction_reduce import (_sum_ref, _prod_ref, _mean_ref, _sum_extra, _mean_extra, _sum_errors,
                                _mean_errors, _nansum_errors, _prod_errors, _amax_ref, _max_dim_ref,
                                _argmax_ref, _aminmax_ref, _amax_samples, _max_dim_samples,
                                _argmax_samples, _aminmax_samples, _empty_all_error, _amax_errors,
                                _max_dim_errors, _argmax_errors, _aminmax_errors, _max_dim_op, _var_ref,
                                _var_samples, _var_op, _var_errors, _norm_ref, _norm_samples, _norm_errors,
                                _logsumexp_ref, _logsumexp_samples, _logsumexp_errors, _logical_ref,
                                _logical_samples, _count_nonzero_ref, _count_nonzero_samples)
from ._reduction_order import (_cumsum_ref, _scan_samples, _cumext_ref, _scan_errors, _median_all_ref,
                               _median_dim_ref, _mode_ref, _kthvalue_ref, _order_samples,
                               _median_all_samples, _order_errors, _median_all_errors, _sort_ref,
                               _topk_ref, _sort_samples, _sort_errors, _unique_public_ref,
                               _unique_consecutive_public_ref, _unique_samples, _unique_errors,
                               _searchsorted_ref, _searchsorted_samples, _searchsorted_errors)

__all__ = ["OPINFOS", "op_db", "upcast", "distinct", "ties", "with_nan", "values_only", "np_dtype",
           "grad_unless_ambiguous"]


# ================================================================ the entries
def _E():
    import ember
    return ember


def _build():
    E = _E()
    NOCPLX = REAL_AND_BOOL
    ORDER = REAL
    ops = []
    add = ops.append

    add(OpInfo("sum", ref=upcast(_sum_ref), dtypes=ALL_DTYPES, sample_inputs=_sum_extra, error_inputs=_sum_errors,
               supports_autograd=True, supports_out=True))
    add(OpInfo("nansum", ref=upcast(partial(_sum_ref, nan=True)), dtypes=REAL_AND_BOOL,
               sample_inputs=partial(_sum_extra, nan=True), error_inputs=_nansum_errors, supports_autograd=True,
               supports_out=True))
    add(OpInfo("prod", ref=upcast(_prod_ref), dtypes=ALL_DTYPES,
               sample_inputs=partial(_sum_extra, int_dim=True, dtype_kw=False),
               error_inputs=_prod_errors, supports_autograd=True, supports_out=True,
               tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 1e-1)}))
    add(OpInfo("mean", ref=upcast(_mean_ref), dtypes=FLOATING_AND_COMPLEX, sample_inputs=_mean_extra,
               error_inputs=_mean_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("nanmean", ref=upcast(partial(_mean_ref, nan=True)), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=partial(_mean_extra, nan=True), error_inputs=partial(_mean_errors, name="nanmean"),
               supports_autograd=True, supports_out=True))
    for name, fn in (("amax", np.max), ("amin", np.min)):
        add(OpInfo(name, ref=upcast(partial(_amax_ref, fn=fn)), dtypes=NOCPLX, sample_inputs=_amax_samples,
                   error_inputs=partial(_amax_errors, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    for name, fn in (("max", np.max), ("min", np.min)):
        add(OpInfo(name, op=getattr(E, name), ref=upcast(partial(_amax_ref, fn=fn)), dtypes=NOCPLX,
                   sample_inputs=partial(_amax_samples, full_only=True),
                   error_inputs=partial(_empty_all_error, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    for name, largest in (("max", True), ("min", False)):
        add(OpInfo(f"{name}_dim", op=_max_dim_op(getattr(E, name)),
                   ref=upcast(partial(_max_dim_ref, largest=largest)), dtypes=NOCPLX,
                   sample_inputs=_max_dim_samples, error_inputs=partial(_max_dim_errors, name=name),
                   supports_autograd=True, supports_out=True, exact=True))
    for name, largest in (("argmax", True), ("argmin", False)):
        add(OpInfo(name, ref=upcast(partial(_argmax_ref, largest=largest)), dtypes=REAL, sample_inputs=_argmax_samples,
                   error_inputs=partial(_argmax_errors, name=name), supports_out=True, exact=True))
    add(OpInfo("aminmax", ref=upcast(_aminmax_ref), dtypes=NOCPLX, sample_inputs=_aminmax_samples,
               error_inputs=_aminmax_errors, supports_out=True, exact=True))
    add(OpInfo("var", op=_var_op(E.var), ref=upcast(_var_ref), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_var_samples, error_inputs=_var_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("std", op=_var_op(E.std), ref=upcast(partial(_var_ref, sqrt=True)), dtypes=FLOATING_AND_COMPLEX,
               sample_inputs=_var_samples, error_inputs=_var_errors, supports_autograd=True, supports_out=True))
    add(OpInfo("norm", op=E.norm, ref=upcast(_norm_ref), dtypes=FLOATING_AND_COMPLEX, sample_inputs=_norm_samples,
               error_inputs=_norm_errors, supports_autograd=True, supports_out=True,
               tolerances={"float16": (2e-3, 2e-3)}))
    add(OpInfo("logsumexp", ref=upcast(_logsumexp_ref), dtypes=ALL_DTYPES, sample_inputs=_logsumexp_samples,
               error_inputs=_logsumexp_errors, supports_autograd=True, supports_out=True))
    for name, fn in (("all", np.all), ("any", np.any)):
        add(OpInfo(name, ref=partial(_logical_ref, fn=fn), dtypes=ALL_DTYPES, sample_inputs=_logical_samples,
                   error_inputs=_sum_errors, supports_out=True, exact=True))
    add(OpInfo("count_nonzero", ref=_count_nonzero_ref, dtypes=ALL_DTYPES, sample_inputs=_count_nonzero_samples,
               error_inputs=_sum_errors, exact=True))
    add(OpInfo("cumsum", ref=upcast(_cumsum_ref), dtypes=ALL_DTYPES, sample_inputs=_scan_samples,
               error_inputs=_scan_errors, supports_autograd=True, supports_out=True,
               inplace=lambda t, *a, **k: t.cumsum_(*a, **k), tolerances={"float16": (2e-3, 1e-2)}))
    add(OpInfo("cumprod", ref=upcast(partial(_cumsum_ref, prod=True)), dtypes=ALL_DTYPES,
               sample_inputs=partial(_scan_samples, low=-2, high=2), error_inputs=_scan_errors,
               supports_autograd=True, supports_out=True, inplace=lambda t, *a, **k: t.cumprod_(*a, **k),
               tolerances={"float16": (2e-3, 1e-2), "bfloat16": (2e-2, 5e-2)}))
    for name, largest in (("cummax", True), ("cummin", False)):
        add(OpInfo(name, ref=upcast(partial(_cumext_ref, largest=largest)), dtypes=NOCPLX,
                   sample_inputs=_scan_samples, error_inputs=_scan_errors, supports_autograd=True,
                   supports_out=True, exact=True))
    for name, mode in (("median", "propagate"), ("nanmedian", "ignore")):
        add(OpInfo(name, op=getattr(E, name), ref=upcast(partial(_median_all_ref, nan_mode=mode)), dtypes=ORDER,
                   sample_inputs=grad_unless_ambiguous(_median_all_samples), error_inputs=partial(_median_all_errors, name=name),
                   supports_autograd=True, supports_out=True, exact=True))
        add(OpInfo(f"{name}_dim", op=_max_dim_op(getattr(E, name), -1),
                   ref=upcast(partial(_median_dim_ref, nan_mode=mode)), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_order_samples),
                   error_inputs=partial(_order_errors, name=name), supports_autograd=True, supports_out=True,
                   exact=True))
    add(OpInfo("mode", ref=upcast(_mode_ref), dtypes=NOCPLX, sample_inputs=grad_unless_ambiguous(_order_samples),
               error_inputs=partial(_order_errors, name="mode"), supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("kthvalue", ref=upcast(_kthvalue_ref), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_order_samples),
               error_inputs=partial(_order_errors, name="kthvalue"), supports_autograd=True, supports_out=True,
               exact=True))
    add(OpInfo("sort", ref=upcast(_sort_ref), dtypes=NOCPLX, sample_inputs=grad_unless_ambiguous(_sort_samples), error_inputs=_sort_errors,
               supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("topk", ref=upcast(_topk_ref), dtypes=ORDER, sample_inputs=grad_unless_ambiguous(_sort_samples), error_inputs=_sort_errors,
               supports_autograd=True, supports_out=True, exact=True))
    add(OpInfo("unique", op=E.unique, ref=upcast(_unique_public_ref), dtypes=NOCPLX, sample_inputs=_unique_samples,
               error_inputs=_unique_errors, exact=True))
    add(OpInfo("unique_consecutive", op=E.unique_consecutive, ref=upcast(_unique_consecutive_public_ref), dtypes=NOCPLX,
               sample_inputs=_unique_samples, error_inputs=_unique_errors, exact=True))
    add(OpInfo("searchsorted", op=E.searchsorted, ref=_searchsorted_ref, dtypes=NOCPLX,
               sample_inputs=_searchsorted_samples, error_inputs=_searchsorted_errors, supports_out=True, exact=True))
    return ops


OPINFOS = _build()
op_db = OPINFOS
