"""ember.hub: the cached side of torch.hub, without network access.

ember downloads nothing: ``load_state_dict_from_url`` loads the file only when it is already in
the hub cache (``<get_dir()>/checkpoints/<file name>``, or ``model_dir``), with ``ember.load``;
``load`` runs a repository's ``hubconf.py`` from a local directory (``source="local"``) or, as
``list`` and ``help``, from a GitHub repository already in the cache (``<get_dir()>/<owner>_<name>_<ref>``,
the layout torch.hub uses). Anything else is RuntimeError naming the path where the file is
expected, so that it can be put there by hand. ``get_dir()`` is ``$EMBER_HOME/hub``, with
``$EMBER_HOME`` defaulting to ``$XDG_CACHE_HOME/ember`` (``~/.cache/ember``); ``set_dir`` changes it.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from urllib.parse import urlparse

__all__ = ["get_dir", "set_dir", "load_state_dict_from_url", "load", "list", "help", "download_url_to_file"]

_hub_dir = None
_list = list


def get_dir() -> str:
    """The hub cache directory (see the module docstring; matches torch.hub.get_dir)."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.path.expanduser(os.getenv("EMBER_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"),
                                                                     "ember")))
    return os.path.join(home, "hub")


def set_dir(d) -> None:
    """Use directory ``d`` as the hub cache (matches torch.hub.set_dir)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _no_network(what, path):
    return RuntimeError(f"ember.hub does not download ({what}): nothing is cached at '{path}'. Download the file "
                        f"yourself and place it there, or load it with ember.load.")


def download_url_to_file(url, dst, hash_prefix=None, progress=True) -> None:
    """RuntimeError: ember.hub has no network access (torch.hub.download_url_to_file's place)."""
    raise _no_network(url, dst)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=False):
    """The object saved at ``url``, read from the hub cache with ``ember.load`` (matches
    torch.hub.load_state_dict_from_url, whose cache layout it uses: ``model_dir`` or
    ``<get_dir()>/checkpoints``, under ``file_name`` or the URL's last path component).
    ``map_location`` and ``weights_only`` go to ``ember.load``; ``progress`` and ``check_hash``
    only concern a download, which ember never makes. RuntimeError when the file is not cached."""
    model_dir = os.fspath(model_dir) if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.isfile(cached):
        raise _no_network(url, cached)
    from .serialization import load as _load
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _repo_dir(repo_or_dir, source):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        if not os.path.isdir(repo_or_dir):
            raise FileNotFoundError(f"No such directory: '{repo_or_dir}'")
        return repo_or_dir
    info, _, ref = repo_or_dir.partition(":")
    if not re.fullmatch(r"[^/\s]+/[^/\s]+", info):
        raise ValueError(f"Invalid GitHub repository '{repo_or_dir}': expected 'owner/name[:ref]'")
    owner, name = info.split("/")
    refs = (ref,) if ref else ("main", "master")
    for r in refs:
        path = os.path.join(get_dir(), f"{owner}_{name}_{r.replace('/', '_')}")
        if os.path.isdir(path):
            return path
    raise _no_network(f"github repository {repo_or_dir}", os.path.join(get_dir(), f"{owner}_{name}_{refs[0]}"))


def _hubconf(repo_dir):
    path = os.path.join(repo_dir, "hubconf.py")
    if not os.path.isfile(path):
        raise RuntimeError(f"Cannot find hubconf.py in '{repo_dir}'")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)            # hubconf.py imports its repository's modules, as in torch.hub
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(repo_dir)
    return mod


def _entry(mod, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    fn = getattr(mod, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True):  # noqa: A001
    """The entry points of a cached GitHub repository's hubconf.py, 'owner/name[:ref]' (matches
    torch.hub.list; RuntimeError when the repository is not cached)."""
    mod = _hubconf(_repo_dir(github, "github"))
    return [f for f in dir(mod) if callable(getattr(mod, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check"):  # noqa: A001
    """The docstring of entry point ``model`` of a cached GitHub repository (matches torch.hub.help)."""
    return _entry(_hubconf(_repo_dir(github, "github")), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """``model(*args, **kwargs)`` from the repository's hubconf.py: a local directory
    (``source="local"``) or a GitHub repository already in the hub cache (matches torch.hub.load,
    without downloading; RuntimeError when the repository is not cached)."""
    return _entry(_hubconf(_repo_dir(repo_or_dir, source)), model)(*args, **kwargs)
