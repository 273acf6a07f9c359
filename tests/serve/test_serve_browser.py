"""``asides serve`` in a real browser: Debian's Chromium, headless, driven by Playwright's Python
package with the system browser as its executable (no browser download). The server runs as
``python -m asides serve`` on a free loopback port, over the demo's store (``asides demo
--store``). The screenshots under docs/images/ are made here (test_screenshots_of_each_page).

What is checked: a reader's view shows that reader's private lines and never another's; the
side-by-side view marks the blocks only one of the two readers sees; provenance links and
memories open the messages they stand for; a page left open shows a message another process
writes, and an erasure another process makes takes the erased line off it without a reload; the
audit says when and why a message was erased, as text; the page opens on the branch written
last, and its Compile tab starts with the API's budget; the cookie the page sets is named after
the port and opens no data; a browser without the token gets 403 and no data. The Pictures tab:
each picture is drawn from the demo's store with its labels, no two of which overlap; a cell of
the visibility grid opens the private lines that reader sees of that participant (and no other
reader's); the context and cache pictures follow compiles another process makes. The Search tab
finds a reader's own private lines and never another's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from asides._cli._demo import demo_script

CHROMIUM = "/usr/bin/chromium"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGES = os.path.join(ROOT, "docs", "images")
TOKEN = "browser-test-token-4567"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MARKER = re.compile(r"PRIVATE\[([a-z+]+)#\d+\]")

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium)")


def asides(*argv: str, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "asides", *argv], cwd=ROOT, text=True, **kwargs)


class Server:
    """``asides serve PATH --port 0`` as a subprocess; ``url`` is the printed URL (with the token)."""

    def __init__(self, path: str) -> None:
        # run beside the store, so that the page names it as a user would (``room.db``)
        folder, name = os.path.split(path)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "asides", "serve", name, "--port", "0", "--token", TOKEN],
            cwd=folder,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        lines = []
        for line in self.process.stdout:
            lines.append(line)
            if "?token=" in line:
                break
        else:
            raise AssertionError(f"asides serve printed no URL: {lines} {self.process.stderr.read() if self.process.stderr else ''}")
        self.url = lines[-1].strip()
        self.base = self.url.split("/?", 1)[0]

    def stop(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=30)


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("serve") / "room.db")
    made = asides("demo", "--store", path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, COLUMNS="120"))
    _, err = made.communicate(timeout=100)
    assert made.returncode == 0, err
    return path


@pytest.fixture(scope="module")
def server(demo_store: str) -> Iterator[Server]:
    served = Server(demo_store)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(server.url)
    opened.wait_for_selector("body[data-ready]")
    yield opened
    context.close()
    assert not errors, errors


def show(page: Any, tab: str) -> None:
    page.evaluate("tab => { document.body.removeAttribute('data-ready'); location.hash = tab; }", tab)
    page.wait_for_selector(f"body[data-ready={tab}]")


def api(page: Any, path: str) -> Any:
    """``path`` of the API fetched by the page, with the token, as JSON."""
    return page.evaluate("async ([path, token]) => (await fetch(path, { headers: { 'X-Asides-Token': token } })).json()", [path, TOKEN])


def compile_for(page: Any, a: str, b: str | None, budget: int, reserve: int = 0) -> None:
    """Show the compile tab for reader ``a`` (and ``b``) at ``budget`` less ``reserve``, once
    the newest load has rendered (each change of a control starts a load; older answers are
    dropped)."""
    show(page, "compile")
    page.select_option("#view-a", a)
    page.select_option("#view-b", b or "")
    page.fill("#view-budget", str(budget))
    page.fill("#view-reserve", str(reserve))
    page.click("#view-go")
    page.wait_for_selector(f"#views:not([data-busy]) .view[data-reader={b or a}] .compiled")


def markers(text: str) -> set[str]:
    """The audiences of the private notes in ``text`` (``ann``, ``ann+bob``, ...)."""
    return set(MARKER.findall(text))


def notes_for(reader: str) -> set[str]:
    _script, notes = demo_script()
    return {"+".join(note.audience) for note in notes if reader in note.audience}


def test_a_readers_view_shows_its_private_lines_and_never_anothers(page: Any) -> None:
    show(page, "log")
    page.select_option("#log-reader", "ann")
    page.wait_for_selector("#log:not([data-busy]) li.message")
    load_whole_log(page)
    shown = markers(page.inner_text("#log"))
    assert shown == notes_for("ann")  # every note for ann, alone or with others
    assert all("ann" in audience.split("+") for audience in shown)

    compile_for(page, "bob", None, 100_000)
    compiled = page.inner_text("#views")
    assert markers(compiled) and all("bob" in audience.split("+") for audience in markers(compiled))


def test_the_side_by_side_view_marks_the_difference(page: Any) -> None:
    show(page, "readers")
    page.select_option("#cmp-a", "ann")
    page.select_option("#cmp-b", "cleo")
    page.wait_for_selector("#compare:not([data-busy]) .pair.differs .only-a")
    only_ann = markers(" ".join(page.locator("#compare .block.only-a").all_inner_texts()))
    only_cleo = markers(" ".join(page.locator("#compare .block.only-b").all_inner_texts()))
    assert only_ann and all("ann" in a.split("+") and "cleo" not in a.split("+") for a in only_ann)
    assert only_cleo and all("cleo" in a.split("+") and "ann" not in a.split("+") for a in only_cleo)
    # where one reader sees a block the other's column holds a marked gap, not the text
    assert page.locator("#compare .block.hidden-here").count() == len(page.locator("#compare .block.only-a, #compare .block.only-b").all())
    for gap in page.locator("#compare .block.hidden-here").all_inner_texts():
        assert not MARKER.search(gap)


def test_provenance_links_open_the_messages_they_stand_for(page: Any) -> None:
    compile_for(page, "ann", None, 2500)
    for kind in ("summary", "raw"):
        link = page.locator(f".view[data-reader=ann] .compiled.kind-{kind} .prov-link").first
        wanted = link.get_attribute("data-ids").split(",")
        link.click()
        page.wait_for_selector("#drawer:not([hidden]) #drawer-body li.message")
        opened = page.locator("#drawer-body li.message").evaluate_all("items => items.map(item => item.dataset.id)")
        assert opened == wanted, kind
        # shown as ann sees them: none of the lines for others
        assert all("ann" in audience.split("+") for audience in markers(page.inner_text("#drawer-body")))
        page.click("#drawer-close")
    # a raw message's text is the text of the message it stands for
    raw = page.locator(".view[data-reader=ann] .compiled.kind-raw").first
    text = raw.locator(".block-text").first.inner_text()
    raw.locator(".prov-link").click()
    page.wait_for_selector("#drawer:not([hidden]) #drawer-body li.message")
    assert text in page.inner_text("#drawer-body")


def test_memories_open_the_messages_they_cover(page: Any, server: Server) -> None:
    show(page, "memories")
    tree = api(page, "/api/memories?namespace=agents/bob")
    bobs = [m["id"] for level in tree["levels"] for m in level["memories"]]
    page.select_option("#mem-ns", "agents/bob")
    # the list shows bob's memories, not still the namespace shown before the selection (memory
    # ids repeat across namespaces: L1-1 is every namespace's first)
    page.wait_for_function(
        "ids => { const box = document.getElementById('memories');"
        " const shown = [...box.querySelectorAll('.memory')].map(m => m.dataset.id);"
        " return box.dataset.namespace === 'agents/bob' && shown.length > 0 && shown.every(id => ids.includes(id)); }",
        arg=bobs,
    )
    memory = page.locator("#memories .memory").first
    memory_id = memory.get_attribute("data-id")
    memory.click()
    page.wait_for_selector("#drawer:not([hidden]) #drawer-body li.message")
    opened = page.locator("#drawer-body li.message").evaluate_all("items => items.map(item => item.dataset.id)")
    covered = next(m["message_ids"] for level in tree["levels"] for m in level["memories"] if m["id"] == memory_id)
    assert opened == covered
    assert "as bob sees them" in page.inner_text("#drawer-body")
    assert all("bob" in audience.split("+") for audience in markers(page.inner_text("#drawer-body")))


def test_the_audit_of_a_message_says_what_is_recorded(page: Any) -> None:
    show(page, "log")
    first = page.locator("#log li.message").first
    message_id = first.get_attribute("data-id")
    first.locator(".msg-id").click()
    page.wait_for_selector(f"body[data-ready=audit] #audit li.message[data-id='{message_id}']")
    audit = api(page, f"/api/disclosures?message={message_id}")
    if audit["recording"] == "unavailable in this build":
        assert "unavailable in this build" in page.inner_text("#audit")
    else:
        assert "shown to" in page.inner_text("#audit")


def test_a_browser_without_the_token_gets_403_and_no_data(browser: Any, server: Server) -> None:
    context = browser.new_context()
    stranger = context.new_page()
    for path in ("/", "/api/namespaces", "/api/messages?after=0", "/api/view?reader=ann", "/static/app.js"):
        response = stranger.goto(server.base + path)
        assert response.status == 403, path
        body = stranger.content()
        assert "PRIVATE" not in body and "agents/" not in body and "Lisbon" not in body
    response = stranger.goto(server.base + "/?token=wrong-token-000")
    assert response.status == 403
    context.close()


WRITER = """
import sys, trio
from asides import PassthroughStrategy, open_runtime, text

