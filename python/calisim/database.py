"""The efficiency database and the predictor (`calisim db query`, the predictor's fits)."""
import json
import os

from ._native import ConfigError, _core


class Database:
    """An efficiency database file (SQLite), opened read-only for each call."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise ConfigError(f"{self.path}: no such database file")

    def devices(self):
        """Device names, each followed by its aliases in parentheses."""
        return _core.database_devices(self.path)

    def _device(self, device):
        if device is not None:
            return device
        names = self.devices()
        if len(names) != 1:
            raise ConfigError(f"{self.path}: holds {len(names)} devices ({', '.join(names)}); name one with device=")
        return names[0].split(" (")[0]

    def query(self, key, device=None, nearest=0):
        """Rows for a kernel key on a device (name or alias; may be left out when the file holds one
        device), best first, as `calisim db query --json` prints them: dicts with "key", the row's
        numbers ("efficiency", "tflops", "median_s", ...), "run", "source", "host". nearest > 0:
        the nearest rows of the key's kind instead, each with "distance"."""
        return json.loads(_core.query_database(self.path, self._device(device), key, int(nearest)))

    def predict(self, key, device=None):
        """See calisim.predict."""
        return json.loads(_core.predict_efficiency(self.path, self._device(device), key))

    def __repr__(self):
        return f"Database({self.path!r})"


def predict(key, db, device=None):
    """Efficiency of one kernel key on a measured device: its own rows when the key was measured
    ("measured"), else its bandwidth fits or the predictor's fit of its measurements
    ("interpolated"); {"source": "roofline", "efficiency": 1.0} when the database has nothing for
    it. key: canonical text, e.g. "gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0".
    Returns {"key", "efficiency", "source"}."""
    return Database(db).predict(key, device)
