"""calisim: calibrated LLM-training performance simulator (Python API).

SimuMax's interface (PerfLLM, ModelConfig, StrategyConfig, SystemConfig; also importable as
calisim.core.perf_llm / calisim.core.config) and calisim's functions: simulate, search, validate,
Database, predict, import_megatron, import_kineto, import_nsys. Bad input raises ConfigError (a
ValueError) with the CLI's message.
See docs/python.md.
"""
from ._native import ConfigError, config_root, list_configs, resolve_config
from .api import NoFeasibleLayout, import_kineto, import_megatron, import_nsys, search, simulate, validate
from .configs import ModelConfig, StrategyConfig, SystemConfig
from .database import Database, predict
from .perf_llm import PerfLLM
from .records import Record, Result, SearchResult, SimulationResult, ValidationResult

__version__ = "0.1.0"

__all__ = ["ConfigError", "Database", "ModelConfig", "NoFeasibleLayout", "PerfLLM", "Record", "Result",
           "SearchResult", "SimulationResult", "StrategyConfig", "SystemConfig", "ValidationResult", "config_root",
           "import_kineto", "import_megatron", "import_nsys", "list_configs", "predict", "resolve_config", "search",
           "simulate", "validate"]