async def main():
    async with open_runtime(sys.argv[1]) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await room.add_message("writer", [text("LIVE-LINE written by another process while the page was open")])

trio.run(main)
"""


def run_on(script: str, *args: str) -> None:
    """Run ``script`` (Python) in another process, with ``args``."""
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def copy_of(demo_store: str, tmp_path: Any) -> str:
    path = str(tmp_path / "copy.db")
    shutil.copyfile(demo_store, path)
    return path


def load_whole_log(page: Any) -> None:
    while page.is_visible("#log-more"):
        count = page.locator("#log li.message").count()
        page.click("#log-more")
        page.wait_for_function(f"() => document.querySelectorAll('#log:not([data-busy]) li.message').length > {count}")


@contextmanager
def open_log(browser: Any, path: str) -> Iterator[Any]:
    """The log tab of the store at ``path``, served on its own: listening to the changes, with
    every message loaded."""
    served = Server(path)
    try:
        context = browser.new_context()
        page = context.new_page()
        page.goto(served.url + "#log")
        page.wait_for_selector("body[data-ready=log][data-live]")
        load_whole_log(page)
        yield page
        context.close()
    finally:
        served.stop()


def test_a_page_left_open_shows_a_message_another_process_writes(browser: Any, demo_store: str, tmp_path: Any) -> None:
    path = copy_of(demo_store, tmp_path)
    with open_log(browser, path) as page:
        assert "LIVE-LINE" not in page.inner_text("#log")
        run_on(WRITER, path)
        page.wait_for_selector("#log li.message:has-text('LIVE-LINE')", timeout=30_000)
        assert page.locator("#log li.message").last.inner_text().count("LIVE-LINE") == 1


ERASER = """
import sys, trio
from asides import open_runtime

