"""SimuMax's `simumax.core.config` names."""
from ..configs import ModelConfig, StrategyConfig, SystemConfig

__all__ = ["ModelConfig", "StrategyConfig", "SystemConfig"]
