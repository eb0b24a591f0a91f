"""``python -m probe``: the same entry point as the ``probe`` console script."""

from probe.cli import main

main()
