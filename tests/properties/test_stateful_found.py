"""Runs the state machines found failing, replayed step by step as Hypothesis printed them (then
cut to the steps the failure needs), so each stays fixed whatever a random run draws."""

from __future__ import annotations

from asides.store._model_parts import AudienceBlock
from tests.properties.test_stateful import STEPS, CancellingMachine, _on_backend


def test_a_block_read_back_with_a_message_written_here_counts_it_once(store_path):
    """A view of a reader who sees none of three messages saw four hidden (and a negative
    length) on PostgreSQL: the block of messages that may name a reader was read back from the
    database between a write's commit and the process taking the commit in, and the message
    was then added to it again."""
    STEPS.update(checks=0, examples=0, cancelled=0)
    machine, _ = _on_backend(CancellingMachine, store_path)
    state = machine()
    try:
        state.holds()
        state.open_manager(
            branch_pick=7, chaos=["hang"], chunk=80, head=0, kind="autobiographical", namespace="agents/z", reader_pick="own", recent=0,
            settle=True,
        )
        state.holds()
        state.add_messages(batch=[("user", [4]), ("user", [3, 4, 5])], pick=3, settle=False)
        state.holds()
        state.cancel_midway(audiences=[7], checkpoints=2, op="fork", pick=19)
        state.holds()
        state.reopen()
        state.holds()
        state.open_manager(
            branch_pick=19, chaos=["asyncio-cancelled"], chunk=40, head=30, kind="autobiographical", namespace="agents/y",
            reader_pick=None, recent=40, settle=True,
        )
        state.holds()
        state.add_messages(batch=[("user", [7, 7]), ("carol", [7, 4, 4]), ("assistant", [7, 2])], pick=6, settle=True)
        state.holds()
    finally:
        state.teardown()


def test_an_audience_block_takes_each_message_once():
    block = AudienceBlock(loaded=True)
    for index in (3, 5, 5, 3, 4):
        block.add(index, None)
    assert list(block.indexes or ()) == [3, 4, 5] and block.counts == {None: 3}
