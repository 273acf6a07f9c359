"""AutobiographicalStrategy: old conversation becomes first-person memories (SPEC C3)."""

from .records import Summary
from .strategy import AutobiographicalStrategy, split_text

__all__ = ["AutobiographicalStrategy", "Summary", "split_text"]
