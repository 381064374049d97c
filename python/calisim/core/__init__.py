"""SimuMax's module layout (simumax.core.config, simumax.core.perf_llm), so that a SimuMax script
runs after replacing `simumax` with `calisim` in its imports."""
