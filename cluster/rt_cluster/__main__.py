"""``python -m cluster.rt_cluster``: the same as the ``rt_cluster`` command."""

import sys

from .cli import main

sys.exit(main())
