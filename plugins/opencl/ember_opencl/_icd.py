"""Make pip-installed OpenCL runtimes visible to pyopencl's ICD loader.

pyopencl's Linux wheels carry their own ICD loader (ocl-icd) and PoCL, which the loader finds
through ``PYOPENCL_HOME`` by itself. Other runtimes are found through ICD files (one line: the
path of the runtime's library) in ``/etc/OpenCL/vendors``, or in the directory named by
``OCL_ICD_VENDORS``, which replaces it. Intel's CPU runtime from PyPI (``intel-opencl-rt``)
installs ``libintelocl.so`` into ``<prefix>/lib`` and an ICD file naming a path that exists only
on Intel's build machine, so as installed it is never found.

``expose_installed_runtimes()`` (called when ember-opencl is imported, before any platform is
listed) writes a vendors directory holding an ICD file for each runtime found installed in the
Python environment plus a copy of every system ICD file (so GPU drivers stay visible), and
points ``OCL_ICD_VENDORS`` at it. The directory lives in ember's cache
(``$XDG_CACHE_HOME/ember/opencl-vendors/<hash of its contents>``, a temporary directory where
the cache is not writable) and is written atomically, so concurrent processes agree on it.

A user's own ``OCL_ICD_VENDORS`` is respected: then nothing is changed, and ``ember info`` says
so. Nothing here imports pyopencl.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import tempfile
from pathlib import Path

__all__ = ["InstalledRuntime", "installed_runtimes", "expose_installed_runtimes", "EXPOSED"]

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")


@dataclasses.dataclass
class InstalledRuntime:
    """An OpenCL runtime found installed in the Python environment."""
    name: str              # "intel" / "pocl": what EMBER_OPENCL_PLATFORM and the extras call it
    distribution: str      # the PyPI distribution that brings it
    library: str           # the ICD library's absolute path ("" when it is missing)
    problem: str = ""      # why it cannot be used as installed (a missing companion library), else ""


def _dist_file(dist: str, filename: str) -> str:
    """The absolute path of ``filename`` (a basename) among distribution ``dist``'s files, or ""."""
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        return ""
    for f in files:
        if f.name == filename:
            p = Path(f.locate()).resolve()
            if p.exists():
                return str(p)
    return ""


def _intel() -> InstalledRuntime | None:
    try:
        importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        return None
    lib = _dist_file("intel-opencl-rt", "libintelocl.so")
    rt = InstalledRuntime("intel", "intel-opencl-rt", lib)
    if not lib:
        rt.problem = "intel-opencl-rt is installed but its libintelocl.so was not found among its files"
        return rt
    # libintelocl.so needs Intel's compiler runtime (libimf, libsvml, libirng, libintlc) beside it
    missing = [n for n in ("libimf.so", "libsvml.so", "libirng.so") if not (Path(lib).parent / n).exists()]
    if missing:
        rt.problem = (f"Intel's OpenCL runtime needs {', '.join(missing)} from intel-cmplr-lib-rt: "
                      f"pip install intel-cmplr-lib-rt (or pip install 'ember-opencl[intel]')")
    return rt


def _pocl() -> InstalledRuntime | None:
    """PoCL as pyopencl's wheel bundles it (found by the wheel's loader itself; listed for `ember info`)."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("pyopencl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    libs = Path(spec.origin).parent / ".libs"
    found = sorted(libs.glob("libpocl*.so*")) if libs.is_dir() else []
    if not found:
        return None
    return InstalledRuntime("pocl", "pyopencl (bundled PoCL)", str(found[0]))


def installed_runtimes() -> list:
    """The OpenCL runtimes installed as Python packages: [InstalledRuntime] (Intel's CPU runtime,
    PoCL as bundled with pyopencl)."""
    return [r for r in (_intel(), _pocl()) if r is not None]


@dataclasses.dataclass
class _Exposed:
    vendors_dir: str = ""      # the OCL_ICD_VENDORS directory ember wrote ("" when it wrote none)
    respected_user: str = ""   # the user's OCL_ICD_VENDORS, left as it was
    added: tuple = ()          # names of the runtimes given an ICD file
    problems: tuple = ()       # (runtime name, problem) for installed runtimes that cannot be used


#: what ``expose_installed_runtimes`` did in this process (read by the runtime's reports)
EXPOSED = _Exposed()


def _system_icds() -> dict:
    """{file name: contents} of the system's ICD files."""
    out = {}
    try:
        for f in sorted(SYSTEM_VENDORS.glob("*.icd")):
            try:
                out[f.name] = f.read_text().strip()
            except OSError:
                continue
    except OSError:
        pass
    return out


def _missing_libraries(icds: dict) -> list:
    """(icd file, problem) for ICD files naming an absolute library path that does not exist: the loader skips
    them without a word, so ember says it."""
    return [(name, f"the ICD file {name} names {lib}, which does not exist (a removed or moved OpenCL runtime; "
                   f"reinstall it or delete the ICD file)")
            for name, lib in icds.items() if os.path.isabs(lib) and not os.path.exists(lib)]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ember" / "opencl-vendors"


def _write_vendors_dir(files: dict) -> str:
    """A directory holding exactly ``files`` ({name: text}); reused when one with the same contents
    exists. Written into a temporary sibling and renamed, so a reader never sees it half-written."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"ember-opencl-vendors-{getattr(os, 'getuid', lambda: 0)()}"):
        target = root / digest
        if all((target / n).is_file() for n in files):
            return str(target)
        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
            for name, text in files.items():
                (tmp / name).write_text(text + "\n")
            try:
                os.rename(tmp, target)
            except OSError:              # another process won the race: its directory is the same
                for name in files:
                    (tmp / name).unlink(missing_ok=True)
                tmp.rmdir()
            if all((target / n).is_file() for n in files):
                return str(target)
        except OSError:
            continue
    return ""


def expose_installed_runtimes() -> _Exposed:
    """Point ``OCL_ICD_VENDORS`` at a vendors directory naming every runtime installed in this Python
    environment plus the system's ICD files. Once per process; returns what was done (``EXPOSED``).

    Does nothing when ``OCL_ICD_VENDORS`` is already set (the user's choice is kept) or when no
    runtime needs an ICD file. Must run before the first OpenCL call of the process (pyopencl's
    loader reads the variable once, when platforms are first listed)."""
    if EXPOSED.vendors_dir or EXPOSED.respected_user:
        return EXPOSED
    runtimes = installed_runtimes()
    EXPOSED.problems = tuple((r.name, r.problem) for r in runtimes if r.problem) + \
        tuple(_missing_libraries(_system_icds()))
    user = os.environ.get("OCL_ICD_VENDORS", "")
    if user:
        EXPOSED.respected_user = user
        return EXPOSED
    ours = {f"ember-{r.name}.icd": r.library for r in runtimes
            if r.library and not r.problem and r.name != "pocl"}     # pyopencl's loader finds its PoCL itself
    if not ours:
        return EXPOSED
    files = dict(_system_icds())
    known = set(files.values())
    files.update({n: lib for n, lib in ours.items() if lib not in known})
    d = _write_vendors_dir(files)
    if d:
        os.environ["OCL_ICD_VENDORS"] = d
        EXPOSED.vendors_dir = d
        EXPOSED.added = tuple(n[len("ember-"):-len(".icd")] for n in ours)
    return EXPOSED
