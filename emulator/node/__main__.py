"""``python -m rmqemu.emulator.node RUN_DIR NODE``: see :mod:`emulator.node.main`."""

import sys

from rmqemu.emulator.node.main import main

sys.exit(main(sys.argv[1:]))