async def main():
    async with open_runtime(sys.argv[1]) as rt:
        await rt.erase([sys.argv[2]], reason=sys.argv[3])

trio.run(main)
"""


def test_an_erasure_takes_the_line_off_an_open_log_without_a_reload(browser: Any, demo_store: str, tmp_path: Any) -> None:
    """Another process erases a message while the log is open: its row becomes "erased (reason,
    when)" in its place, its text leaves the page, and the page was not loaded again; the audit
    of it says the same as text."""
    path = copy_of(demo_store, tmp_path)
    with open_log(browser, path) as page:
        page.evaluate("() => { window.sameLoad = true; }")
        private = page.locator("#log li.message:has(.restricted)").first
        message_id = private.get_attribute("data-id")
        secret = private.locator(".block.restricted .block-text").first.inner_text()
        assert MARKER.search(secret) and page.inner_text("#log").count(secret) == 1
        run_on(ERASER, path, message_id, "asked to forget it")
        row = page.wait_for_selector(f"#log li.message.erased[data-id='{message_id}']", timeout=30_000)
        note = row.query_selector(".erased-note").inner_text()
        assert re.fullmatch(r"erased \(asked to forget it, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", note), note
        assert secret not in page.inner_text("#log")
        assert page.evaluate("() => window.sameLoad === true")  # no reload
        row.query_selector(".msg-id").click()
        page.wait_for_selector("body[data-ready=audit] #audit ul.erasures li")
        erasures = page.inner_text("#audit ul.erasures")
        as_text = r"erased \(asked to forget it, [-0-9: ]+\): erasure 1 of 1 message, \d+ memor(y|ies) invalidated"
        assert re.fullmatch(as_text, erasures), erasures
        assert "erased (asked to forget it, " in page.inner_text(f"#audit li.message[data-id='{message_id}']")
        assert secret not in page.inner_text("#audit")


FORKER = """
import sys, trio
from asides import PassthroughStrategy, open_runtime, text

