"""Streams and events: ``ember.cuda.Stream``, ``Event``, ``current_stream``, ``default_stream``,
``stream(s)`` (matches torch.cuda's; each wraps the cupy object of the same name).

ember's current stream *is* cupy's current stream of the device: kernels are launched through
cupy, which queues them on ``cupy.cuda.get_current_stream()``, so ``with ember.cuda.stream(s)``
makes ``s`` cupy's current stream for the block (``cupy.cuda.Stream.use``) and restores the
previous one after it. The caching allocator asks the runtime for the current stream
(``CudaRuntime.current_stream_key``) and reuses a freed block only on the stream it was
allocated on; ``Tensor.record_stream(s)`` delays the reuse until the work queued on ``s`` when
the tensor died has finished.

Unverified: written against cupy's documentation; no GPU was available when this was written
(docs/cuda.md lists what was checked and how).
"""
from __future__ import annotations

__all__ = ["Event", "Stream", "StreamContext", "current_stream", "default_stream", "stream"]


def _rt():
    from ._runtime import RUNTIME
    return RUNTIME


def _index(device):
    rt = _rt()
    if device is None:
        return rt.current_device()
    if isinstance(device, int):
        return device
    import ember
    d = ember.device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index if d.index is not None else rt.current_device()


class Stream:
    """A CUDA stream: an in-order queue of work on one device (matches torch.cuda.Stream).

    :param device: the device (index, "cuda:i" or ember.device); default the current one.
    :param priority: lower numbers are higher priorities; passed to ``cudaStreamCreateWithPriority``,
        which clamps it to the device's range (0 is the default priority; ``priority`` reads back
        the value CUDA kept).
    :raises RuntimeError: when no CUDA device is available (the message says why).
    """

    def __init__(self, device=None, priority=0, *, _cupy_stream=None):
        rt = _rt()
        rt.require()
        import cupy
        self.device_index = _index(device)
        rt._check_index(self.device_index)
        if _cupy_stream is not None:
            self._s = _cupy_stream
        else:
            with cupy.cuda.Device(self.device_index):
                self._s = cupy.cuda.Stream(non_blocking=True, priority=int(priority))

    @property
    def device(self):
        """The stream's device (cuda:index)."""
        import ember
        return ember.device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` (0 for the legacy default stream)."""
        return int(self._s.ptr)

    @property
    def priority(self) -> int:
        """The stream's CUDA priority (lower is higher priority)."""
        import cupy
        return int(cupy.cuda.runtime.streamGetPriority(self._s.ptr))

    def query(self) -> bool:
        """Whether all queued work has finished."""
        return bool(self._s.done)

    def synchronize(self) -> None:
        """Wait for all work queued on this stream."""
        self._s.synchronize()

    def wait_event(self, event) -> None:
        """Make future work on this stream wait for ``event``."""
        self._s.wait_event(event._e)

    def wait_stream(self, stream) -> None:
        """Make future work on this stream wait for the work queued so far on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one when None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream and \
            self.device_index == other.device_index

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"

    def __enter__(self):
        self._ctx = StreamContext(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


class Event:
    """A CUDA event: a marker in a stream to wait on or time with (matches torch.cuda.Event).

    :param enable_timing: record timestamps (needed for ``elapsed_time``).
    :param blocking: ``synchronize`` blocks the host thread instead of spinning.
    :param interprocess: may be shared with other processes.
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _rt().require()
        import cupy
        self.enable_timing = enable_timing
        self._e = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)
        self._recorded = False

    def record(self, stream=None) -> None:
        """Record on ``stream`` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        self._e.record(stream._s)
        self._recorded = True

    def wait(self, stream=None) -> None:
        """Make ``stream`` (default: the current stream) wait for this event."""
        stream = current_stream() if stream is None else stream
        stream._s.wait_event(self._e)

    def query(self) -> bool:
        """Whether the work before the event has finished (True for an event never recorded)."""
        return bool(self._e.done)

    def synchronize(self) -> None:
        """Wait until the work before the event has finished."""
        self._e.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both with timing).

        :raises RuntimeError: as torch does, when either event was created without ``enable_timing``
            or has not been recorded.
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        import cupy
        return float(cupy.cuda.get_elapsed_time(self._e, end_event._e))

    @property
    def cuda_event(self) -> int:
        """The raw ``cudaEvent_t`` handle as an int."""
        return int(self._e.ptr)

    def __repr__(self):
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None) -> Stream:
    """The stream kernels on ``device`` (default: the current device) are queued on."""
    rt = _rt()
    rt.require()
    import cupy
    i = _index(device)
    with cupy.cuda.Device(i):
        s = cupy.cuda.get_current_stream()
    return Stream(i, _cupy_stream=s)


def default_stream(device=None) -> Stream:
    """The device's default (legacy null) stream."""
    rt = _rt()
    rt.require()
    import cupy
    return Stream(_index(device), _cupy_stream=cupy.cuda.Stream.null)


class StreamContext:
    """``with ember.cuda.stream(s):`` - kernels inside are queued on ``s`` (and its device is current);
    None leaves everything as it is (matches torch.cuda.StreamContext)."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        import cupy
        rt = _rt()
        self._prev_dev = rt.current_device()
        rt.set_device(s.device_index)
        self._prev = cupy.cuda.get_current_stream()
        s._s.use()
        return s

    def __exit__(self, *exc):
        if self.stream is None:
            return
        self._prev.use()
        _rt().set_device(self._prev_dev)


def stream(s) -> StreamContext:
    """Context manager selecting stream ``s`` (matches torch.cuda.stream)."""
    return StreamContext(s)
