"""``python -m probe.sim serve …`` is ``probe sim serve …`` (without loading the rest of the CLI)."""

from probe.sim._cli import main

main()
