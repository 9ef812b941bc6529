"""``python -m shardbudget.measure`` (and torchrun's ``-m shardbudget.measure``): see `command`."""

import sys

from .command import main

if __name__ == "__main__":
    sys.exit(main())
