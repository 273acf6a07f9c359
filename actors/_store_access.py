"""The narrow, checked handle through which code building on asides keeps records of its own
in a runtime's store (:class:`IntegrationRecords`).

``Runtime.store`` reads only (``asides.lowlevel.StoreReader``): the actors are the one writer of
a runtime's store, which keeps a namespace's reader record, narrowing floor and claim checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ._records import own_record

if TYPE_CHECKING:
    from ..store._model import BranchInfo
    from ..store._store import Store

__all__ = ["IntegrationRecords", "check_records_prefix"]


def check_records_prefix(prefix: object) -> str:
    """``prefix`` as the key prefix of an integration's records: a non-empty string of non-empty
    ``/``-separated segments. Refuses anything else with an ``AsidesError`` at ``prefix``."""
    if not isinstance(prefix, str):
        raise ArgumentTypeError("prefix", f"a records prefix is a string, not {type(prefix).__name__}")
    if not prefix or any(not segment for segment in prefix.split("/")):
        raise InvalidArgumentError("prefix", f"a records prefix is non-empty '/'-separated segments, none empty; not {prefix!r}")
    return prefix


class IntegrationRecords:
    """A handle for code building on asides that keeps records of its own beside a runtime's
    namespaces (``Runtime.integration_records``): it writes state records only under
    ``<prefix>/``, never a namespace's own record (a reader, a narrowing floor, a strategy record,
    a context entry: refused with ``InvalidArgumentError`` at ``records``, and nothing is written),
    and makes branches. Reads go through ``Runtime.store``."""

    __slots__ = ("__store", "__prefix")

    def __init__(self, store: Store, prefix: str) -> None:
        self.__store = store
        self.__prefix = check_records_prefix(prefix)

    def __repr__(self) -> str:
        return f"<IntegrationRecords {self.__prefix!r}>"

    @property
    def prefix(self) -> str:
        """What every key this handle writes starts with (followed by ``/``)."""
        return self.__prefix

    def _check_keys(self, records: object) -> Mapping[str, Any]:
        if not isinstance(records, Mapping):
            raise ArgumentTypeError("records", f"records are a mapping of keys to values, not {type(records).__name__}")
        start = f"{self.__prefix}/"
        for key in records:
            if not isinstance(key, str) or not key.startswith(start) or len(key) == len(start):
                raise InvalidArgumentError("records", f"the key {key!r} is not under this handle's prefix {start!r}")
            found = own_record(key)
            if found is not None:
                owner, tail = found
                raise InvalidArgumentError(
                    "records", f"the key {key!r} is {tail!r} of namespace {owner!r}, a namespace's own record, which only its actor writes"
                )
        return records

    async def set_states(self, branch: str, records: Mapping[str, Any]) -> int:
        """Write ``records`` (keys under ``<prefix>/``, JSON values) on ``branch`` in one commit;
        returns the branch head after it. Refused as a whole, nothing written, when one key is not
        under the prefix or is a namespace's own record, or the store refuses the write."""
        return await self.__store.set_states(branch, self._check_keys(records))

    async def create_branch(
        self, name: str, parent: str, at_sequence: int | None = None, *, meta: Mapping[str, Any] | None = None
    ) -> BranchInfo:
        """Fork ``name`` from ``parent`` at ``at_sequence`` (default: the parent's head), keeping
        ``meta`` (a JSON object) with it, as ``Store.create_branch``; refused with
        ``BranchExistsError`` when the name is taken."""
        return await self.__store.create_branch(name, parent, at_sequence, meta=meta)