async def main():
    async with open_runtime(sys.argv[1]) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        await room.fork("later")
        later = await rt.open_manager("room", strategy=PassthroughStrategy(), branch="later")
        await later.add_message("writer", [text("LATER-LINE on the branch written last")])

trio.run(main)
"""


def test_the_page_opens_on_the_branch_written_last(browser: Any, demo_store: str, tmp_path: Any) -> None:
    path = copy_of(demo_store, tmp_path)
    run_on(FORKER, path)
    with open_log(browser, path) as page:
        assert page.input_value("#branch") == "later"
        assert "LATER-LINE" in page.locator("#log li.message").last.inner_text()


def test_the_compile_tab_starts_with_the_apis_budget(page: Any) -> None:
    import inspect

    from asides import ContextManager

    defaults = inspect.signature(ContextManager.compile).parameters
    max_tokens, reserve = defaults["max_tokens"].default, defaults["reserve_for_response"].default
    show(page, "compile")
    assert (page.input_value("#view-budget"), page.input_value("#view-reserve")) == (str(max_tokens), str(reserve))
    page.select_option("#view-a", "ann")
    page.click("#view-go")
    page.wait_for_selector("#views:not([data-busy]) .view[data-reader=ann] .compiled")
    assert f"of {max_tokens - reserve} tokens" in page.inner_text(".view[data-reader=ann]")


def test_the_page_cookie_is_named_after_the_port_and_opens_no_data(browser: Any, server: Server) -> None:
    """The cookie a page load sets is named after the inspector's port and does not hold the
    token: a reload of the tab works (the tab keeps the token), the cookie alone opens the
    page's files but no data."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url + "#log")
    page.wait_for_selector("body[data-ready=log] #log li.message")
    assert "token" not in page.url
    port = server.base.rsplit(":", 1)[1]
    cookies = context.cookies()
    assert [c["name"] for c in cookies] == [f"asides_page_{port}"]
    assert TOKEN not in cookies[0]["value"] and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert page.evaluate("async () => (await fetch('/api/namespaces')).status") == 403
    page.reload()
    page.wait_for_selector("body[data-ready=log] #log li.message")
    stranger = context.new_page()  # the cookie, and not the token: the page, and no data
    response = stranger.goto(server.base + "/#log")
    assert response.status == 200
    stranger.wait_for_selector("main p.error")
    assert "needs the access token" in stranger.inner_text("main") and "PRIVATE" not in stranger.content()
    context.close()


PICTURES = ("context", "compression", "life", "visibility", "cache")

#: The pairs of labels (``<text>``) of one picture whose boxes on the page overlap.
OVERLAPS = """name => {
  const labels = [...document.querySelectorAll(`svg[data-picture=${name}] text`)].map(t => [t.textContent, t.getBoundingClientRect()]);
  const overlaps = [];
  for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
    const [a, boxA] = labels[i], [b, boxB] = labels[j];
    const apartX = boxA.right - 0.5 <= boxB.left || boxB.right - 0.5 <= boxA.left;
    const apartY = boxA.bottom - 0.5 <= boxB.top || boxB.bottom - 0.5 <= boxA.top;
    if (!apartX && !apartY) overlaps.push([a, b]);
  }
  return overlaps;
}"""


