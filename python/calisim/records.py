"""Result objects: attribute access over the JSON documents the C++ core returns.

Record wraps one JSON object: ``r.cost.mfu`` or ``r["cost"]["mfu"]``, ``r.to_dict()`` for a
plain deep copy. Result is SimuMax's result type (``.data`` holds the dict). Conversion to a
pandas DataFrame works when pandas is installed and raises ImportError otherwise; nothing else
needs pandas.
"""
import copy
import json


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _pandas():
    try:
        import pandas
    except ImportError as e:
        raise ImportError("to_dataframe() needs pandas (Debian: apt-get install python3-pandas); "
                          "everything else in calisim works without it") from e
    return pandas


def flatten(doc, prefix=""):
    """Scalars of nested objects with dotted names ({"cost": {"mfu": x}} -> {"cost.mfu": x});
    lists are left out."""
    out = {}
    for key, value in doc.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif not isinstance(value, list):
            out[name] = value
    return out


class Record:
    """Read-only attribute view of a JSON object; nested objects are Records too."""
    __slots__ = ("_data",)

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"no field '{name}' (fields: {', '.join(self._data)})") from None

    def __setattr__(self, name, value):
        raise AttributeError("results are read-only; use to_dict() for a copy")

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __eq__(self, other):
        return isinstance(other, Record) and self._data == other._data

    def __dir__(self):
        return sorted(set(self._data) | {"to_dict", "keys", "items", "get", "fields"})

    def keys(self):
        return self._data.keys()

    def items(self):
        return ((k, _wrap(v)) for k, v in self._data.items())

    def get(self, key, default=None):
        return _wrap(self._data[key]) if key in self._data else default

    def fields(self):
        """Field names, like dataclasses.fields() gives for a dataclass."""
        return list(self._data)

    def to_dict(self):
        return copy.deepcopy(self._data)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(self._data)})"

    def __str__(self):
        return json.dumps(self._data, indent=2)


class SimulationResult(Record):
    """One simulation: the fields of `calisim simulate --json` (docs/simulator.md), plus
    ``trace`` (the Chrome/Perfetto trace dict) when one was requested."""
    __slots__ = ("trace",)

    def __init__(self, data, trace=None):
        super().__init__(data)
        object.__setattr__(self, "trace", trace)

    def to_dataframe(self, table=None):
        """pandas DataFrame: one row of every scalar (dotted names) when table is None, else one
        row per entry of "stages" (memory flattened) or "ops"."""
        pd = _pandas()
        if table is None:
            return pd.DataFrame([flatten(self._data)])
        if table not in ("stages", "ops"):
            raise ValueError(f"table must be None, 'stages' or 'ops', got {table!r}")
        return pd.DataFrame([flatten(row) for row in self._data[table]])


class SearchResult(Record):
    """A strategy search: the fields of `calisim search --json` for the same inputs (the tests
    compare them): "top", "counts", "explanation", "warnings", "feasible" (every feasible
    candidate with keep_all=True, else None, as the CLI's null) and "smallest" (the legal layout
    needing the least memory when nothing fits, else None)."""
    __slots__ = ()

    def to_dataframe(self, which="top"):
        """pandas DataFrame of the "top" (default) or "feasible" candidates (keep_all=True)."""
        if which not in ("top", "feasible"):
            raise ValueError(f"which must be 'top' or 'feasible', got {which!r}")
        if self._data[which] is None:
            raise ValueError("no feasible list in this result: search(..., keep_all=True) asks for one")
        return _pandas().DataFrame(self._data[which])


class ValidationResult(Record):
    """A validation against measured runs: the fields of `calisim validate --json` ("rows",
    "summary", "fit" when a fit was asked for, "components" when the step's parts were;
    docs/validation.md)."""
    __slots__ = ()

    def to_dataframe(self, which="rows"):
        """pandas DataFrame of the "rows" (default; nested fields dotted, lists left out) or of the
        fitted rows ("fit": one row per fitted run, its system added), or of the rows of the step-part
        fit ("components": one row per run, its system added)."""
        pd = _pandas()
        if which == "rows":
            return pd.DataFrame([flatten(r) for r in self._data["rows"]])
        if which == "fit":
            if "fit" not in self._data:
                raise ValueError("no fit in this result: validate(..., fit_system=...) asks for one")
            return pd.DataFrame([dict(row, system=s["system"]) for s in self._data["fit"]["systems"]
                                 for row in s["per_row"]])
        if which == "components":
            if "components" not in self._data:
                raise ValueError("no step-part fit in this result: validate(..., components=True) asks for one")
            return pd.DataFrame([dict(row, system=s["system"]) for s in self._data["components"]["systems"]
                                 for row in s["per_row"]])
        raise ValueError(f"which must be 'rows', 'fit' or 'components', got {which!r}")


class Result:
    """SimuMax's result type: a dict in ``.data``, indexable, printable, ``to_dict()``."""

    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        return self.data[key]

    def __contains__(self, key):
        return key in self.data

    def get(self, key, default=None):
        return self.data.get(key, default)

    def to_dict(self):
        return copy.deepcopy(self.data)

    def to_dataframe(self):
        """pandas DataFrame: one row (per stage for a multi-stage memory result)."""
        pd = _pandas()
        if all(isinstance(v, dict) for v in self.data.values()):
            return pd.DataFrame({k: flatten(v) for k, v in self.data.items()}).T
        return pd.DataFrame([flatten(self.data)])

    def __str__(self):
        return json.dumps(self.data, indent=2)

    __repr__ = __str__
