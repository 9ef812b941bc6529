"""``python -m shardbudget.measure`` (and torchrun's ``-m shardbudget.measure``): see `harness.command`."""

import sys

from .harness.command import main

if __name__ == "__main__":
    sys.exit(main())
