"""A manager's moves between branches and strategies: fork, switch, set_strategy, and the branch a
derive makes.

:class:`Moves` is one part of a ``ContextManager``: it holds the manager's binding and its
background work. A move leaves the current branch (its drain stopped; an answer out is thrown
away), then, in one command of the target namespace's actor, checks the record again, rebinds,
claims the namespace for the manager's reader when unclaimed, records the strategy and starts it.
A refused move leaves the manager where it was, with its old strategy; once anything is written
the move completes, even if cancelled meanwhile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ..store._errors import BranchExistsError
from ..store._model import MISSING
from ..store._model_parts import fork_point
from ..strategies._base import STRATEGY_KEY
from ..strategies._recorded import strategy_record
from ._background import BackgroundWork
from ._binding import Binding
from ._commands import Move
from ._errors import ReaderClaimError, ReaderRecordError
from ._values import Derivation

if TYPE_CHECKING:
    from ..strategies._base import ContextStrategy
    from ._core import ManagerHandle

log = logging.getLogger("asides.actors")

__all__ = ["Moves"]


class Moves:
    """The moves of one manager (see the module docstring). ``owner`` is the manager: the runtime
    records which manager holds which strategy."""

    def __init__(self, binding: Binding, background: BackgroundWork, owner: ManagerHandle) -> None:
        self._binding = binding
        self._background = background
        self._owner = owner

    async def fork(self, name: str) -> None:
        """Make branch ``name`` (checked already, as the manager: the record check the child
        inherits, R4, R7) at the manager's head and move onto it."""
        binding = self._binding
        if binding.store.has_branch(name):
            raise BranchExistsError(name)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the fork completes
            await binding.store.create_branch(name, binding.branch)
            await self.move(name, binding.strategy, "fork")

    async def switch_branch(self, name: str) -> None:
        """Move to branch ``name`` (checked already, as the manager) and restart the strategy
        there."""
        binding = self._binding
        binding.store.branch_info(name)
        binding.core.actor(name, binding.namespace).check(binding.view_reader, "switch_branch")
        await self.move(name, binding.strategy, "switch_branch")

    async def move(self, branch: str, strategy: ContextStrategy, action: str) -> None:
        """Move to ``branch`` with ``strategy`` (see the module docstring)."""
        binding, background = self._binding, self._background
        binding.core.check_strategy_free(strategy, self._owner)
        await background.stop_drain()
        target = binding.core.actor(branch, binding.namespace)
        target.attach()  # held across the awaits below; the binding holds it itself once bound
        try:
            await target.send(Move(binding, branch, strategy, self._owner, action))
        finally:
            target.detach()
            background.start_drain()  # the new strategy's drain; refused or cancelled before anything moved, the old one resumes

    def derivation(self, branch: str, strategy: ContextStrategy, at_sequence: int | None) -> Derivation:
        """Where a derive onto the new ``branch`` (checked already, as the manager) would start,
        checked: refused when the strategy is held elsewhere, when the branch exists, or when an
        earlier record at the derivation point names another reader."""
        binding = self._binding
        binding.core.check_strategy_free(strategy)
        if binding.store.has_branch(branch):
            raise BranchExistsError(branch)
        at = fork_point(at_sequence, binding.store.head(binding.branch), binding.branch)
        inherited = binding.store.model.get_state_at(binding.branch, binding.actor.reader_key, at)
        if inherited is not MISSING and inherited != binding.view_reader:
            # an earlier record that is not this manager's reader (only foreign data can do this)
            if not isinstance(inherited, str) or not inherited:
                raise ReaderRecordError(namespace=binding.namespace, branch=binding.branch, record=inherited, action="derive")
            raise ReaderClaimError(
                namespace=binding.namespace, branch=binding.branch, recorded=inherited, requested=binding.view_reader, action="derive"
            )
        return Derivation(binding.branch, branch, at, binding.namespace)

    async def write_derived_branch(self, derivation: Derivation, strategy: ContextStrategy) -> None:
        """Write the derived branch: made at the derivation point, its metadata recording where it
        came from and the child's strategy (no state write of its own: R1, SPEC 3.3)."""
        meta = {"derivation": derivation.to_json(), STRATEGY_KEY: strategy_record(strategy)}
        await self._binding.store.create_branch(derivation.branch, derivation.parent_branch, derivation.at_sequence, meta=meta)
