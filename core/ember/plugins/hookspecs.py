"""Hook specifications for ember plugins.

A plugin is a module or object whose functions are marked with ``ember.plugins.hookimpl``
and named after the specs below; it is declared in the entry-point group
``ember.plugins`` of its distribution::

    [project.entry-points."ember.plugins"]
    cpu = "ember_cpu"

The hooks are checked when the plugin is loaded, not when they are called: a function
named ``ember_*`` that matches no spec, or a hook implementation with an argument the
spec does not have, is an error naming the plugin, the hook and the argument.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("ember")

#: the plugin API this ember provides; a plugin states the version it was built for
#: (``api_version`` in its manifest). Same major and a minor <= ours is compatible.
#: 1.1: ``ember.library.native_view`` and ``geometry`` (the fast kernel path).
API_VERSION = (1, 1)


# -------------------------------------------------------------------------
# Identity
# -------------------------------------------------------------------------

@hookspec
def ember_plugin_info() -> dict:
    """Return the plugin's manifest.

    Called once per plugin, first, before ``ember_register``. Every plugin must
    implement it.

    :returns: a dict with
        ``name`` (str, the plugin's name, e.g. ``"cpu"``),
        ``version`` (str, the distribution's version),
        ``api_version`` (str ``"MAJOR.MINOR"``, the ember plugin API it was built for),
        and optionally ``provides``: a dict with ``device_types``, ``layouts``,
        ``dtypes`` and ``ops`` (lists of names) for ``ember info`` and the
        conformance report.

    A plugin whose ``api_version`` has another major version than ember's, or a
    higher minor version, is refused with a message that names both versions.
    """


# -------------------------------------------------------------------------
# Registration
# -------------------------------------------------------------------------

@hookspec
def ember_register(registry) -> None:
    """Register what the plugin provides.

    Called once per plugin, after its manifest was accepted, the first time ember
    needs its registry (lazily: on first use, not at ``import ember``).

    :param registry: an ``ember.library.Registry`` bound to this plugin, with
        ``register_device_type`` (a device type, its ``ember.library.DeviceRuntime``:
        raw allocator, host copies, device count, generator), ``register_layout``,
        ``register_dtype``, ``register_fallback``, ``register_collective_backend`` (a
        collective backend for ``ember.distributed``, e.g. for the plugin's device type:
        ``registry.register_collective_backend("vccl", factory, devices=["vdev"])``, where
        ``factory(rank, world_size, timeout, init_method)`` returns an
        ``ember.distributed.CollectiveBackend``), and ``library(namespace)`` which
        returns an ``ember.library.Library`` for kernel registration and new ops.

    Registration is all-or-nothing: if the hook raises, nothing it registered is
    kept, the plugin is reported as failed (with the error) and skipped, and the rest
    of ember keeps working.

    Restrictions: registration only. Do not initialise devices, create contexts,
    compile kernels or allocate memory here; do that on first use of the device.
    """


# -------------------------------------------------------------------------
# Fusion (ember.compile)
# -------------------------------------------------------------------------

@hookspec(firstresult=True)
def ember_fuse(device_type: str, subgraph):
    """Fuse a run of elementwise nodes that ``ember.compile`` captured on ``device_type`` into one callable.

    Consulted only for a device type that has no fuser registered with ``registry.register_fuser``
    (the usual way, in ``ember_register``); the first implementation that returns something wins. The hook
    receives plain elementwise runs only (``subgraph.features`` is empty): to receive runs with broadcast
    operands or reductions, register with ``registry.register_fuser(device_type, fuse, features=...)``.

    :param device_type: the device type the run is on (return None for any other).
    :param subgraph: an ``ember.compiler._fusion.Subgraph``: ``device``, ``shape`` (every non-scalar
        operand is contiguous with this shape), ``slots`` (the tensors, with their dtypes and roles: a 0-dim
        broadcast operand, read before written, written, must be stored) and ``nodes`` (``op``, ``inputs``:
        slot indices or Python constants, ``scalars``: ``alpha`` / ``value``, ``out``: a slot index) in order.
    :returns: ``fused(*tensors)`` - called on each replay with the slots' tensors in order - that leaves every
        slot marked ``store`` holding what the nodes run one by one would have left; or None to decline
        (the nodes are then replayed one by one).

    Restrictions: called while ``ember.compile`` finishes a capture, on the capturing thread. Generating and
    compiling code here is allowed (cache it by ``subgraph.signature()``); running kernels is not needed.
    """


# -------------------------------------------------------------------------
# Conformance suite
# -------------------------------------------------------------------------

@hookspec
def ember_opinfos() -> list:
    """Contribute op-database entries for the ops the plugin defines.

    Called (not firstresult) by ``ember.testing.opdb.op_db()`` when it collects the op
    database, after every plugin registered; the lists of all plugins are concatenated
    with the core's entries, so ``ember conformance DEVICE`` and
    ``pytest --pyargs ember.testing.conformance`` test the plugin's ops on every device.

    :returns: a list of ``ember.testing.OpInfo`` (may be empty); each entry's ``name`` is
        the op's dispatcher name (``"<namespace>_<name>"`` for an op from
        ``ember.library.Library.define``) and its ``id`` must not clash with another entry's.

    Restrictions: build the records only (no device work, no tensors at call time:
    tensors are made later by the entries' ``sample_inputs``). Known gaps of the
    plugin's own devices go into its xfails file (manifest key ``conformance_xfails``,
    see ``ember.testing.conformance``), not into skipped entries.
    """


@hookspec
def ember_opinfo_entries(device_type: str) -> list:
    """Deprecated, kept for plugins written against it: implement ``ember_opinfos()`` instead,
    whose entries name the devices they apply to themselves (``dtypes_per_device``), so the
    database is the same whatever device is under test. Contribute op-database entries
    (``ember.testing.OpInfo``) for the plugin's ops.

    Called by the conformance suite (``ember.testing``) when it collects the op
    database; results from every plugin are concatenated.

    :param device_type: the device type under test.
    :returns: a list of ``OpInfo`` (may be empty).
    """
