"""``asides.lowlevel``: the names for strategy authors and store-level code, as ``trio.lowlevel``.

A host needs none of these: ``import asides`` gives the runtime, managers, content, models and
errors. Writing a strategy of your own, you get a :class:`StrategyContext` on every call (its
``view`` a :class:`MessageView`, its ``state`` a :class:`StrategyState`) and return a
:class:`Selection`; the optional capabilities are the small protocols below, and
:class:`NoBackgroundWork` is a base for a strategy with no background work. A strategy whose
background work asks a model may plan its units as values (:class:`PlansUnits`: a
:class:`UnitPlan` per unit, a :class:`Judgement` per answer) and leave every effect to the
runtime, which then keeps serving compiles while a request is out. Code that works on a
store itself (tools, importers, the CLI) uses :func:`open_store` (which gives a :class:`Store`; a
store file's is a :class:`SqliteStore`), the JSON codecs of content, and the reader-view
functions.

Every name here has this module as its one public home (its ``__module__``). The ones ``asides``
or a layer package (``asides.store``, ``asides.strategies``) exported before still import from
there, as the same objects, with an ``AsidesDeprecationWarning`` naming this module; the JSON
codecs of content and ``StrategyContext`` and ``Selection`` stay in their layer packages without
one, where the specification puts them.
"""

from ._public import home_names
from .actors._core import RuntimeStatistics
from .actors._namespace import ActorStatistics
from .actors._store_access import IntegrationRecords
from .store._blocks import (
    UnreadableBlock,
    block_from_json,
    block_to_json,
    check_content,
    coerce_content,
    content_from_json,
    content_to_json,
    has_audience,
)
from .store._open import open_store
from .store._reader import StoreReader
from .store._sqlite import SqliteStore
from .store._store import Store, StoreStatistics
from .store._views import MessageView, reader_body, reader_view
from .strategies._base import Selection, SelectOptions, StrategyContext, StrategyState
from .strategies._capabilities import (
    DescribesPendingWork,
    FollowsStoredState,
    HasEstimator,
    HasHeadWindow,
    ReadsSummaries,
    ReportsFailedUnits,
    ShardsMessages,
)
from .strategies._passthrough import NoBackgroundWork
from .strategies._tokens import default_estimate, estimate_text
from .strategies._units import Judgement, PlansTransitions, PlansUnits, UnitPlan, performs_plans, run_planned_unit

__all__ = [
    # what a strategy is handed and returns
    "MessageView",
    "SelectOptions",
    "Selection",
    "StrategyContext",
    "StrategyState",
    # the optional capabilities of a strategy
    "DescribesPendingWork",
    "FollowsStoredState",
    "HasEstimator",
    "HasHeadWindow",
    "NoBackgroundWork",
    "ReadsSummaries",
    "ReportsFailedUnits",
    "ShardsMessages",
    # the unit protocol: background work planned as values, performed by the runtime
    "Judgement",
    "PlansTransitions",
    "PlansUnits",
    "UnitPlan",
    "performs_plans",
    "run_planned_unit",
    # token estimates
    "default_estimate",
    "estimate_text",
    # the store, and content as the store keeps it
    "SqliteStore",
    "Store",
    "StoreReader",
    "IntegrationRecords",
    "UnreadableBlock",
    "block_from_json",
    "block_to_json",
    "check_content",
    "coerce_content",
    "content_from_json",
    "content_to_json",
    "has_audience",
    "open_store",
    "reader_body",
    "reader_view",
    # snapshots of what a runtime, its namespace actors and a store count
    "ActorStatistics",
    "RuntimeStatistics",
    "StoreStatistics",
]

home_names(__name__, __all__, globals())