def pictures_drawn(page: Any) -> None:
    for name in PICTURES:
        page.wait_for_selector(f"#pic-{name}:not([data-busy]) svg[data-picture={name}]")


def show_pictures(page: Any) -> None:
    """The Pictures tab, each picture drawn (the tab is ready once every picture's draw ended)."""
    show(page, "pictures")
    pictures_drawn(page)


def labels(page: Any, name: str) -> list[str]:
    return page.locator(f"svg[data-picture={name}] text").all_text_contents()


def test_each_picture_is_drawn_with_its_labels_and_none_overlap(page: Any) -> None:
    show_pictures(page)
    visibility = api(page, "/api/visibility")
    head = next(b["head"] for b in api(page, "/api/namespaces")["branches"] if b["name"] == "main")
    expected = {
        "context": ["tokens", "head (raw, before the first memory)", "L1 memories", "raw recent", "injections"],
        "compression": ["L1", "L2", "L1 memory", "merged into a higher level (faded)", f"head #{head}"]
        + ["message sequence on main, 0 to its head"],
        "life": ["log", "written", "edited", "erased", "shown via compile", "shown via compression", "ann"]
        + ["time, from the first event to the last"],
        "visibility": ["whose lines (participant) →", "reader ↓", *visibility["readers"], *visibility["participants"]],
        "cache": ["cached / tokens", "0 %", "100 %", "1"],
    }
    for name in PICTURES:
        box = page.locator(f"svg[data-picture={name}]").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 80, name
        shown = labels(page, name)
        assert [label for label in expected[name] if label not in shown] == [], name
        assert page.evaluate(OVERLAPS, name) == [], name
        assert page.inner_text(f"#pic-{name}-caption").strip(), name
    # one bar per compile of ann's (the reader the picture starts with), stacked by part
    compiles = api(page, "/api/compiles?reader=ann&branch=main&limit=200")["compiles"]
    assert compiles and page.input_value("#pic-context-reader") == "ann"
    bars = page.locator("svg[data-picture=context] g.compile").evaluate_all("bars => bars.map(bar => bar.dataset.id)")
    assert bars == [str(c["id"]) for c in compiles]
    # a line per reader in the cache picture, as long as its compiles
    for reader in ("ann", "bob", "cleo"):
        line = page.locator(f"svg[data-picture=cache] g.series-line[data-reader={reader}]")
        mine = [c for c in api(page, f"/api/compiles?reader={reader}&branch=main&limit=1000")["compiles"] if c["reader"] == reader]
        assert line.get_attribute("data-compiles") == str(len(mine))
        assert any(label.startswith(f"{reader}: ") for label in labels(page, "cache"))
    # each cell of the grid says what the API counts
    for cell in visibility["cells"]:
        found = page.locator(f"svg[data-picture=visibility] g.cell[data-reader={cell['reader']}][data-participant={cell['participant']}]")
        assert found.locator("text.count").text_content() == str(cell["private"])
        assert found.locator("text.small").text_content() == f"{cell['hidden']} hidden"
    # the compression picture says the namespace's pending work in words
    assert re.search(r"pending work: (none \(ready\)|.+)", page.inner_text("#pic-compression-caption"))
    # the life picture starts with a private line that was shown to someone
    life = api(page, f"/api/life?message={page.input_value('#pic-life-id')}")
    assert any(b["audience"] not in (None, "unreadable") for b in life["message"]["blocks"])
    assert any(e["what"] == "shown" for e in life["events"])


