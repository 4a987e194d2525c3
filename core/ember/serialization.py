"""ember.save / ember.load: a zip container of an object structure and one record per storage.

The format (ember's own, in the spirit of PyTorch's zip format)::

    archive/data.pkl        the object structure, pickled (protocol 2 by default); every storage
                            is a persistent id ('storage', key, location, nbytes, dtype name)
    archive/byteorder       b"little" or b"big": the byte order the storages were written in
    archive/data/<key>      one record per storage: its raw bytes, stored uncompressed, the data
                            aligned to 64 bytes in the file (so ``load(mmap=True)`` maps it)
    archive/version         b"1\\n": the format version

Storages shared between tensors are written once and come back shared (two views of one
storage load as two views of one storage). Tensors of any device are saved through the host
(the runtime's ``to_numpy``) with their device recorded as the location ("cpu", "cuda:0").

Loading never runs code from the file by default: ``weights_only=True`` uses a restricted
unpickler that resolves only an allow-list of globals (ember's tensor rebuild functions, dtypes,
devices, Size, ``nn.Parameter``/``nn.Buffer``, ``collections.OrderedDict``, builtin containers
and primitives) plus what the user allow-lists with ``add_safe_globals`` / ``safe_globals``; it
refuses BUILD (``__setstate__``) on anything but allow-listed classes. Anything else raises
``pickle.UnpicklingError`` naming the global - a ``__reduce__`` payload is never executed.

Saving to a path is atomic: the archive is written to a temporary file in the target's
directory, flushed, fsync'ed and renamed over the target with ``os.replace``; on any error the
temporary file is removed and an existing file at the target is left untouched. The object is
pickled in memory before any file is opened, so an unpicklable object fails before any I/O.
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import pickletools
import struct
import sys
import tempfile
import zipfile

from ._allocator import UntypedStorage
from ._tensor import Tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL", "FORMAT_VERSION"]

#: the pickle protocol ember.save uses by default (as torch.save)
DEFAULT_PROTOCOL = 2
#: the version written to archive/version; load refuses newer ones
FORMAT_VERSION = 1
_ALIGN = 64                         # storage records' data start at a multiple of this in the file
_PAD_ID = 0x4D45                    # zip extra-field id of the alignment padding ("EM")
_PREFIX = "archive/"


# ================================================================ save
def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (tensors, storages, state dicts, nested containers) to ``f``.

    ``f``: a path (str / os.PathLike; written atomically - temporary file in the same directory,
    fsync, ``os.replace``) or a writable binary file-like object (written from its current
    position; not closed). Each storage is written once, through the host, with its device.
    Raises whatever pickling ``obj`` raises (e.g. ``pickle.PicklingError`` / ``AttributeError`` /
    ``TypeError`` for an unpicklable object) before anything is written; an existing file at
    the target path is then left untouched. Matches torch.save (zip format only).
    """
    if not _use_new_zipfile_serialization:
        raise RuntimeError("ember.save writes only the zip format; _use_new_zipfile_serialization=False is "
                           "not supported")
    data_pkl, storages = _pickle_structure(obj, pickle_module, pickle_protocol)
    if isinstance(f, (str, bytes, os.PathLike)):
        _atomic_write(os.fsdecode(f), lambda fh: _write_archive(fh, data_pkl, storages,
                                                                not _disable_byteorder_record))
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"ember.save: f must be a path or a file-like object with write(), not "
                                 f"{type(f).__name__}")
        _write_archive(f, data_pkl, storages, not _disable_byteorder_record)
        if hasattr(f, "flush"):
            f.flush()


def _pickle_structure(obj, pickle_module, protocol):
    """(the pickled structure, [(key, storage, dtype name)]) - storages become persistent ids."""
    keys = {}           # id(storage) -> key
    storages = []       # (key, storage, dtype name); also keeps the storages alive while pickling
    dtype_of = {}       # id(storage) -> name of the first dtype a tensor viewed it as (for byte swapping)

    class _Pickler(pickle_module.Pickler):
        def reducer_override(self, o):
            # only notes the dtype a storage is viewed as (for byte swapping on load); the tensor
            # (or subclass) then pickles through its own __reduce_ex__
            if isinstance(o, Tensor):
                dtype_of.setdefault(id(o._storage), o._dtype.name)
            return NotImplemented

        def persistent_id(self, o):
            if isinstance(o, UntypedStorage):
                k = keys.get(id(o))
                if k is None:
                    k = keys[id(o)] = str(len(storages))
                    storages.append((k, o, dtype_of.get(id(o), "uint8")))
                return ("storage", k, str(o.device), o._nbytes, dtype_of.get(id(o), "uint8"))
            return None

    buf = io.BytesIO()
    _Pickler(buf, protocol=protocol).dump(obj)
    data = buf.getvalue()
    if len(data) < (1 << 20):
        # drop the memo writes nothing reads back (a BINPUT per object: 15-20 % of a state dict's
        # pickle); linear, done for the small pickles state dicts make
        data = pickletools.optimize(data)
    return data, storages


