"""``python -m probe.sim serve …`` is ``probe sim serve …``."""

import sys

from probe.cli import main

sys.argv = ["probe", "sim", *sys.argv[1:]]
main()
