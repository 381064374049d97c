"""Model, strategy and system configs as Python objects (SimuMax's config classes).

A config object holds the JSON document of its file (what the user wrote, in SimuMax / calisim
field names) and the file name that error messages cite. Attribute access reads a field of the
document; a field the document leaves out answers with the value the C++ parser gives it (its
default, or a derived value such as ``dp_size`` once PerfLLM has validated the three configs
together). Setting an attribute edits the document, so the next simulation sees it; the C++
parser validates it then, with the usual messages.
"""
import copy
import json
import os

from . import _native
from ._native import ConfigError, _core


class _Section:
    """A nested object of a config document (a system's ``device`` or ``network``), read and
    written through to the document."""

    def __init__(self, doc, parsed, owner):
        object.__setattr__(self, "_doc", doc)
        object.__setattr__(self, "_parsed", parsed if isinstance(parsed, dict) else {})
        object.__setattr__(self, "_owner", owner)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._doc:
            value = self._doc[name]
            return _Section(value, self._parsed.get(name), self._owner) if isinstance(value, dict) else value
        if name in self._parsed:
            return copy.deepcopy(self._parsed[name])
        raise AttributeError(f"no field '{name}' here (fields: {', '.join(sorted(set(self._doc) | set(self._parsed)))})")

    def __setattr__(self, name, value):
        self._doc[name] = value
        self._owner._changed()

    def __repr__(self):
        return repr(self._doc)

    def to_dict(self):
        return copy.deepcopy(self._doc)


class _Config:
    kind = ""
    # SimuMax attributes that are switches of its Python objects rather than file fields.
    _runtime_fields = ()
    # SimuMax attribute name -> calisim field name.
    _aliases = {}

    def __init__(self, doc=None, file="<dict>"):
        if doc is not None and not isinstance(doc, dict):
            raise ConfigError(f"{file}: (document): expected a JSON object, got {type(doc).__name__}")
        object.__setattr__(self, "_doc", copy.deepcopy(doc) if doc else {})
        object.__setattr__(self, "_file", os.fspath(file))
        object.__setattr__(self, "_parsed", None)
        object.__setattr__(self, "_runtime", {})

    # --- construction (SimuMax's names) ------------------------------------------------------
    @classmethod
    def init_from_config_file(cls, path):
        """Reads a config file (a path, or a shipped name such as "llama3-8b")."""
        file = _native.resolve_config(cls.kind, path)
        return cls(json.loads(_core.read_json_file(file)), file)

    @classmethod
    def init_from_dict(cls, doc, file="<dict>"):
        return cls(doc, file)

    @staticmethod
    def read_json_file(path):
        """The JSON document of a file as a dict (ConfigError with line and column on bad JSON)."""
        return json.loads(_core.read_json_file(os.fspath(path)))

    @classmethod
    def load(cls, spec):
        """A config from an instance (returned as is), a dict, a path or a shipped name."""
        if isinstance(spec, cls):
            return spec
        if isinstance(spec, dict):
            return cls(spec)
        if isinstance(spec, (str, os.PathLike)):
            return cls.init_from_config_file(spec)
        raise TypeError(f"{cls.kind} config: expected a {cls.__name__}, dict, path or shipped name, "
                        f"got {type(spec).__name__}")

    # --- fields ------------------------------------------------------------------------------
    @property
    def file(self):
        return self._file

    def parsed(self):
        """Every field as the C++ parser reads this document (defaults filled in)."""
        if self._parsed is None:
            view = json.loads(_core.resolve_config_doc(self.kind, _native.dumps(self._doc), self._file))
            object.__setattr__(self, "_parsed", view)
        return self._parsed

    def _set_parsed(self, view):
        object.__setattr__(self, "_parsed", view)

    def _changed(self):
        object.__setattr__(self, "_parsed", None)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._runtime_fields:
            return self._runtime.get(name)
        name = self._aliases.get(name, name)
        parsed = self.parsed()
        if name in self._doc:
            value = self._doc[name]
            return _Section(value, parsed.get(name), self) if isinstance(value, dict) else value
        if name in parsed:
            return copy.deepcopy(parsed[name])
        raise AttributeError(f"{self.kind} config {self._file} has no field '{name}' "
                             f"(fields: {', '.join(sorted(set(self._doc) | set(parsed)))})")

    def __setattr__(self, name, value):
        if name in self._runtime_fields:
            self._runtime[name] = value
            return
        self._doc[self._aliases.get(name, name)] = value
        self._changed()

    def __dir__(self):
        fields = set(self._doc)
        try:
            fields |= set(self.parsed())
        except ConfigError:
            pass
        return sorted(set(super().__dir__()) | fields | set(self._aliases))

    def to_dict(self):
        """The document (what a file with these settings would contain)."""
        return copy.deepcopy(self._doc)

    def copy(self):
        return type(self)(self._doc, self._file)

    def __str__(self):
        return json.dumps(self._doc, indent=2)

    def __repr__(self):
        return f"{type(self).__name__}({self._file!r})"


class ModelConfig(_Config):
    """A model file: SimuMax's field names (hidden_size, head_num, layer_num, ...)."""
    kind = "model"
    # SimuMax pads the vocabulary only when asked; calisim always pads it Megatron's way (to a
    # multiple of make_vocab_size_divisible_by x tp), so the switch is kept but changes nothing.
    _runtime_fields = ("padded_vocab_size",)


class StrategyConfig(_Config):
    """A strategy file: parallel layout, batching, recompute (SimuMax / Megatron names)."""
    kind = "strategy"


class SystemConfig(_Config):
    """A calisim system file (device, efficiencies, network); ``sys_name`` and ``num_per_node``
    are SimuMax's names for ``name`` and ``gpus_per_node``."""
    kind = "system"
    _aliases = {"sys_name": "name", "num_per_node": "gpus_per_node"}

    def __getattr__(self, name):
        if name == "gpus_per_node" and "gpus_per_node" not in self._doc:
            return self.parsed()["gpus_per_node"]
        return super().__getattr__(name)