def test_a_visibility_cell_opens_the_private_lines_that_reader_sees(page: Any) -> None:
    show_pictures(page)
    cells = [c for c in api(page, "/api/visibility")["cells"] if c["private"]]
    chosen = [next(c for c in cells if c["reader"] == reader and c["participant"] != reader) for reader in ("ann", "bob", "cleo")]
    for cell in chosen:
        reader, participant = cell["reader"], cell["participant"]
        wanted = api(page, f"/api/messages?participant={participant}&reader={reader}&private=1&limit=500")["messages"]
        assert len(wanted) == cell["private"]
        page.locator(f"svg[data-picture=visibility] g.cell[data-reader='{reader}'][data-participant='{participant}']").click()
        page.wait_for_function(
            "([title, count]) => document.getElementById('drawer-title').textContent === title"
            " && document.querySelectorAll('#drawer-body li.message').length === count",
            arg=[f"{participant}'s private lines {reader} sees", cell["private"]],
        )
        opened = page.locator("#drawer-body li.message").evaluate_all("items => items.map(item => item.dataset.id)")
        assert opened == [m["id"] for m in wanted]
        drawer = page.inner_text("#drawer-body")
        assert f"as {reader} sees them" in drawer
        shown = markers(drawer)
        assert shown and all(reader in audience.split("+") for audience in shown), (reader, shown)
        assert page.locator("#drawer-body li.message .block.restricted").count() >= cell["private"]
        page.click("#drawer-close")


COMPILER = """
import sys, trio
from asides import open_runtime
from asides._cli._demo import _demo_strategy

async def main():
    async with open_runtime(sys.argv[1]) as rt:
        manager = await rt.open_manager(sys.argv[3], strategy=_demo_strategy(), view_reader=sys.argv[2])
        await manager.compile()

trio.run(main)
"""


def test_the_context_and_cache_pictures_follow_compiles_another_process_makes(browser: Any, demo_store: str, tmp_path: Any) -> None:
    path = copy_of(demo_store, tmp_path)
    served = Server(path)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(served.url + "#pictures")
        page.wait_for_selector("body[data-ready=pictures][data-live]")
        pictures_drawn(page)
        assert page.input_value("#pic-context-reader") == "ann"
        bars = page.locator("svg[data-picture=context] g.compile").count()
        compiles = int(page.get_attribute("svg[data-picture=cache] g.series-line[data-reader=ann]", "data-compiles") or 0)
        assert bars > 0 and compiles == bars
        run_on(COMPILER, path, "ann", "agents/ann")
        bars_now = "n => document.querySelectorAll('#pic-context:not([data-busy]) svg[data-picture=context] g.compile').length === n + 1"
        page.wait_for_function(bars_now, arg=bars, timeout=30_000)
        line = "#pic-cache:not([data-busy]) svg[data-picture=cache] g.series-line[data-reader=ann]"
        page.wait_for_function(f"n => document.querySelector('{line}')?.dataset.compiles === String(n + 1)", arg=compiles, timeout=30_000)
        newest = api(page, "/api/compiles?reader=ann&branch=main&limit=1")["compiles"][-1]
        assert page.locator("svg[data-picture=context] g.compile").last.get_attribute("data-id") == str(newest["id"])
        assert page.evaluate(OVERLAPS, "context") == [] and page.evaluate(OVERLAPS, "cache") == []
        context.close()
        assert not errors, errors
    finally:
        served.stop()


def search(page: Any, reader: str, words: str) -> str:
    """The Search tab's hits for ``words`` searched as ``reader``, as text."""
    page.select_option("#search-reader", reader)
    page.fill("#search-q", words)
    page.click("#search-go")
    page.wait_for_selector(f"#search-result:not([data-busy])[data-reader={reader}][data-query='{words}']")
    return page.inner_text("#search-result")


