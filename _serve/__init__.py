"""``asides serve``: a local, read-only web inspector of one store (docs/serve.md).

:func:`run_inspector` opens the store read-only (a SQLite file or a ``postgresql://`` URL; see
``_snapshots`` for how it follows a host's writes), serves the page and the JSON API under
``/api/`` with hypercorn under Trio, and calls ``on_ready`` with the URL (token included) once it
listens. It never writes to the store and never creates a file. Needs the ``serve`` extra
(Starlette and hypercorn).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["run_inspector"]


async def run_inspector(
    path: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8077,
    token: str,
    store_label: str,
    on_ready: Callable[[str], None],
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    poll_seconds: float = 0.25,
) -> None:
    """Serve the inspector of the store at ``path`` on ``host`` until ``shutdown_trigger``
    returns (or the task is cancelled); it answers only requests whose ``Host`` header names it
    (``_hosts.ServedHosts``). Raises what opening the store raises, and what binding raises (a
    port in use), before it listens. Refuses no ``host``: the CLI decides which it allows."""
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from ._app import make_app
    from ._data import warm
    from ._snapshots import Snapshots

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0
    async with Snapshots.open(path, poll_seconds=poll_seconds, warm=warm) as snapshots:
        app = make_app(snapshots, token, store_label=store_label, host=host)
        async with trio.open_nursery() as nursery:

            def listening(task_status: trio.TaskStatus[list[str]]) -> Awaitable[None]:
                return serve(app, config, shutdown_trigger=shutdown_trigger, task_status=task_status)  # type: ignore[arg-type]

            binds: list[str] = await nursery.start(listening)
            on_ready(f"{binds[0].rstrip('/')}/?token={token}")