def _write_archive(fh, data_pkl, storages, byteorder_record):
    from . import _serialization_support as S
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, _PREFIX + "data.pkl", data_pkl)
        if byteorder_record:
            _write_record(zf, _PREFIX + "byteorder", sys.byteorder.encode())
        for key, storage, _ in storages:
            arr = S.host_bytes(storage)             # device -> host copy (a view on host devices)
            _write_record(zf, _PREFIX + "data/" + key, arr, align=True)
        _write_record(zf, _PREFIX + "version", f"{FORMAT_VERSION}\n".encode())


def _write_record(zf, name, data, align=False):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    nbytes = len(view)
    info.file_size = nbytes
    zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT
    if align:
        # pad the local header's extra field so the data starts at a multiple of _ALIGN
        start = zf.fp.tell() + 30 + len(name.encode()) + 4 + (20 if zip64 else 0)
        pad = -start % _ALIGN
        info.extra = struct.pack("<HH", _PAD_ID, pad) + b"\0" * pad
    with zf.open(info, "w", force_zip64=zip64) as out:
        chunk = 64 << 20
        for i in range(0, nbytes, chunk):
            out.write(view[i:i + chunk])
    # the padding belongs to the local header only (readers find the data through it); without
    # this, zipfile would repeat it in the central directory: up to 63 wasted bytes per storage
    info.extra = b""


def _default_mode(path):
    """The mode a new file at ``path`` would get (an existing file keeps its own)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        pass
    umask = None
    try:
        with open("/proc/self/status") as s:
            for line in s:
                if line.startswith("Umask:"):
                    umask = int(line.split()[1], 8)
    except OSError:
        pass
    if umask is None:        # not Linux: read it the only portable way (set and restore)
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True                     # someone else's live process (or we cannot tell): keep its file
    return True


def _remove_stale_temporaries(directory, base):
    """Delete ``.<base>.<pid>.<random>.tmp`` files that a save to the same path left behind when its process
    was killed (the pid is no longer running). A live process's temporary (a concurrent save) is kept."""
    prefix = f".{base}."
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):-len(".tmp")].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, n))


