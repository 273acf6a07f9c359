"""The pytest plugin of ``asides.testing``, run as another project would: pytest in a
subprocess, in a folder of its own with its own configuration.

- Installed, it changes nothing: a project that does not ask has no asides fixtures.
- Asked for (the ``asides_fixtures`` ini option, or ``-p asides.testing.pytest_plugin``), its
  fixtures work under pytest-trio (with an autojump clock) and under anyio's plugin on asyncio.
- ``scripted_model`` fails a test whose model ran dry, at teardown, naming the request.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

HOST_TEST = """
import sniffio
from asides import AutobiographicalStrategy, PassthroughStrategy, Runtime, text


def memory():
    return AutobiographicalStrategy(target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0)


async def {name}(asides_runtime: Runtime, asides_store_path, scripted_model{extra}):
    model = scripted_model("MEMORY")
    log = await asides_runtime.open_manager("room", strategy=PassthroughStrategy())
    ann = await asides_runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
    for number in range(4):
        await log.add_message("user", [text(f"line {{number}}")])
    await ann.drain()
    assert [s.text for s in ann.get_summaries_in_range()] == ["MEMORY"]
    assert asides_store_path.endswith("asides.db")
    print("BACKEND", sniffio.current_async_library())
"""


def _project(tmp_path: Path, config: str, tests: str) -> Path:
    (tmp_path / "pytest.ini").write_text(textwrap.dedent(config))
    (tmp_path / "test_host.py").write_text(textwrap.dedent(tests))
    return tmp_path


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        # (langsmith's plugin, which the bench extra brings, is no part of another project's run)
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin", "-s", "-q", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_installed_alone_it_adds_no_fixture(tmp_path):
    folder = _project(
        tmp_path,
        "[pytest]\n",
        "def test_uses_it(asides_runtime):\n    pass\n",
    )
    result = _pytest(folder)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fixture 'asides_runtime' not found" in result.stdout
    listed = _pytest(folder, "--fixtures")
    assert "asides_runtime" not in listed.stdout and "scripted_model" not in listed.stdout


def test_asked_for_by_the_ini_option_under_pytest_trio(tmp_path):
    folder = _project(
        tmp_path,
        """\
        [pytest]
        trio_mode = true
        asides_fixtures = true
        """,
        HOST_TEST.format(name="test_host", extra=", autojump_clock"),
    )
    result = _pytest(folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BACKEND trio" in result.stdout and "1 passed" in result.stdout


def test_asked_for_with_dash_p_under_anyio_on_asyncio(tmp_path):
    folder = _project(
        tmp_path,
        "[pytest]\n",
        textwrap.dedent(
            """\
        import pytest

        pytestmark = pytest.mark.anyio


        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
        )
        + HOST_TEST.format(name="test_host", extra=""),
    )
    result = _pytest(folder, "-p", "asides.testing.pytest_plugin")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BACKEND asyncio" in result.stdout and "1 passed" in result.stdout


def test_a_scripted_model_that_ran_dry_fails_the_test_at_teardown(tmp_path):
    folder = _project(
        tmp_path,
        """\
        [pytest]
        trio_mode = true
        asides_fixtures = true
        """,
        """\
        from asides import CompiledMessage, CompletionRequest, text


        async def test_scripts_too_few(scripted_model):
            model = scripted_model("one answer", name="answers")
            request = CompletionRequest([CompiledMessage("user", [text("what is the budget?")])])
            await model.complete(request)
            try:
                await model.complete(request)
            except Exception:
                pass  # a host that swallows model errors
        """,
    )
    result = _pytest(folder)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed, 1 error" in result.stdout
    assert "ScriptedModel 'answers' ran dry: request #2" in result.stdout
    assert "what is the budget?" in result.stdout


# -- issue 21, item 3: both loops under the README's own settings --------------------------------

