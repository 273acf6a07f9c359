"""What the parts of ``ContextManager`` (its edits, reads and compiles, background work, branch moves) share: the
attributes the manager holds and the methods each part calls on the others, declared once."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..store._blocks import ContentBlock
    from ..store._store import Store
    from ..store._views import MessageView, ViewFilter
    from ..strategies._base import ContextStrategy, StrategyContext
    from ..strategies._models import Model
    from ._compiled import AssemblyCache
    from ._core import RuntimeCore
    from ._drains import Drain
    from ._manager import Derivation
    from ._namespace import NamespaceActor

__all__ = ["ManagerParts"]


class ManagerParts:
    """Declarations only (for the type checker); ``ContextManager`` provides all of it."""

    # What the manager (``ContextManager``) holds; this part reads and changes it.
    _core: RuntimeCore
    _store: Store
    _namespace: str
    _strategy: ContextStrategy
    _reader: str | None
    _filter: ViewFilter | None
    _branch: str
    _model: Model | None
    _derivation: Derivation | None
    _actor: NamespaceActor
    _view: MessageView
    _closed: bool
    _started: bool
    _start_error: BaseException | None
    _epoch: int
    _drain: Drain | None
    _answers: int
    _assembly: AssemblyCache
    _last_disclosed: str | None

    if TYPE_CHECKING:

        @property
        def model(self) -> Model | None: ...

        @property
        def strategy_name(self) -> str: ...

        def _check(self, action: str, *, started: bool = True) -> None: ...

        def _estimator(self) -> Callable[[Sequence[ContentBlock]], int]: ...

        def _context(
            self, *, preview: bool = False, strategy: ContextStrategy | None = None, view: MessageView | None = None
        ) -> StrategyContext: ...

        async def _catch_up(self) -> StrategyContext | None: ...

        async def _start(self, action: str) -> None: ...
        async def _record_strategy(self) -> None: ...

        def _detach(self) -> None: ...

        def _make_view(self, branch: str) -> MessageView: ...

        def _hold(self, actor: NamespaceActor) -> None: ...

        def _start_drain(self) -> None: ...

        async def _stop_drain(self) -> None: ...
