"""The built wheel: one top-level name, ``asides``, with ``py.typed`` and the demo's conversation,
and a fresh virtual environment (no system site-packages) where a user's own ``store.py``,
``actors.py`` and ``strategies.py`` sit beside a script that uses asides.

Slow: it builds the wheel and installs it with its dependencies from the package index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import asides

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

USER_SCRIPT = """
import store, actors, strategies   # the user's own modules, beside the script
import trio
from asides import PassthroughStrategy, open_runtime, text

assert (store.MINE, actors.MINE, strategies.MINE) == ("store", "actors", "strategies")


async def main():
    async with open_runtime("user.db") as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("hello ann"), text("only for bob", ["bob"])])
        compiled = await ann.compile()
        seen = [block.text for message in compiled.messages for block in message.content]
        assert seen == ["hello ann"], seen
        print("compiled:", seen)


trio.run(main)
"""


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{argv}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the source tree (so the build writes nothing here)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache"
        ),
    )
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(work / "dist"), str(source)])
    (built,) = (work / "dist").glob("asides-*.whl")
    return built


def test_the_wheel_installs_one_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert names
    outside = [n for n in names if not (n.startswith("asides/") or (n.split("/", 1)[0].startswith("asides-") and ".dist-info/" in n))]
    assert outside == []
    assert "asides/py.typed" in names
    assert "asides/_cli/demo_conversation.txt" in names
    for static in ("index.html", "app.js", "style.css"):  # asides serve's page, shipped in the wheel
        assert f"asides/_serve/static/{static}" in names
    assert "asides/__main__.py" in names
    for module in ("__init__", "_tools", "_http"):  # asides mcp's server
        assert f"asides/_mcp/{module}.py" in names
    for private in ("asides/tests/", "asides/examples/", "asides/benchmarks/", "asides/docs/"):
        assert not any(n.startswith(private) for n in names), private
    version = wheel.name.split("-")[1]
    assert version == asides.__version__


def test_a_fresh_venv_beside_a_users_own_store_actors_and_strategies(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])  # no --system-site-packages
    python = venv / "bin" / "python"
    config = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)])

    user = tmp_path / "project"
    user.mkdir()
    for name in ("store", "actors", "strategies"):
        (user / f"{name}.py").write_text(f'MINE = "{name}"\n')
    (user / "script.py").write_text(textwrap.dedent(USER_SCRIPT))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = run([str(python), "script.py"], cwd=user, env=env)
    assert "compiled: ['hello ann']" in result.stdout

    # the installed package is where it should be, typed, and not the source tree
    where = run([str(python), "-c", "import asides, os; print(os.path.dirname(asides.__file__))"], cwd=user, env=env).stdout.strip()
    assert where.startswith(str(venv)) and os.path.exists(os.path.join(where, "py.typed"))

    version = run([str(venv / "bin" / "asides"), "--version"], cwd=user, env=env)
    assert version.stdout.strip() == f"asides {asides.__version__}"
    demo = run([str(python), "-m", "asides", "demo"], cwd=user, env=dict(env, COLUMNS="120"))
    assert "no private line reached a reader it was not for" in demo.stdout
