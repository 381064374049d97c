"""SimuMax's `simumax.core.perf_llm` names."""
from ..perf_llm import PerfLLM

__all__ = ["PerfLLM"]
