"""AutobiographicalStrategy: old conversation becomes first-person memories in the agent's voice."""

from .records import Summary
from .sharding import split_text
from .strategy import AutobiographicalStrategy

__all__ = ["AutobiographicalStrategy", "Summary", "split_text"]
