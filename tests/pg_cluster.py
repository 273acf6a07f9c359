"""A throwaway PostgreSQL cluster for the tests: a data folder and a Unix socket in one temporary
folder, no TCP port, started once per test session and removed afterwards.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system user
(``.ci/postgres`` installs PostgreSQL and creates that user when they are missing).

The tests' cluster runs with ``fsync = off``: stores commit with the server's
``synchronous_commit`` (``on``) by default, and no test crashes the machine, so waiting for the
disk on every commit of every test would buy nothing (on a virtual disk it cost 1 to 4 ms a
commit). ``Cluster.start()`` keeps ``fsync`` on, as ``python -m benchmarks postgres`` measures it.

``ASIDES_TEST_POSTGRES_URL`` points the tests at a server of your own instead (its database must
let the user create schemas). Each test gets a fresh schema of its own (:meth:`Cluster.fresh_url`); tests/conftest.py imports
the fixtures ``pg_cluster_fixture`` and ``pg_url_fixture`` (pytest knows them as ``pg_cluster`` and ``pg_url``) for every module,
and its ``store_path`` runs a test on both backends.
``python -m benchmarks postgres`` starts its server with :class:`Cluster` too (it loads this file
by path, and needs no pytest).

Run as a script for a cluster outside pytest::

    python tests/pg_cluster.py start    # prints the URL (stdout) and how to stop it (stderr); leaves it running
    python tests/pg_cluster.py stop DIR
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import uuid

try:
    import pytest
except ImportError:  # benchmarks/postgres.py loads this file for Cluster alone; the bench extra has no pytest
    pytest = None

__all__ = ["Cluster", "find_binaries", "pg_cluster_fixture", "pg_url_fixture", "why_unavailable", "with_search_path"]

ENV_URL = "ASIDES_TEST_POSTGRES_URL"


def find_binaries() -> str | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or ``None``."""
    candidates = [os.path.dirname(p) for p in (shutil.which("pg_ctl"),) if p]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if all(os.access(os.path.join(folder, name), os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def why_unavailable() -> str | None:
    """Why no throwaway cluster can be started here, or ``None`` when one can."""
    if os.environ.get(ENV_URL):
        return None
    if find_binaries() is None:
        return "PostgreSQL is not installed (run .ci/postgres, or set ASIDES_TEST_POSTGRES_URL)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'asides[postgres]')"
    if _as_root():
        if subprocess.run(["id", "-u", "postgres"], capture_output=True).returncode != 0:
            return "running as root and there is no 'postgres' user to run the server (run .ci/postgres)"
    return None


def _run(argv: list[str]) -> None:
    if _as_root() and shutil.which("runuser"):
        argv = ["runuser", "-u", "postgres", "--", *argv]
    elif _as_root():
        argv = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(shlex.quote(a) for a in argv)]
    result = subprocess.run(argv, capture_output=True, text=True, cwd="/")
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stdout}{result.stderr}")


class Cluster:
    """A running throwaway cluster (or a server named by ``ASIDES_TEST_POSTGRES_URL``)."""

    def __init__(self, folder: str | None, url: str) -> None:
        self.folder = folder
        self.url = url

    @classmethod
    def start(cls, *, fsync: bool = True) -> Cluster:
        """Start a cluster (or take ``ASIDES_TEST_POSTGRES_URL``'s server, as it is). Without
        ``fsync`` the server never waits for its disk: a commit acknowledged with
        ``synchronous_commit = on`` (asides' default) then survives a crash of the server process
        but not of the machine, and costs what it costs without a disk."""
        given = os.environ.get(ENV_URL)
        if given:
            return cls(None, given)
        binaries = find_binaries()
        assert binaries is not None
        folder = tempfile.mkdtemp(prefix="asides-pg-")
        if _as_root():
            shutil.chown(folder, user="postgres")
        os.chmod(folder, 0o700)
        data = os.path.join(folder, "data")
        _run([os.path.join(binaries, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        options = f"-k {folder} -c listen_addresses='' -c max_connections=200" + ("" if fsync else " -c fsync=off")
        _run([os.path.join(binaries, "pg_ctl"), "-D", data, "-o", options, "-l", os.path.join(folder, "log"), "-w", "start"])
        url = "postgresql://postgres@/postgres?host=" + urllib.parse.quote(folder, safe="")
        return cls(folder, url)

    def stop(self) -> None:
        if self.folder is None:
            return
        binaries = find_binaries()
        try:
            if binaries is not None:
                _run([os.path.join(binaries, "pg_ctl"), "-D", os.path.join(self.folder, "data"), "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def fresh_url(self) -> str:
        """The URL of a new, empty schema of its own."""
        import psycopg

        schema = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return with_search_path(self.url, schema)


def with_search_path(url: str, schema: str) -> str:
    """``url`` with its connections' ``search_path`` set to ``schema``."""
    separator = "&" if "?" in url else "?"
    return url + separator + "options=" + urllib.parse.quote(f"-csearch_path={schema}", safe="")


def _fixture(**options):
    """``pytest.fixture(**options)``; without pytest, the function unchanged."""
    return pytest.fixture(**options) if pytest is not None else (lambda function: function)


@_fixture(scope="session", name="pg_cluster")
def pg_cluster_fixture():
    """A PostgreSQL server for the session; skips (saying why) where none can be started."""
    reason = why_unavailable()
    if reason is not None:
        if os.environ.get("CI"):  # .ci/run installs PostgreSQL: in CI a missing server is a failure
            pytest.fail(f"PostgreSQL is needed in CI: {reason}")
        pytest.skip(reason)
    cluster = Cluster.start(fsync=False)  # no test crashes the machine; see the module docstring
    try:
        yield cluster
    finally:
        cluster.stop()


@_fixture(name="pg_url")
def pg_url_fixture(pg_cluster) -> str:
    """The URL of a fresh, empty store (a schema of its own) on the session's server."""
    return pg_cluster.fresh_url()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "start":
        reason = why_unavailable()
        if reason is not None:
            sys.exit(f"cannot start a cluster: {reason}")
        started = Cluster.start()
        # The URL alone on stdout, so that URL=$(sh .ci/postgres start) takes it; the rest on stderr.
        print(
            f"started a throwaway PostgreSQL server in {started.folder} (a Unix socket there, no TCP port); its URL "
            f"is on stdout. Stop it, removing its data, with: sh .ci/postgres stop {started.folder}",
            file=sys.stderr,
        )
        print(started.url)
    elif len(sys.argv) == 3 and sys.argv[1] == "stop":
        Cluster(sys.argv[2], "").stop()
    else:
        sys.exit(__doc__)