def test_search_finds_a_readers_own_private_lines_and_never_anothers(page: Any) -> None:
    show(page, "search")
    for reader in ("ann", "bob", "cleo"):
        found = markers(search(page, reader, "PRIVATE"))
        assert reader in found  # a line for this reader alone
        assert found <= notes_for(reader), (reader, found - notes_for(reader))
    # a line for ann alone: found by ann, and not by bob
    assert "PRIVATE[ann#" in search(page, "ann", "hotel Rita")
    assert all("bob" in audience.split("+") for audience in markers(search(page, "bob", "hotel Rita")))
    # a message's id opens it in the drawer, as the reader sees it
    search(page, "ann", "hotel Rita")
    hit = page.locator("#search-result tr.hit.kind-message").first
    hit_id = hit.get_attribute("data-id")
    hit.locator("a.hit-id").click()
    page.wait_for_selector(f"#drawer:not([hidden]) #drawer-body li.message[data-id='{hit_id}']")
    assert "as ann sees them" in page.inner_text("#drawer-body")
    assert all("ann" in audience.split("+") for audience in markers(page.inner_text("#drawer-body")))
    page.click("#drawer-close")
    # a memory's id opens the messages it covers, as the reader sees them
    memory = page.locator("#search-result tr.hit.kind-memory").first
    memory_id = memory.get_attribute("data-id")
    memory.locator("a.hit-id").click()
    page.wait_for_function("id => document.getElementById('drawer-title').textContent.startsWith(id + ': the ')", arg=memory_id)
    page.wait_for_selector("#drawer:not([hidden]) #drawer-body li.message")
    assert all("ann" in audience.split("+") for audience in markers(page.inner_text("#drawer-body")))
    page.click("#drawer-close")
    # a query with no word is refused, and the page says so as the other tabs do
    page.fill("#search-q", "...")
    page.click("#search-go")
    page.wait_for_selector("#search-result:not([data-busy]) p.error")
    assert "q:" in page.inner_text("#search-result p.error")


def test_screenshots_of_each_page(page: Any, tmp_path: Any) -> None:
    """docs/images/serve-*.png, shown in docs/serve.md: made here, never drawn by hand. They are
    written to docs/images/ when ASIDES_WRITE_SCREENSHOTS=1 is set (the demo's timestamps change
    every image at each run, so an ordinary run writes them to a temporary folder and leaves the
    checkout as it was)."""
    images = IMAGES if os.environ.get("ASIDES_WRITE_SCREENSHOTS") == "1" else str(tmp_path)
    os.makedirs(images, exist_ok=True)
    show(page, "store")
    page.set_viewport_size({"width": 1400, "height": 420})
    page.screenshot(path=os.path.join(images, "serve-store.png"))
    page.set_viewport_size({"width": 1400, "height": 900})

    show(page, "readers")
    page.select_option("#cmp-a", "ann")
    page.select_option("#cmp-b", "bob")
    page.wait_for_selector("#compare:not([data-busy]) .pair.differs")
    page.screenshot(path=os.path.join(images, "serve-side-by-side.png"))

    compile_for(page, "ann", "bob", 3000)
    page.locator(".view[data-reader=ann] .compiled.kind-summary").first.scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, 250)")
    page.screenshot(path=os.path.join(images, "serve-compile.png"))
    page.locator(".view[data-reader=ann] .compiled.kind-summary .prov-link").first.click()
    page.wait_for_selector("#drawer:not([hidden]) #drawer-body li.message")
    page.screenshot(path=os.path.join(images, "serve-provenance.png"))
    page.click("#drawer-close")

    show(page, "memories")
    page.select_option("#mem-ns", "agents/ann")
    page.wait_for_selector("#memories .memory")
    page.screenshot(path=os.path.join(images, "serve-memories.png"))

    show(page, "log")
    page.locator("#log li.message[data-seq='25']").evaluate("item => window.scrollTo(0, item.offsetTop - 90)")
    page.screenshot(path=os.path.join(images, "serve-log.png"))

    private = page.locator("#log li.message:has(.restricted)").first
    private.locator(".msg-id").click()
    page.wait_for_selector("body[data-ready=audit] #audit li.message")
    page.set_viewport_size({"width": 1400, "height": 420})
    page.screenshot(path=os.path.join(images, "serve-audit.png"))
    page.set_viewport_size({"width": 1400, "height": 900})

    show_pictures(page)
    for name in PICTURES:
        page.locator(f"#panel-{name}").screenshot(path=os.path.join(images, f"serve-picture-{name}.png"))

    show(page, "search")
    search(page, "ann", "hotel Rita")
    page.set_viewport_size({"width": 1400, "height": 400})
    page.screenshot(path=os.path.join(images, "serve-search.png"))
    pages = ["store", "side-by-side", "compile", "provenance", "memories", "log", "audit", "search"]
    for name in pages + [f"picture-{name}" for name in PICTURES]:
        assert os.path.getsize(os.path.join(images, f"serve-{name}.png")) > 10_000, name
