"""Block-decomposed data across processes: ``World``, ``Blocks``, ``Plan``, ``Routing``.

``World()`` is one process with no MPI; ``World(comm)`` spreads blocks over the
ranks of an mpi4py communicator (Tack imports mpi4py itself only to ask a
GPU-aware CUDA world's MPI library whether it takes device memory). Every
call is collective, results never depend on which rank holds which block,
and an inconsistency found on one rank raises on every rank. See
``docs/communication.md``.
"""

from .blocks import Blocks
from .plan import Plan
from .routing import Routing
from .world import World

__all__ = ["Blocks", "Plan", "Routing", "World"]
