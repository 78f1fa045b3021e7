"""python -m gdn_parity_jax: the gdn-parity-jax command."""

import sys

from .cli import main

sys.exit(main())
