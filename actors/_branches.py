"""A manager's moves between branches and strategies: fork, switch, set_strategy and derive
(part of ``ContextManager``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import anyio

from ..store._errors import BranchExistsError
from ..store._model import MISSING
from ..store._model_parts import fork_point
from ..store._names import check_branch
from ..strategies._base import STRATEGY_KEY, check_marks_reads
from ..strategies._recorded import strategy_record
from ._errors import ReaderClaimError, ReaderRecordError
from ._manager_parts import ManagerParts
from ._protocol import Move

if TYPE_CHECKING:
    from ..strategies._base import ContextStrategy
    from ._manager import ContextManager, Derivation

log = logging.getLogger("asides.actors")

__all__ = ["BranchMoves"]


class BranchMoves(ManagerParts):
    """Branch moves of a :class:`~asides.actors.ContextManager`."""

    # -- branches ------------------------------------------------------------------------------

    async def fork(self, name: str) -> None:
        """Make branch ``name`` at this manager's head and move this manager onto it (only this
        one). Refused before the branch is made when the namespace's record names
        another reader, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._check("fork")  # the record check here is the one the child inherits (R4, R7)
        if self._store.has_branch(check_branch(name)):
            raise BranchExistsError(name)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the fork completes
            await self._store.create_branch(name, self._branch)
            await self._move(name, self._strategy, "fork")

    async def switch_branch(self, name: str) -> None:
        """Move this manager (only this one) to branch ``name`` and restart its strategy
        there. Refused, leaving the manager where it was, when the namespace records another
        reader there, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._check("switch_branch", started=False)
        self._store.branch_info(check_branch(name))
        self._core.actor(name, self._namespace).check(self._reader, "switch_branch")
        await self._move(name, self._strategy, "switch_branch")

    async def set_strategy(self, strategy: ContextStrategy) -> None:
        """Replace the strategy and start it here. Refused, keeping the old strategy running, when
        this manager may not work here or the new strategy does not mark its compression reads
        under a reader (R1, R2, R4, R7, N7)."""
        self._check("set_strategy", started=False)
        check_marks_reads(self._reader, strategy, "set_strategy")
        await self._move(self._branch, strategy, "set_strategy")

    async def _move(self, branch: str, strategy: ContextStrategy, action: str) -> None:
        """Leave the current branch (cancelling drains; an in-flight answer is discarded), bind to
        ``branch``, claim it if this manager has a reader and it is unclaimed, start ``strategy``.

        The record is checked again, and the claim made, in the target actor's turn and before
        anything is rebound, so a claim that lands while the drain stops still leaves a refused
        call with the manager where it was and its old strategy. Once anything is
        written the move completes, even if cancelled meanwhile."""
        me = cast("ContextManager", self)
        self._core.check_strategy_free(strategy, me)
        await self._stop_drain()
        target = self._core.actor(branch, self._namespace)
        target.attach()  # held across the awaits below; the manager holds it itself once bound
        moved = False

        async def in_the_actor() -> None:
            nonlocal moved
            target.check(self._reader, action)  # no await before the claim below: it cannot fail
            with anyio.CancelScope(shield=True):
                moved = True
                self._epoch += 1
                self._detach()
                self._branch = branch
                self._actor = target
                if not self._closed:  # closed meanwhile: it holds no actor any more
                    self._hold(target)
                self._view = self._make_view(branch)
                self._strategy = strategy
                self._started = False
                self._core.hold_strategy(strategy, me)
                if self._reader is not None:
                    await target.claim(self._reader, action)
                await self._record_strategy()
                await self._start(action)

        try:
            await target.execute(Move(), in_the_actor)
        finally:
            target.detach()
            if not moved:
                self._start_drain()  # refused or cancelled before anything moved: the old drain resumes

    async def derive(self, *, branch: str, strategy: ContextStrategy, at_sequence: int | None = None) -> ContextManager:
        """A new manager of this namespace on a new child branch made from this manager's head (or
        from ``at_sequence``). The child records and compiles for the reader this manager compiles
        for. Refused before the child's branch is written when this manager is closed or
        its strategy failed to start (D4), when the record is not a reader's name (R7), or when
        the strategy does not mark its compression reads under a reader (N7)."""
        self._check("derive")
        check_marks_reads(self._reader, strategy, "derive")
        self._core.check_strategy_free(strategy)
        if self._store.has_branch(check_branch(branch)):
            raise BranchExistsError(branch)
        at = fork_point(at_sequence, self._store.head(self._branch), self._branch)
        inherited = self._store.model.get_state_at(self._branch, self._actor.reader_key, at)
        if inherited is not MISSING and inherited != self._reader:
            # an earlier record that is not this manager's reader (only foreign data can do this)
            if not isinstance(inherited, str) or not inherited:
                raise ReaderRecordError(namespace=self._namespace, branch=self._branch, record=inherited, action="derive")
            raise ReaderClaimError(
                namespace=self._namespace, branch=self._branch, recorded=inherited, requested=self._reader, action="derive"
            )
        from ._manager import Derivation  # the manager module imports this one

        derivation = Derivation(self._branch, branch, at, self._namespace)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the derive completes
            # the child's strategy is recorded in the branch it makes (no write of its own: R1, 3.3)
            meta = {"derivation": derivation.to_json(), STRATEGY_KEY: strategy_record(strategy)}
            await self._store.create_branch(branch, self._branch, at, meta=meta)
            child = await self._start_child(strategy, branch, derivation)
        return child

    async def _start_child(self, strategy: ContextStrategy, branch: str, derivation: Derivation) -> ContextManager:
        from ._manager import open_context_manager  # the manager module imports this one

        return await open_context_manager(
            self._core,
            namespace=self._namespace,
            strategy=strategy,
            reader=self._reader,
            view_filter=self._filter,
            branch=branch,
            model=self._model,
            claim=self._reader,
            action="derive",
            derivation=derivation,
        )

