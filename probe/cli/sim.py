"""``probe sim``: the offline simulator's commands (implemented in probe.sim._cli)."""

from probe.sim._cli import app

__all__ = ["app"]
