"""The efficiency database and the predictor (`calisim db query`, the predictor's fits)."""
import json
import os

from ._native import ConfigError, _core


class Database:
    """An efficiency database file (SQLite), opened for each call: read-only, except predict_gpus,
    which writes its predicted rows (into out= when given)."""

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

    def predict_gpus(self, targets, sources=None, out=None, op_dispatch_us=None):
        """Rows for GPUs nobody measured, scaled from devices measured in this file (`calisim predict
        --from SOURCES --to TARGETS --json`, docs/predictor.md): one run of predicted rows per
        target system written into `out` (default: this file), for simulate / search / validate
        with db=. targets: a shipped system name or system .json path, or a list of them; sources:
        a device name (or alias) or a list, None = the file's only device. Every target is read
        before anything is written. Returns a list of dicts, one per target: "target" (its
        device name), "database", "run", "rows", "notes", "families" (per family "rows",
        "mean_source_efficiency", "mean_efficiency"), "warnings". Raises ConfigError naming
        --from / --to / the file for what the caller can fix."""
        def joined(value, what):
            items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
            if not items:
                raise ConfigError(f"predict_gpus: {what}: an empty list predicts nothing")
            return ",".join(os.fspath(v) for v in items)
        source_list = self._device(None) if sources is None else joined(sources, "sources")
        return json.loads(_core.predict_gpus(self.path, source_list, joined(targets, "targets"),
                                             os.fspath(out or ""), None if op_dispatch_us is None
                                             else float(op_dispatch_us)))

    def __repr__(self):
        return f"Database({self.path!r})"


def predict(key, db, device=None):
    """Efficiency of one kernel key on a measured device: its own rows when the key was measured
    ("measured"), else its bandwidth fits or the predictor's fit of its measurements
    ("interpolated"); {"source": "roofline", "efficiency": 1.0} when the database has nothing for
    it. key: canonical text, e.g. "gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0".
    Returns {"key", "efficiency", "source"}."""
    return Database(db).predict(key, device)
