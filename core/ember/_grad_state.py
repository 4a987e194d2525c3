"""Process-wide autograd state read by every generated op entry point (no imports: the
dispatcher loads this before anything else).

``STATE.check`` is what an entry point tests before looking at its arguments: it is
true only when grad mode is on *and* some tensor in this process has ever required
grad. Until the first ``requires_grad_(True)`` no op can need recording, so programs
that never use autograd pay one attribute load per op and nothing else.
"""
from __future__ import annotations


class _State:
    __slots__ = ("enabled", "inference", "ever", "check", "anomaly", "anomaly_check_nan")

    def __init__(self):
        self.enabled = True        # grad mode (no_grad / enable_grad / set_grad_enabled)
        self.inference = False     # inference_mode
        self.ever = False          # some tensor has required grad in this process
        self.check = False         # enabled and ever: entry points test this one flag
        self.anomaly = False       # detect_anomaly
        self.anomaly_check_nan = True

    def update(self):
        self.check = self.enabled and self.ever


STATE = _State()


def mark_requires_grad():
    """Called when a tensor first requires grad: from now on entry points look at their inputs."""
    if not STATE.ever:
        STATE.ever = True
        STATE.update()
