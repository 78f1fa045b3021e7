"""gdn-parity-jax: the JAX front end of gdn-parity.

Runs a Gated DeltaNet implementation (the stock function on one device, its
context-parallel form under shard_map on meshes of real JAX devices),
captures every result into a schema-v1 fixture, and lets the C tools judge
it against the MPFR oracle.  Command line: ``gdn-parity-jax run``; in pytest:
:func:`assert_gdn_parity`.  Importing the package does not import jax.
"""

from .common import VERSION as __version__
from .pytest_helper import assert_gdn_parity

__all__ = ["__version__", "assert_gdn_parity"]