def _atomic_write(path, write):
    """Write through ``write(fh)`` into a temporary file beside ``path``, fsync, rename over ``path``."""
    path = os.path.realpath(path)             # through a symlink: replace its target, keep the link
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {directory} does not exist.")
    if os.path.isdir(path):
        raise IsADirectoryError(f"ember.save: {path!r} is a directory")
    mode = _default_mode(path)
    _remove_stale_temporaries(directory, os.path.basename(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.{os.getpid()}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError, AttributeError):      # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# ================================================================ safe globals
# "module.qualname" -> the object; ember's defaults are resolved lazily (see _default_safe)
_user_safe: dict = {}

_DEFAULT_SAFE_NAMES = frozenset({
    "ember._serialization_support._rebuild_tensor", "ember._dtype._dtype_by_name", "ember._device.device",
    "ember._ops._quantized._rebuild_qtensor",
    "ember._device._layout_by_name", "ember._tensor.Size",
    "ember.sparse._rebuild_sparse_coo",
    "ember.nn.parameter._rebuild_parameter", "ember.nn.parameter._rebuild_buffer",
    "collections.OrderedDict", "builtins.set", "builtins.frozenset", "builtins.bytearray", "builtins.bytes",
    "builtins.complex", "builtins.slice", "builtins.range", "_codecs.encode",
})
# Only the builtins ember.save's protocol-2 pickles name (lists, dicts, tuples, numbers and strings have
# opcodes of their own), each through a guard that accepts only the arguments such a pickle passes: a
# materialised list or bytes, never a count or an iterator, so a tiny file cannot build a huge object
# (``list(range(40_000_000))``, ``bytearray(2**34)``, ``set(range(...))``).


def _materialised(arg, *types):
    return any(type(arg) is t for t in types)


def _guard(name, fn, check):
    def guarded(*args):
        if not check(args):
            raise pickle.UnpicklingError(f"ember.load: {name}{tuple(type(a).__name__ for a in args)} is not what "
                                         f"ember.save writes; refused (weights_only=True)")
        return fn(*args)
    guarded.__name__ = name
    return guarded


def _guarded_builtins() -> dict:
    """The guarded constructors of the allow-listed builtins, by "module.name" (built once)."""
    import collections
    sized = lambda a: not a or (len(a) == 1 and _materialised(a[0], list, tuple, set, frozenset))  # noqa: E731
    numbers = lambda a: len(a) <= 3 and all(type(x) in (int, float, type(None)) for x in a)      # noqa: E731
    return {
        "builtins.bytes": _guard("bytes", bytes, lambda a: not a or (len(a) == 1 and _materialised(a[0], bytes))),
        "builtins.bytearray": _guard("bytearray", bytearray,
                                     lambda a: not a or (len(a) == 1 and _materialised(a[0], bytes))),
        "builtins.set": _guard("set", set, sized),
        "builtins.frozenset": _guard("frozenset", frozenset, sized),
        "builtins.complex": _guard("complex", complex, lambda a: len(a) <= 2 and all(type(x) in (int, float)
                                                                                     for x in a)),
        "builtins.slice": _guard("slice", slice, numbers),
        "builtins.range": _guard("range", range, lambda a: 1 <= len(a) <= 3 and all(type(x) is int for x in a)),
        "collections.OrderedDict": _guard("OrderedDict", collections.OrderedDict,
                                          lambda a: not a or (len(a) == 1 and _materialised(a[0], list, dict))),
    }


_GUARDED = _guarded_builtins()
#: modules whose globals are refused with "whose module ... is blocked" (no add_safe_globals hint)
_BLOCKED_MODULES = frozenset({"os", "posix", "nt", "subprocess", "sys", "shutil", "socket", "importlib",
                              "runpy", "pty", "ctypes", "code", "pickle", "_pickle", "marshal", "webbrowser",
                              "multiprocessing", "signal", "io", "tempfile", "pathlib"})
_BLOCKED_BUILTINS = frozenset({"eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "delattr",
                               "globals", "locals", "vars", "input", "breakpoint", "type", "object", "memoryview",
                               "print", "exit", "quit", "help"})


def _latin1_encode(obj, encoding="utf-8", errors="strict"):
    """``_codecs.encode`` as protocol-2 pickles use it for bytes (latin1 only)."""
    if encoding not in ("latin1", "latin-1") or not isinstance(obj, str) or errors != "strict":
        raise pickle.UnpicklingError("_codecs.encode is allowed only for latin1 bytes records")
    return obj.encode("latin1")


def _resolve_default(key):
    module, _, name = key.rpartition(".")
    if key == "_codecs.encode":
        return _latin1_encode
    if module in ("builtins", "collections"):
        return _GUARDED[key]
    if key == "ember._tensor.Size":
        from ._tensor import Size
        from ._serialization_support import _MAX_DIMS
        return _guard("Size", Size, lambda a: len(a) == 1 and _materialised(a[0], tuple, list) and
                      len(a[0]) <= _MAX_DIMS)
    import importlib
    return getattr(importlib.import_module(module), name)       # one of ember's own modules


def _global_name(obj):
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def add_safe_globals(safe_globals) -> None:
    """Allow-list globals for ``ember.load(weights_only=True)`` (matches torch.serialization.add_safe_globals).

    ``safe_globals``: a list of classes / functions, or ``(obj, "module.name")`` tuples for objects
    whose pickled name differs from ``obj.__module__ + "." + obj.__qualname__``. Only add what
    you trust: an allow-listed callable can be called with any arguments by a crafted file.
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals: expected a list of globals, got {type(safe_globals).__name__}")
    for g in safe_globals:
        if isinstance(g, tuple):
            if len(g) != 2 or not isinstance(g[1], str):
                raise ValueError(f"add_safe_globals: expected (object, 'module.name'), got {g!r}")
            _user_safe[g[1]] = g[0]
        else:
            _user_safe[_global_name(g)] = g


def get_safe_globals() -> list:
    """The user's allow-listed globals (added by add_safe_globals), as torch.serialization.get_safe_globals."""
    return [obj if _global_name(obj) == name else (obj, name) for name, obj in _user_safe.items()]


def clear_safe_globals() -> None:
    """Forget every user allow-listed global."""
    _user_safe.clear()


class safe_globals:
    """Context manager: ``with ember.serialization.safe_globals([Foo]): ember.load(...)`` allow-lists
    ``Foo`` inside the block only (matches torch.serialization.safe_globals)."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = dict(_user_safe)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _user_safe.clear()
        _user_safe.update(self._saved)
        return False


def _unsupported(module, name, why):
    hint = ""
    if module.split(".")[0] == "torch":
        hint = ("\n\tThis looks like a PyTorch checkpoint: ember reads files written by ember.save; load it with "
                "torch and convert the tensors (e.g. via numpy).")
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only "
        "if you trust the source of the checkpoint. \n"
        "\t(1) Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can result in "
        "arbitrary code execution. Do it only if you got the file from a trusted source.\n"
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the following "
        f"error message.\n\tWeightsUnpickler error: {why}{hint}")


class _WeightsUnpickler(pickle._Unpickler):
    """The restricted unpickler of ``weights_only=True``.

    Built on the pure-Python unpickler so that BUILD can be restricted too (the C unpickler
    only lets ``find_class`` be overridden): globals resolve only through the allow-list,
    BUILD is allowed only on allow-listed classes, and storages come from the archive.
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module, name):
        """The global ``module.name`` if allow-listed (user's first, then ember's guarded defaults); else
        ``pickle.UnpicklingError`` naming it and how to allow-list it."""
        if self.proto < 3 and self.fix_imports:          # protocol 2 spells builtins "__builtin__"
            import _compat_pickle
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        key = f"{module}.{name}"
        obj = _user_safe.get(key)
        if obj is not None:
            return obj
        if key in _DEFAULT_SAFE_NAMES:
            return _resolve_default(key)
        if module.split(".")[0] in _BLOCKED_MODULES or (module == "builtins" and name in _BLOCKED_BUILTINS):
            raise _unsupported(module, name, f"Trying to load unsupported GLOBAL {key} whose module {module} is "
                                             f"blocked.")
        raise _unsupported(module, name, f"Unsupported global: GLOBAL {key} was not an allowed global by default. "
                                         f"Please use `ember.serialization.add_safe_globals([{key}])` or the "
                                         f"`ember.serialization.safe_globals([{key}])` context manager to "
                                         f"allowlist this global if you trust this class/function.")

    def load_build(self):
        """BUILD (``__setstate__``), only on an OrderedDict or an allow-listed class; UnpicklingError otherwise."""
        stack = self.stack
        state = stack[-1]
        inst = stack[-2]
        cls = type(inst)
        import collections
        if cls is collections.OrderedDict and (state is None or type(state) is dict):
            pass
        elif _global_name(cls) not in _user_safe or _user_safe[_global_name(cls)] is not cls:
            raise _unsupported(cls.__module__, cls.__qualname__,
                               f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                               f"`add_safe_globals`, but got {cls}")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.BUILD[0]] = load_build