BOTH_LOOPS = """
import pytest
import sniffio
from asides import AutobiographicalStrategy, PassthroughStrategy, Runtime, text


def memory():
    return AutobiographicalStrategy(target_chunk_tokens=1, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0)


async def compress(runtime, model):
    log = await runtime.open_manager("room", strategy=PassthroughStrategy())
    ann = await runtime.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=model)
    for number in range(4):
        await log.add_message("user", [text(f"line {number}")])
    await ann.drain()
    assert [s.text for s in ann.get_summaries_in_range()] == ["MEMORY"]
    print("BACKEND", sniffio.current_async_library())


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_on_asyncio(asides_runtime: Runtime, scripted_model):
    await compress(asides_runtime, scripted_model("MEMORY"))


async def test_on_trio(asides_runtime: Runtime, scripted_model, autojump_clock):
    await compress(asides_runtime, scripted_model("MEMORY"))
"""


def test_an_anyio_test_on_asyncio_runs_under_trio_mode_beside_trio_tests(tmp_path):
    """The README's settings (``trio_mode = true``, ``asides_fixtures = true``) and a test marked
    ``anyio`` on asyncio that takes ``asides_runtime``: it runs, fixture and body, on asyncio,
    and a plain async test beside it runs on Trio. Before the fix the asyncio test failed with
    ``RuntimeError: no running event loop`` at the runtime's ``start_soon(actor.run)``, and
    ``coroutine 'NamespaceActor.run' was never awaited``."""
    folder = _project(
        tmp_path,
        """\
        [pytest]
        trio_mode = true
        asides_fixtures = true
        """,
        BOTH_LOOPS,
    )
    result = _pytest(folder, "-W", "error::RuntimeWarning")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BACKEND asyncio" in result.stdout and "BACKEND trio" in result.stdout and "2 passed" in result.stdout
    assert "never awaited" not in result.stdout + result.stderr


def test_a_test_marked_both_trio_and_anyio_by_hand_is_refused_in_one_line(tmp_path):
    """A test of the plugin's fixtures marked both ``trio`` and ``anyio`` by hand cannot run on
    both at once: the run is refused, in one line saying which mark to keep."""
    folder = _project(
        tmp_path,
        """\
        [pytest]
        asides_fixtures = true
        """,
        """\
        import pytest


        @pytest.mark.trio
        @pytest.mark.anyio
        async def test_confused(asides_runtime):
            pass
        """,
    )
    result = _pytest(folder)
    assert result.returncode != 0, result.stdout + result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "marked both trio and anyio" in line]
    assert len(lines) == 1 and "keep pytest.mark.trio" in lines[0] and "pytest.mark.anyio" in lines[0], result.stdout + result.stderr


def _readme_section(title: str) -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index(f"\n## {title}\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end >= 0 else len(readme)]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", section, flags=re.S | re.M)


def test_the_readmes_testing_your_host_snippets_run_as_they_stand(tmp_path):
    """Issue 21, item 3: the README's "Testing your host" section, taken as it stands: its
    ``toml`` block becomes the project's pytest configuration and its Python blocks, in order,
    one test file (imports included; no helper comes from an example file). Every test in them
    passes, the Trio ones and the asyncio one."""
    section = _readme_section("Testing your host")
    (toml,) = _blocks(section, "toml")
    settings = [line.split("#")[0].strip() for line in toml.splitlines()[1:] if line.split("#")[0].strip()]
    assert "trio_mode = true" in settings and "asides_fixtures = true" in settings
    code = "\n\n".join(_blocks(section, "python"))
    tests = re.findall(r"^async def (test_\w+)", code, flags=re.M)
    assert len(tests) >= 4 and "test_the_host_on_asyncio" in tests, tests
    folder = _project(tmp_path, "[pytest]\n" + "\n".join(settings) + "\n", code)
    result = _pytest(folder, "-rA")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(tests)} passed" in result.stdout, result.stdout
    for name in tests:
        assert f"PASSED test_host.py::{name}" in result.stdout, name
