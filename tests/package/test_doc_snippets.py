"""Every Python snippet in README.md and docs/*.md runs as it stands, offline, and the docs say
what a new user needs to know (docs/testing.md, "Every snippet in the docs runs").

- A page's ```python blocks run in order in one namespace, in a temporary working directory,
  with no API key and no network; a block may ``await`` at the top level (it then runs under
  ``trio.run``). A block that cannot run offline carries ``<!-- snippet: skip (reason) -->`` on
  the line right before its fence: it is compiled, not run, and listed as a skipped test with
  its reason.
- docs/langchain.md shows ``ScriptedChatModel`` where it first says how to run offline, and says
  why LangChain's own ``GenericFakeChatModel`` will not do (which is checked); docs/api.md names
  every name the integrations export that is not an error.
- The README's command block lists every command ``asides --help`` lists; "Testing your host"
  names the packages a project needs for it (checked against the installed packages'
  requirements); the README says what ``open_manager("")`` opens (checked on both backends);
  ``racing_opens.py``'s sample output says its winner varies.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import re
import socket
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from asides import PassthroughStrategy, ReaderClaimError, open_runtime

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<language>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*snippet:(?P<says>.*?)-->", re.S)
SKIP = re.compile(r"\s*skip\s*\((?P<reason>.*\S.*)\)\s*", re.S)


@dataclass(frozen=True)
class Snippet:
    """One ```python block: its page, the page's line of its first line of code, its code, and
    the reason it is not run (``None``: it runs)."""

    page: str
    line: int
    code: str
    skip: str | None

    @property
    def place(self) -> str:
        return f"{self.page}:{self.line}"


def parse_page(page: str, text: str) -> tuple[list[Snippet], list[str]]:
    """The page's Python snippets in order, and what is wrong with its snippet markers: a marker
    must say ``skip (reason)`` and sit on the line right before a ```python fence (one inside a
    fenced block is that block's text)."""
    snippets: list[Snippet] = []
    problems: list[str] = []
    used: set[int] = set()
    fences = list(FENCE.finditer(text))
    markers = {
        text.count("\n", 0, marker.start()) + 1: marker
        for marker in MARKER.finditer(text)
        if not any(fence.start() <= marker.start() < fence.end() for fence in fences)  # one shown in a block is text
    }
    for fence in fences:
        if fence.group("language").strip() != "python":
            continue
        fence_line = text.count("\n", 0, fence.start()) + 1
        skip = None
        marker = markers.get(fence_line - 1)
        if marker is not None:
            used.add(fence_line - 1)
            said = SKIP.fullmatch(marker.group("says"))
            if said is None:
                problems.append(f"{page}:{fence_line - 1}: a snippet marker says 'skip (reason)', not {marker.group(0)!r}")
            else:
                skip = said.group("reason").strip()
        snippets.append(Snippet(page, fence_line + 1, textwrap.dedent(fence.group("body")), skip))
    for line, marker in sorted(markers.items()):
        if line not in used:
            problems.append(f"{page}:{line}: {marker.group(0)!r} is not on the line right before a ```python fence")
    return snippets, problems


def compile_snippet(snippet: Snippet) -> Any:
    """The snippet's code object, numbered as the page is (a traceback names the page's line);
    top-level ``await`` allowed."""
    padded = "\n" * (snippet.line - 1) + snippet.code
    return compile(padded, snippet.page, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


#: The module name a snippet's code runs under.
SNIPPET_MODULE = "__doc_snippet__"


def run_snippets(snippets: list[Snippet]) -> dict[str, Any]:
    """Run the snippets that are not skipped, in order, in one namespace (which is returned); a
    skipped one is only compiled. A block with top-level ``await`` runs under ``trio.run``. A
    deprecation warned at a snippet's own line (a deprecated name the page shows) is an error."""
    namespace: dict[str, Any] = {"__name__": SNIPPET_MODULE}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=DeprecationWarning, module=re.escape(SNIPPET_MODULE))
        for snippet in snippets:
            code = compile_snippet(snippet)
            if snippet.skip is not None:
                continue
            if code.co_flags & inspect.CO_COROUTINE:

                async def body(code: Any = code) -> None:
                    await eval(code, namespace)

                trio.run(body)
            else:
                exec(code, namespace)
    return namespace


def _read(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


PARSED = {page: parse_page(page, _read(page)) for page in PAGES}
RUN_PAGES = [page for page, (snippets, _) in PARSED.items() if any(s.skip is None for s in snippets)]
SKIPPED = [snippet for snippets, _ in PARSED.values() for snippet in snippets if snippet.skip is not None]

#: What a refused lookup or connection says.
_OFFLINE = "doc snippets run offline"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """A temporary working directory, no API keys, the Agents SDK's tracing off, and every name
    lookup or TCP connection refused; returns the attempts, which the test asserts are none."""
    attempts: list[str] = []
    monkeypatch.chdir(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(f"a lookup of {host!r}")
        raise OSError(f"{_OFFLINE}: no lookup of {host!r}")

    real_connect = socket.socket.connect

    def connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(f"a connection to {address!r}")
            raise OSError(f"{_OFFLINE}: no connection to {address!r}")
        real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_snippets_of_a_page_run_as_they_stand(page: str, offline: list[str]) -> None:
    """Every ```python block of the page not marked skip runs, in order, in one namespace,
    offline; it raises nothing and tries no network."""
    snippets, _ = PARSED[page]
    run_snippets(snippets)
    assert not offline, f"{page}: a snippet tried the network: {offline}"


@pytest.mark.parametrize("snippet", SKIPPED, ids=[snippet.place for snippet in SKIPPED])
def test_a_snippet_marked_skip_compiles_and_is_listed_with_its_reason(snippet: Snippet) -> None:
    """A skipped snippet still compiles (no syntax error hides behind a skip), and shows in the
    run's skips (``-rs``) with its page, line and reason."""
    compile_snippet(snippet)
    pytest.skip(f"{snippet.place} is not run: {snippet.skip}")


def test_every_snippet_marker_is_a_skip_with_a_reason_right_before_a_fence() -> None:
    problems = [problem for _, page_problems in PARSED.values() for problem in page_problems]
    assert not problems, "\n".join(problems)


def test_the_convention_on_a_page_of_its_own(offline: list[str]) -> None:
    """The rules docs/testing.md states, on a made-up page: blocks share one namespace in order,
    top-level ``await`` runs under Trio, a marked block is not run, only python blocks run, and
    a marker in the wrong place or without a reason is reported."""
    page = textwrap.dedent(
        """\
        ```python
        import trio
        seen = []
        ```

        ```sh
        this is not python
        ```

        ```python
        await trio.sleep(0)
        seen.append(trio.lowlevel.current_task().name)
        ```

        <!-- snippet: skip (it would fail) -->
        ```python
        raise AssertionError("a skipped snippet ran")
        ```

        <!-- snippet: skip -->
        ```python
        pass
        ```

        <!-- snippet: skip (not before a fence) -->
        text

        ```
        <!-- snippet: skip (shown in a block, as docs/testing.md shows one) -->
        ```
        """
    )
    snippets, problems = parse_page("made-up.md", page)
    assert [(s.line, s.skip) for s in snippets] == [(2, None), (11, None), (17, "it would fail"), (22, None)]
    assert len(problems) == 2
    assert problems[0].startswith("made-up.md:20: a snippet marker says 'skip (reason)'")
    assert problems[1].startswith("made-up.md:25: ") and "not on the line right before" in problems[1]
    namespace = run_snippets(snippets)
    assert len(namespace["seen"]) == 1
    with pytest.raises(DeprecationWarning, match="old"):
        run_snippets([Snippet("made-up.md", 1, "import warnings\nwarnings.warn('old', DeprecationWarning)\n", None)])
    with pytest.raises(ZeroDivisionError) as failure:
        run_snippets([Snippet("made-up.md", 40, "x = 1\n1 / 0\n", None)])
    last = failure.value.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    assert last is not None and (last.tb_frame.f_code.co_filename, last.tb_lineno) == ("made-up.md", 41)


# -- docs/langchain.md and docs/api.md: the offline models ----------------------------------------


def _section(page: str, title: str) -> str:
    text = _read(page)
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_langchain_md_shows_scripted_chat_model_where_it_first_says_how_to_run_offline() -> None:
    page = _read("docs/langchain.md")
    offline = _section("docs/langchain.md", "Running offline: `ScriptedChatModel`")
    first_offline = page.lower().index("offline")
    assert first_offline < page.index(offline), "the page speaks of running offline before the section that says how"
    shown = ("ScriptedChatModel(messages=", "ScriptedChatModel(answer=", "model.requests", "`bind_tools(...)` returns the model itself")
    for what in shown:
        assert what in offline, what
    assert "GenericFakeChatModel" in offline and "NotImplementedError" in offline


def test_langchains_own_fake_cannot_drive_an_agent_with_tools_and_scripted_chat_model_can() -> None:
    """What docs/langchain.md says of ``GenericFakeChatModel``, checked on the LangChain
    installed: an agent with a tool fails at its first model call with ``NotImplementedError``;
    ``ScriptedChatModel`` drives the same agent and records both calls."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from asides.integrations.langchain import ScriptedChatModel

    @tool
    def lookup(venue: str) -> str:
        """How many people a venue seats."""
        return f"{venue} seats 80."

    def script() -> Any:
        return iter([AIMessage("", tool_calls=[{"name": "lookup", "args": {"venue": "Hall A"}, "id": "call-1"}]), "Booked."])

    with pytest.raises(NotImplementedError):
        create_agent(GenericFakeChatModel(messages=script()), tools=[lookup]).invoke({"messages": [HumanMessage("Book it.")]})

    model = ScriptedChatModel(messages=script())
    result = create_agent(model, tools=[lookup]).invoke({"messages": [HumanMessage("Book it.")]})
    assert result["messages"][-1].content == "Booked."
    assert len(model.requests) == 2
    (answered,) = [message for message in model.requests[1] if isinstance(message, ToolMessage)]
    assert answered.content == "Hall A seats 80."


INTEGRATIONS = ("asides.integrations.openai_agents", "asides.integrations.langchain", "asides.integrations.pydantic_ai")


def test_api_md_names_every_name_the_integrations_export_but_their_errors() -> None:
    api = _read("docs/api.md")
    missing = []
    for name in INTEGRATIONS:
        module = importlib.import_module(name)
        for exported in module.__all__:
            value = getattr(module, exported)
            if isinstance(value, type) and issubclass(value, Exception):
                continue  # "and their errors"
            if f"`{exported}`" not in api and f"{exported}(" not in api and f".{exported}" not in api:
                missing.append(f"{name}.{exported}")
    assert not missing, missing


# -- README: the commands, the packages, open_manager(""), racing_opens ----------------------------


def _commands_asides_lists() -> set[str]:
    shown = subprocess.run([sys.executable, "-m", "asides", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    listing = shown.stdout.split("positional arguments:", 1)[1].split("options:", 1)[0]
    return set(re.findall(r"^ {4}([a-z][a-z-]*)(?:\s|$)", listing, flags=re.M))


def test_the_readmes_command_block_lists_every_command() -> None:
    commands = _commands_asides_lists()
    assert {"demo", "inspect", "compile", "export", "import", "dump", "restore", "serve", "erase", "audit"} <= commands
    block = FENCE.search(_section("README.md", "The `asides` command"))
    assert block is not None
    listed = {line.split()[1] for line in block.group("body").splitlines() if line.startswith("asides ")}
    assert commands <= listed, f"asides --help lists commands the README's command block does not: {sorted(commands - listed)}"


def _distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_with(names: list[str]) -> set[str]:
    """The distributions that installing ``names`` brings, as installed here (their requirements,
    with no extras, followed through)."""
    found: set[str] = set()
    todo = [_distribution(name) for name in names]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # a requirement for another platform or Python
        found.add(name)
        for requirement in requirements:
            if "extra" in requirement.partition(";")[2]:
                continue
            head = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
            assert head is not None, requirement
            todo.append(_distribution(head.group(0)))
    return found


def _top_level_imports(code: str) -> set[str]:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    return imported


def test_testing_your_host_names_the_packages_a_project_needs() -> None:
    """The section's ``pip install`` line brings every package its snippets import and both
    pytest plugins its tests run under: pytest-trio's (``trio_mode``, ``autojump_clock``) and
    anyio's (``pytest.mark.anyio``)."""
    section = _section("README.md", "Testing your host")
    shell = [block.group("body") for block in FENCE.finditer(section) if block.group("language").strip() == "sh"]
    installs = [line.split()[2:] for body in shell for line in body.splitlines() if line.startswith("pip install ")]
    assert len(installs) == 1, installs
    (named,) = installs
    code = "\n".join(block.group("body") for block in FENCE.finditer(section) if block.group("language").strip() == "python")
    modules = importlib.metadata.packages_distributions()
    needed = {_distribution(modules[module][0]) for module in _top_level_imports(code)}
    assert "trio_mode = true" in section and "autojump_clock" in section and "pytest.mark.anyio" in section
    plugins = {entry.name: entry for entry in importlib.metadata.entry_points(group="pytest11")}
    needed |= {_distribution(plugins[name].dist.name) for name in ("trio", "anyio") if plugins[name].dist is not None}
    assert {"asides", "pytest", "pytest-trio", "anyio"} <= needed
    missing = needed - _installed_with(named)
    assert not missing, f"'pip install {' '.join(named)}' does not bring {sorted(missing)}"


async def test_the_readme_says_what_open_manager_of_the_empty_name_opens(store_path: str) -> None:
    """``None``, ``""`` and ``"default"`` are one namespace, ``"default"``, as the README says
    where it introduces ``open_manager``: a claim made through one is the claim of all three."""
    section = _section("README.md", "The API in five minutes")
    assert 'open_manager("", strategy=s)' in section and '`"default"`' in section
    async with open_runtime(store_path) as rt:
        empty = await rt.open_manager("", strategy=PassthroughStrategy(), view_reader="ann")
        unnamed = await rt.open_manager(strategy=PassthroughStrategy())
        assert empty.namespace == unnamed.namespace == "default"
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("default", strategy=PassthroughStrategy(), view_reader="bob")


def test_racing_opens_sample_output_says_the_winner_varies() -> None:
    readme = _read("README.md")
    start = readme.index("- `examples/racing_opens.py`")
    entry = readme[start : readme.index("\n- `examples/", start + 1)]
    sample = FENCE.search(entry)
    assert sample is not None
    assert "varies from run to run" in entry[: sample.start()], "the README's sample output does not say the winner varies"
    lines = textwrap.dedent(sample.group("body")).splitlines()
    tied = lines[1].strip().split(", ")
    winner = re.match(r"winner: (reader-\d+),", lines[2])
    assert winner is not None and winner.group(1) in tied
    assert "varies from run to run" in _read("examples/racing_opens.py")