# ================================================================ load
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved with ``ember.save`` (matches torch.load).

    ``f``: a path or a readable, seekable binary file-like object.
    ``map_location``: None (each storage back on the device it was saved from), a str or
    ``ember.device`` (every storage there), a dict ``{'cuda:0': 'cpu'}`` (saved location ->
    target; others unchanged), or a callable ``(storage, location) -> storage | None`` called
    with each storage loaded on the cpu and its saved location (None: default restore).
    ``weights_only`` (default True unless ``pickle_module`` is given): the restricted unpickler
    (see module docstring); ``pickle.UnpicklingError`` naming a refused global. ``mmap=True``
    maps the file (copy-on-write, as torch's MAP_PRIVATE) instead of reading it; cpu storages
    then view the mapping (no copy; record checksums are not verified).

    Raises RuntimeError for a truncated / corrupted / non-ember file ("failed reading zip
    archive"), for a file from a newer ember, and for a storage whose device plugin is not
    installed (suggesting map_location); RuntimeError "Can not safely load weights when explicit
    pickle_module is specified" for ``weights_only=True`` with a ``pickle_module``.
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_module is None:
        pickle_module = pickle
    with contextlib.ExitStack() as stack:
        if isinstance(f, (str, bytes, os.PathLike)):
            fh = stack.enter_context(open(os.fsdecode(f), "rb"))
        else:
            if not hasattr(f, "read"):
                raise AttributeError(f"ember.load: f must be a path or a file-like object with read(), not "
                                     f"{type(f).__name__}")
            fh = f
            if not (hasattr(f, "seekable") and f.seekable()):
                fh = io.BytesIO(f.read())
        zf = stack.enter_context(_open_zip(fh))
        reader = _Reader(zf, fh, mmap=bool(mmap), map_location=map_location)
        unpickler_cls = _WeightsUnpickler if weights_only else pickle_module.Unpickler

        class _Unpickler(unpickler_cls):
            def persistent_load(self, pid):
                return reader.storage(pid)

        data = reader.read(reader.prefix + "data.pkl")
        try:
            return _Unpickler(io.BytesIO(data), **pickle_load_args).load()
        except pickle.UnpicklingError:
            raise
        except (EOFError, ValueError, KeyError, IndexError, struct.error) as e:
            if weights_only:
                raise pickle.UnpicklingError(f"ember.load: the object structure (data.pkl) is corrupted: "
                                             f"{type(e).__name__}: {e}") from None
            raise


_CORRUPT = ("The checkpoint is likely corrupted or truncated: it may not have been saved completely, been transferred "
            "incorrectly, or been modified after saving (or it was not written by ember.save).")


@contextlib.contextmanager
def _open_zip(fh):
    try:
        zf = zipfile.ZipFile(fh, "r")
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        why = str(e)
        if "not a zip file" in why.lower():
            why = "failed finding central directory"
        raise RuntimeError(f"ember.load failed reading zip archive: {why}. {_CORRUPT}") from None
    try:
        yield zf
    finally:
        zf.close()


class _Reader:
    """Reads records out of the archive and turns persistent ids into storages (once per key)."""

    def __init__(self, zf, fh, mmap, map_location):
        self.zf = zf
        names = zf.namelist()
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise RuntimeError(f"ember.load failed reading zip archive: the record {dup!r} appears more than once "
                               f"(ember.save never writes that; a crafted file could show different contents to "
                               f"different readers). {_CORRUPT}")
        try:
            fh.seek(0, os.SEEK_END)
            self.archive_size = fh.tell()
        except (OSError, AttributeError, ValueError):
            self.archive_size = None
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            raise RuntimeError(f"ember.load failed reading zip archive: no data.pkl record (found "
                               f"{names[:5]}). {_CORRUPT}")
        self.prefix = pkl[0][:-len("data.pkl")]
        vname = self.prefix + "version"
        if vname not in names:
            raise RuntimeError(f"ember.load failed reading zip archive: no version record. {_CORRUPT}")
        try:
            version = int(self.read(vname).decode().strip())
        except ValueError:
            raise RuntimeError(f"ember.load failed reading zip archive: malformed version record. {_CORRUPT}") \
                from None
        if version > FORMAT_VERSION:
            raise RuntimeError(f"ember.load: the file was written by a newer ember (format version {version}; this "
                               f"ember reads up to version {FORMAT_VERSION}). Upgrade ember to load it.")
        bo = self.prefix + "byteorder"
        self.byteorder = self.read(bo).decode().strip() if bo in names else "little"
        if self.byteorder not in ("little", "big"):
            raise RuntimeError(f"ember.load: unknown byteorder record {self.byteorder!r}. {_CORRUPT}")
        self.map_location = map_location
        self.storages = {}
        self.mm = None
        if mmap:
            import mmap as _mmap
            try:
                fileno = fh.fileno()
            except (AttributeError, OSError, io.UnsupportedOperation):
                raise ValueError("ember.load(mmap=True) needs a file path or a real file object") from None
            self.mm = _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY)
            self.fh = fh

    def read(self, name) -> bytes:
        """Record ``name``'s bytes. ember.save stores records uncompressed, so a compressed record (a deflate
        bomb inflates 1000x) or one declaring more bytes than the archive holds is refused before reading."""
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            info = None
        if info is not None:
            if info.compress_type != zipfile.ZIP_STORED:
                raise RuntimeError(f"ember.load: record {name!r} is compressed; ember.save never compresses records, "
                                   f"so this file was not written by it (refused: a compressed record can inflate "
                                   f"far beyond the file's size). {_CORRUPT}")
            if self.archive_size is not None and info.file_size > self.archive_size:
                raise RuntimeError(f"ember.load: record {name!r} declares {info.file_size} bytes, more than the "
                                   f"{self.archive_size}-byte archive holds. {_CORRUPT}")
        try:
            return self.zf.read(name)
        except KeyError:
            raise RuntimeError(f"ember.load failed reading zip archive: record {name!r} is missing. {_CORRUPT}") \
                from None
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error) as e:
            raise RuntimeError(f"ember.load failed reading zip archive: record {name!r}: {e}. {_CORRUPT}") from None

    def _record_array(self, name, nbytes):
        import numpy as np
        if self.mm is not None:
            try:
                info = self.zf.getinfo(name)
            except KeyError:
                raise RuntimeError(f"ember.load failed reading zip archive: record {name!r} is missing. "
                                   f"{_CORRUPT}") from None
            if info.compress_type != zipfile.ZIP_STORED or info.file_size != nbytes:
                raise RuntimeError(f"ember.load(mmap=True): record {name!r} is compressed or has the wrong size")
            head = self.mm[info.header_offset:info.header_offset + 30]
            if len(head) < 30 or head[:4] != b"PK\x03\x04":
                raise RuntimeError(f"ember.load failed reading zip archive: bad local header for {name!r}. "
                                   f"{_CORRUPT}")
            n, m = struct.unpack("<HH", head[26:30])
            start = info.header_offset + 30 + n + m
            if start + nbytes > len(self.mm):
                raise RuntimeError(f"ember.load failed reading zip archive: record {name!r} is truncated. "
                                   f"{_CORRUPT}")
            return np.frombuffer(self.mm, np.uint8, count=nbytes, offset=start), True
        try:
            declared = self.zf.getinfo(name).file_size
        except KeyError:
            declared = nbytes                 # missing: read() reports it
        if declared != nbytes:                # checked before a byte is read or inflated
            raise RuntimeError(f"ember.load: record {name!r} holds {declared} bytes, expected {nbytes}. {_CORRUPT}")
        data = self.read(name)
        if len(data) != nbytes:
            raise RuntimeError(f"ember.load: record {name!r} holds {len(data)} bytes, expected {nbytes}. {_CORRUPT}")
        return np.frombuffer(bytearray(data), np.uint8), False

    def storage(self, pid):
        """The storage a persistent id ``("storage", key, location, nbytes, dtype)`` names, read once per key and
        placed as ``map_location`` says; UnpicklingError for a malformed id, RuntimeError for a bad record."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], str)
                and isinstance(pid[2], str) and type(pid[3]) is int and pid[3] >= 0 and isinstance(pid[4], str)):
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r}")
        _, key, location, nbytes, dtype_name = pid
        st = self.storages.get(key)
        if st is not None:
            return st
        arr, mapped = self._record_array(self.prefix + "data/" + key, nbytes)
        if self.byteorder != sys.byteorder:
            arr = _byteswapped(arr, dtype_name)
            mapped = False
        st = self.storages[key] = self._place(arr, mapped, location)
        return st

    def _place(self, arr, mapped, location):
        from . import _serialization_support as S
        from ._device import device
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, device, dict)):
            host = self._on(arr, mapped, S.restore_location("cpu"))
            st = ml(host, location)
            if st is None:
                return self._on(arr, mapped, S.restore_location(location))
            if not isinstance(st, UntypedStorage):
                raise TypeError(f"ember.load: map_location must return an ember.UntypedStorage or None, got "
                                f"{type(st).__name__}")
            return st
        if ml is None:
            target = location
        elif isinstance(ml, (str, device)):
            target = str(ml)
        elif isinstance(ml, dict):
            target = ml.get(location, location)
            target = str(target)
        else:
            raise TypeError(f"ember.load: map_location should be a str, ember.device, dict or callable, got "
                            f"{type(ml).__name__}")
        return self._on(arr, mapped, S.restore_location(target))

    def _on(self, arr, mapped, dev):
        """A storage on ``dev`` with the bytes of ``arr``; a view of it where ``dev`` is host memory
        and ``arr`` is a private mapping of the file."""
        from . import _serialization_support as S
        from . import _registry
        runtime = _registry.device_type(dev.type).runtime
        wrap = getattr(runtime, "wrap_numpy", None)
        if mapped and runtime.host_memory and wrap is not None:
            from ._dtype import uint8
            return wrap(arr, uint8, dev)._storage
        return S.storage_from_host(arr, dev)


def _byteswapped(arr, dtype_name):
    """The storage bytes in this machine's byte order (each element of the recorded dtype swapped)."""
    from ._dtype import _BY_NAME
    d = _BY_NAME.get(dtype_name)
    size = 1 if d is None else d.itemsize
    if d is not None and d.is_complex:
        size //= 2                    # a complex number is two floats, each swapped on its own
    if size == 1 or arr.shape[0] % size:
        return arr
    return arr.reshape(-1, size)[:, ::-1].reshape(-1).copy()
