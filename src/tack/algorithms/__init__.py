"""Parallel algorithms built from Tack kernels: scans, reductions, radix sort,
histogram, stream compaction.

Every function launches on its first array argument's device and refuses
arrays in two memory domains with its own name. Work is split into chunks of
a fixed size, so results (float sums included) do not depend on the number
of threads.
"""

from .compact import compact
from .histogram import histogram
from .reduce import max, min, sum
from .scan import exclusive_scan, inclusive_scan
from .sort import radix_sort_pairs

__all__ = ["exclusive_scan", "inclusive_scan", "sum", "min", "max",
           "radix_sort_pairs", "histogram", "compact"]
