"""ember.testing: the op database and the conformance suite every device plugin is run against.

``ember.testing.opdb.op_db()`` is the list of ``OpInfo`` records (one per op of the core op
set and per op a plugin contributes through the ``ember_opinfos`` hook); the conformance
suite (``ember.testing.conformance``, also ``ember conformance DEVICE``) runs them on a device.
See ``ember.testing._opinfo`` for the record types and the Note on how to add an op.
"""
from ._opinfo import (OpInfo, SampleInput, ErrorInput, make_tensor, describe, DEFAULT_TOLERANCES,  # noqa: F401
                      MissingDtype, plugin_dtype)
from ._host_runtime import HostMemoryRuntime  # noqa: F401
