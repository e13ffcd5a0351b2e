"""The figures every bench script prints, computed one way."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as a report prints them."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1): a value that was measured, never interpolated."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
