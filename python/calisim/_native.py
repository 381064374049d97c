"""The C++ extension and the error type it raises.

calisim._core speaks JSON text; this module holds the few helpers every other module uses to
call it. ConfigError (a ValueError) carries the message the CLI prints for the same bad input
(file, JSON path, what was expected) and the parts as .file, .where and .problem.
"""
import json
import os

from . import _core

ConfigError = _core.ConfigError


def dumps(doc):
    """JSON text of a config document or request, as the C++ side reads it."""
    return json.dumps(doc, allow_nan=False)


def _bundled_configs():
    """configs/ installed beside the package by `cmake --install ... --component python`."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
    return path if os.path.isdir(path) else None


def config_root():
    """Where shipped names are looked up: $CALISIM_CONFIG_DIR, the installed copy, else the
    source tree the module was built from."""
    env = os.environ.get("CALISIM_CONFIG_DIR")
    if env and os.path.isdir(env):
        return env
    return _bundled_configs() or _core.config_root()


def _kind(kind):
    """The singular kind of "model"/"models", "strategy"/"strategies", "system"/"systems" (as
    `calisim configs list` takes them); ValueError naming the valid kinds otherwise."""
    for one, folder in _KIND_DIRS.items():
        if kind in (one, folder):
            return one
    raise ValueError(f"config kind must be model(s), strategy/strategies or system(s), got {kind!r}")


def resolve_config(kind, name_or_path):
    """Path of a config: a name with '/' or ending in .json is a path; anything else is a shipped
    name (kind: "model", "strategy" or "system", or the plural). ConfigError names the shipped
    configs when the name is unknown, exactly as the CLI does; ValueError for an unknown kind."""
    kind = _kind(kind)
    name = os.fspath(name_or_path)
    bundled = _bundled_configs()
    is_path = "/" in name or name.endswith(".json")
    if bundled and not is_path and not os.environ.get("CALISIM_CONFIG_DIR"):
        candidate = os.path.join(bundled, _KIND_DIRS[kind], name + ".json")
        if os.path.exists(candidate):
            return candidate
    return _core.resolve_config(kind, name)


def list_configs(kind):
    """Shipped config names of one kind ("model", "strategy" or "system", or the plural: "models",
    "strategies", "systems"), sorted. ValueError naming the valid kinds for any other."""
    kind = _kind(kind)
    root = config_root()
    folder = os.path.join(root, _KIND_DIRS[kind])
    if root == _core.config_root() or not os.path.isdir(folder):
        return _core.list_configs(kind)
    return sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json"))


_KIND_DIRS = {"model": "models", "strategy": "strategies", "system": "systems"}
