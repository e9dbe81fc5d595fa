from .coordinate_search import PRESETS
from .coordinate_search import CoordinateSearchSampler

__all__ = ["PRESETS", "CoordinateSearchSampler"]
