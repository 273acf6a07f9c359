// asides serve: the inspector's page. Plain JavaScript, no build step, no library.
// Every value from the store is put on the page as text (textContent), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { branch: null, readers: [], report: null, logAfter: -1, cmpNext: null, participants: new Set(), logRun: 0, cmpRun: 0, viewRun: 0, memRun: 0, searchRun: 0, erasures: 0, changes: 0 };

// The token came in the address. The page keeps it in this tab's sessionStorage (which the browser
// keeps apart per port and never sends anywhere) and sends it with each API request; the cookie the
// server set opens the page's own files only. Keep the token out of the address bar (and out of
// the history), as the page is a secret.
const TOKEN_KEY = "asides_token";
if (new URLSearchParams(location.search).has("token")) {
  sessionStorage.setItem(TOKEN_KEY, new URLSearchParams(location.search).get("token"));
  history.replaceState(null, "", location.pathname + location.hash);
}
const token = sessionStorage.getItem(TOKEN_KEY) || "";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) if (value !== undefined && value !== null && value !== "") query.set(key, value);
  const response = await fetch(`/api/${path}?${query}`, { credentials: "same-origin", headers: { "X-Asides-Token": token } });
  if (response.status === 403) throw new Error("403: this page needs the access token: open the address asides serve printed (with its ?token=)");
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

function showError(where, error) {
  where.replaceChildren(el("p", { class: "error" }, String(error.message || error)));
}

function when(stamp) {
  if (!stamp) return "";
  const d = new Date(stamp * 1000);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

function audienceBadge(audience) {
  if (audience === null || audience === undefined) return el("span", { class: "aud aud-all", title: "every reader sees this block" }, "everyone");
  if (audience === "unreadable") return el("span", { class: "aud aud-none", title: "an audience asides cannot read: no one sees it" }, "no one");
  return el("span", { class: "aud aud-some", title: "only these readers see this block" }, "only " + audience.join(", "));
}

function blockNode(block, extraClass) {
  const restricted = block.audience !== null && block.audience !== undefined;
  return el(
    "div",
    { class: `block ${restricted ? "restricted" : ""} ${extraClass || ""}`, dataset: { type: block.type } },
    el("div", { class: "block-text" }, block.type !== "text" ? el("span", { class: "btype" }, block.type) : null, block.text),
    audienceBadge(block.audience),
  );
}

// An erased message keeps its place and id, and says when and why it was erased.
function erasedText(erased) {
  return `erased (${erased.reason}, ${when(erased.at)})`;
}

function messageNode(m) {
  return el(
    "li",
    { class: `message ${m.erased ? "erased" : ""}`, id: `m-${m.id}`, dataset: { id: m.id, seq: m.sequence } },
    el(
      "div",
      { class: "msg-head" },
      el("span", { class: "seq", title: "sequence on the branch" }, `#${m.sequence}`),
      el("span", { class: "who" }, m.participant),
      el("span", { class: "dim" }, when(m.timestamp)),
      el("a", { class: "msg-id", href: `#audit`, title: "audit: who was shown this message", onclick: () => openAudit(m.id) }, `id ${m.id}`),
    ),
    m.erased ? el("div", { class: "block erased-note" }, erasedText(m.erased)) : m.blocks.map((b) => blockNode(b)),
  );
}

// An erasure made while the page is open: each row of an erased message becomes its erased row
// (or leaves a list shown as one reader sees it, where an erased message has no place).
async function applyErasures() {
  const found = await api("erasures", { after: state.erasures });
  for (const erasure of found.erasures) {
    const erased = { reason: erasure.reason, at: erasure.at, erasure: erasure.number };
    for (const id of erasure.message_ids) {
      for (const row of document.querySelectorAll(`li.message[data-id="${CSS.escape(id)}"]`)) {
        if (row.parentElement.dataset.reader) row.remove();
        else row.replaceWith(messageNode({ id, sequence: row.dataset.seq, participant: "", timestamp: null, blocks: [], erased }));
      }
    }
    state.erasures = Math.max(state.erasures, erasure.number);
  }
}

// -- the drawer: messages a link stands for ---------------------------------------------------

// ids: the first of the messages to open (the API lists at most 500); count: how many there are
async function openMessages(title, ids, reader, count = ids.length) {
  const drawer = $("drawer");
  $("drawer-title").textContent = title;
  drawer.hidden = false;
  const body = $("drawer-body");
  body.dataset.reader = reader || "";
  body.replaceChildren(el("li", { class: "dim" }, "loading…"));
  try {
    const page = await api("messages", { branch: state.branch, ids: ids.slice(0, 500).join(","), reader });
    if (reader) body.replaceChildren(el("li", { class: "dim as-reader" }, `as ${reader} sees them`));
    else body.replaceChildren();
    body.append(...page.messages.map(messageNode));
    const shown = Math.min(ids.length, 500);
    if (count > shown) body.append(el("li", { class: "dim" }, `… and ${count - shown} more`));
  } catch (error) {
    showError(body, error);
  }
}

async function openRange(title, after, count, reader) {
  const drawer = $("drawer");
  $("drawer-title").textContent = title;
  drawer.hidden = false;
  const body = $("drawer-body");
  body.dataset.reader = reader || "";
  try {
    const page = await api("messages", { branch: state.branch, after, limit: Math.min(count, 200), reader });
    body.replaceChildren(...page.messages.map(messageNode));
    if (count > 200) body.append(el("li", { class: "dim" }, `… the first 200 of ${count}`));
  } catch (error) {
    showError(body, error);
  }
}

$("drawer-close").addEventListener("click", () => ($("drawer").hidden = true));

// -- the store tab ----------------------------------------------------------------------------

function renderStore() {
  const report = state.report;
  $("store-name").replaceChildren("store ", el("code", {}, report.store));
  $("branches").tBodies[0].replaceChildren(
    ...report.branches.map((b) =>
      el("tr", {}, el("td", {}, b.name), el("td", {}, b.parent || "–"), el("td", { class: "num" }, b.fork_sequence ?? "–"), el("td", { class: "num" }, b.head), el("td", { class: "num" }, b.messages), el("td", { class: "num" }, b.messages_with_audience)),
    ),
  );
  const rows = [];
  for (const b of report.branches) {
    for (const ns of b.namespaces) {
      const memories = Object.entries(ns.summaries).sort().map(([level, n]) => `${level} ${n}`).join(" · ");
      const reader = ns.reader_status === "claimed" ? el("span", { class: "reader" }, ns.reader) : ns.reader_status === "unreadable" ? el("span", { class: "error" }, "UNREADABLE") : el("span", { class: "dim" }, "none");
      const drain = ns.drain.running === null ? el("span", { class: "dim", title: ns.drain.why }, "not visible") : el("span", { title: ns.drain.why, class: ns.drain.running ? "running" : "dim" }, ns.drain.running ? "running" : "idle");
      rows.push(
        el(
          "tr",
          {},
          el("td", {}, b.name),
          el("td", {}, el("a", { href: "#memories", onclick: () => { $("mem-ns").value = ns.namespace; } }, ns.namespace)),
          el("td", {}, reader),
          el("td", { class: "num" }, ns.narrowing_floor ?? "–"),
          el("td", {}, ns.strategy),
          el("td", { class: "num" }, ns.visible_messages ?? "?"),
          el("td", {}, memories),
          el("td", {}, ns.lease && ns.lease.holder ? ns.lease.holder : el("span", { class: "dim" }, "–")),
          el("td", {}, ns.pending_work ? ns.pending_work : el("span", { class: "ok" }, "ready")),
          el("td", {}, drain),
        ),
      );
    }
  }
  $("namespaces").tBodies[0].replaceChildren(...rows);
}

// -- the log tab ------------------------------------------------------------------------------

async function loadLog(reset) {
  // A newer reset makes the answers of older loads moot: they are dropped, never appended.
  const list = $("log");
  const run = reset ? ++state.logRun : state.logRun;
  list.dataset.busy = "1"; // until the newest load has rendered
  try {
    const after = reset ? -1 : state.logAfter;
    const page = await api("messages", { branch: state.branch, after, limit: 100, participant: $("log-participant").value, reader: $("log-reader").value });
    if (run !== state.logRun || (!reset && after !== state.logAfter)) return;
    delete list.dataset.busy;
    if (reset) list.replaceChildren();
    list.dataset.reader = page.reader || "";
    for (const m of page.messages) {
      list.append(messageNode(m));
      state.participants.add(m.participant);
    }
    if (page.messages.length) state.logAfter = page.messages[page.messages.length - 1].sequence;
    if (page.next_after !== null && page.next_after !== undefined) state.logAfter = Math.max(state.logAfter, page.next_after);
    $("log-more").hidden = page.next_after === null || page.next_after === undefined;
    $("log-count").textContent = `${list.children.length} shown of ${page.total} messages`;
    fillParticipants();
  } catch (error) {
    showError(list, error);
  }
}

function fillParticipants() {
  const select = $("log-participant");
  const have = new Set([...select.options].map((o) => o.value));
  for (const name of [...state.participants].sort()) if (!have.has(name)) select.append(el("option", { value: name }, name));
}

$("log-more").addEventListener("click", () => loadLog(false));
$("log-participant").addEventListener("change", () => loadLog(true));
$("log-reader").addEventListener("change", () => loadLog(true));

// -- side by side: two readers' views of the same messages ------------------------------------

async function loadCompare(reset) {
  const list = $("compare");
  const a = $("cmp-a").value, b = $("cmp-b").value;
  if (!a || !b) {
    list.replaceChildren(el("li", { class: "dim" }, "the store names fewer than two readers"));
    return;
  }
  $("cmp-head-a").replaceChildren("what ", el("b", {}, a), " sees");
  $("cmp-head-b").replaceChildren("what ", el("b", {}, b), " sees");
  const run = reset ? ++state.cmpRun : state.cmpRun;
  list.dataset.busy = "1"; // until the newest load has rendered
  try {
    const after = reset ? -1 : state.cmpNext;
    const page = await api("compare", { branch: state.branch, readers: `${a},${b}`, after, limit: 100 });
    if (run !== state.cmpRun || (!reset && after !== state.cmpNext)) return;
    delete list.dataset.busy;
    if (reset) list.replaceChildren();
    const only = $("cmp-only").checked;
    for (const row of page.messages) {
      if (only && !row.differs) continue;
      const side = (reader, other) =>
        el(
          "div",
          { class: "side" },
          el("div", { class: "msg-head" }, el("span", { class: "seq" }, `#${row.sequence}`), el("span", { class: "who" }, row.participant)),
          row.blocks.map((block) => {
            if (!block.seen_by.includes(reader)) return el("div", { class: "block hidden-here" }, `hidden from ${reader}`);
            return blockNode(block, block.seen_by.includes(other) ? "" : reader === a ? "only-a" : "only-b");
          }),
        );
      list.append(el("li", { class: `pair ${row.differs ? "differs" : ""}`, dataset: { id: row.id } }, side(a, b), side(b, a)));
    }
    state.cmpNext = page.next_after;
    $("cmp-more").hidden = page.next_after === null || page.next_after === undefined;
  } catch (error) {
    showError(list, error);
  }
}

for (const id of ["cmp-a", "cmp-b", "cmp-only"]) $(id).addEventListener("change", () => loadCompare(true));
$("cmp-more").addEventListener("click", () => loadCompare(false));

// -- compile: what a reader is sent, with provenance --------------------------------------------

function compiledNode(m, index, otherTexts, reader) {
  const key = m.blocks.map((b) => b.text).join("\n");
  const differs = otherTexts && !otherTexts.has(key);
  const source = m.source;
  const ids = source.message_ids;
  const count = source.message_count;
  const kindLabel = source.kind === "summary" ? `memory ${source.summary_id}` : source.kind;
  const link = ids.length
    ? el(
        "a",
        { href: "#", class: "prov-link", title: "open the messages it stands for", dataset: { ids: ids.join(",") }, onclick: (event) => { event.preventDefault(); openMessages(`${kindLabel}: the ${count} message${count > 1 ? "s" : ""} it stands for`, ids, reader, count); } },
        count === 1 ? `← message ${ids[0]}` : count === ids.length ? `← ${count} messages (${ids[0]}…${ids[ids.length - 1]})` : `← ${count} messages (from ${ids[0]})`,
      )
    : null;
  return el(
    "li",
    { class: `compiled kind-${source.kind} ${differs ? "differs" : ""}`, dataset: { index } },
    el("div", { class: "msg-head" }, el("span", { class: "who" }, m.participant), el("span", { class: "kind" }, kindLabel), link, el("span", { class: "tokens", title: "token estimate of this message" }, `~${m.token_estimate} tok`)),
    m.blocks.map((b) => el("div", { class: "block" }, el("div", { class: "block-text" }, b.text))),
  );
}

function viewColumn(view, otherTexts) {
  const left = view.left_out;
  return el(
    "div",
    { class: "view", dataset: { reader: view.reader } },
    el("h3", {}, "compiled for ", el("span", { class: "reader" }, view.reader)),
    el(
      "p",
      { class: "dim" },
      `${view.namespace} · ${view.strategy} · ${view.messages.length} messages · `,
      el("span", { class: view.token_estimate > view.max_tokens - view.reserve ? "over" : "" }, `~${view.token_estimate} of ${view.max_tokens - view.reserve} tokens`),
      view.token_estimate > view.max_tokens - view.reserve ? " (over the budget: a live compile would refuse it)" : "",
    ),
    view.system_injections.length ? el("div", { class: "block" }, el("div", { class: "block-text" }, el("span", { class: "btype" }, "system"), view.system_injections.map((b) => b.text || b.type).join("\n"))) : null,
    el("ol", { class: "compiled-list" }, view.messages.map((m, i) => compiledNode(m, i, otherTexts, view.reader))),
    el(
      "div",
      { class: "left-out" },
      el("h4", {}, "left out"),
      left.count === 0 && left.hidden.count === 0 && left.cut.length === 0 ? el("p", { class: "dim" }, "nothing: the whole view fits") : null,
      left.runs.map((run) =>
        el(
          "p",
          {},
          el("a", { href: "#", onclick: (event) => { event.preventDefault(); openRange(`left out of ${view.reader}'s compile`, run.first_sequence - 1, run.count, view.reader); } }, run.count === 1 ? `message #${run.first_sequence}` : `#${run.first_sequence}–#${run.last_sequence} (${run.count} messages)`),
          `: ${run.why}`,
        ),
      ),
      left.cut.length ? el("p", {}, `${left.cut.length} message(s) ${left.cut[0].why}: `, left.cut.map((c) => c.id).join(", ")) : null,
      left.hidden.count ? el("p", {}, `${left.hidden.count} message(s) not for this reader: ${left.hidden.why}`) : null,
    ),
  );
}

async function loadViews() {
  const box = $("views");
  const readers = [$("view-a").value, $("view-b").value].filter(Boolean);
  if (!readers.length) {
    box.replaceChildren(el("p", { class: "dim" }, "the store names no reader"));
    return;
  }
  const budget = $("view-budget").value;
  const reserve = $("view-reserve").value;
  const run = ++state.viewRun;
  box.dataset.busy = "1"; // until the newest load has rendered
  try {
    const views = await Promise.all(readers.map((reader) => api("view", { branch: state.branch, reader, max_tokens: budget, reserve })));
    if (run !== state.viewRun) return;
    delete box.dataset.busy;
    const texts = views.map((v) => new Set(v.messages.map((m) => m.blocks.map((b) => b.text).join("\n"))));
    box.replaceChildren(...views.map((v, i) => viewColumn(v, views.length === 2 ? texts[1 - i] : null)));
    box.classList.toggle("two", views.length === 2);
  } catch (error) {
    if (run !== state.viewRun) return;
    delete box.dataset.busy;
    showError(box, error);
  }
}

$("view-go").addEventListener("click", loadViews);
for (const id of ["view-a", "view-b"]) $(id).addEventListener("change", loadViews);

// -- memories ---------------------------------------------------------------------------------

// Only the newest request's answer is drawn: an earlier one (the tab's first load, say) that
// comes back after a namespace was chosen must not replace it. The list says whose it is.
async function loadMemories() {
  const box = $("memories");
  const ns = $("mem-ns").value;
  const run = ++state.memRun;
  if (!ns) {
    box.replaceChildren(el("p", { class: "dim" }, "no namespace on this branch"));
    return;
  }
  try {
    const tree = await api("memories", { branch: state.branch, namespace: ns });
    if (run !== state.memRun) return;
    box.dataset.namespace = ns;
    $("mem-reader").textContent = tree.reader ? `written from ${tree.reader}'s view` : "no reader recorded";
    if (!tree.levels.length) {
      box.replaceChildren(el("p", { class: "dim" }, `${ns} keeps no memories (its strategy does not summarise, or nothing was compressed yet)`));
      return;
    }
    box.replaceChildren(
      ...tree.levels.map((level) =>
        el(
          "div",
          { class: "level" },
          el("h3", {}, `level ${level.level}`, el("span", { class: "dim" }, ` · ${level.memories.length} ${level.memories.length === 1 ? "memory" : "memories"}`)),
          el(
            "div",
            { class: "memory-row" },
            level.memories.map((m) =>
              el(
                "div",
                { class: `memory ${m.merged_into ? "merged" : ""}`, dataset: { id: m.id }, title: "open the messages it covers", onclick: () => openMessages(`${m.id}: the ${m.message_count} messages it covers`, m.message_ids, tree.reader, m.message_count) },
                el("div", { class: "msg-head" }, el("b", {}, m.id), el("span", { class: "span" }, `#${m.first_sequence}–#${m.last_sequence} · ${m.message_count} msgs`)),
                el("div", { class: "memory-text" }, m.text),
                m.merged_into ? el("div", { class: "dim" }, `merged into ${m.merged_into}`) : null,
              ),
            ),
          ),
        ),
      ),
    );
  } catch (error) {
    if (run === state.memRun) showError(box, error);
  }
}

$("mem-ns").addEventListener("change", loadMemories);

// -- audit ------------------------------------------------------------------------------------

function openAudit(id) {
  $("audit-id").value = id;
  $("pic-life-id").value = id; // the Pictures tab's life of a message follows the message audited last
  location.hash = "#audit";
  loadAudit();
}

// An erasure as a line of text: when and why, its number, how many messages it erased and how
// many memories (summaries) it invalidated.
function erasureText(e) {
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  return `${erasedText(e)}: erasure ${e.number} of ${count(e.message_ids.length, "message", "messages")}, ${count(e.summaries_invalidated, "memory", "memories")} invalidated`;
}

async function loadAudit() {
  const box = $("audit");
  const id = $("audit-id").value.trim();
  if (!id) {
    box.replaceChildren(el("p", { class: "dim" }, "give a message id (click one in the log)"));
    return;
  }
  try {
    const found = await api("disclosures", { message: id });
    const shown = await api("messages", { branch: found.branches.includes(state.branch) ? state.branch : found.branches[0], ids: id });
    const parts = [el("ol", { class: "messages" }, shown.messages.map(messageNode))];
    if (found.recording !== "recorded") {
      parts.push(el("p", { class: "notice" }, `Disclosure recording: ${found.recording}. This build of asides does not record who was shown a message, so nothing can be said about it (which is not the same as "shown to no one").`));
    } else {
      parts.push(el("h3", {}, "shown to"));
      parts.push(
        found.disclosures.length
          ? el("table", { class: "audit" }, el("thead", {}, el("tr", {}, ["reader", "namespace", "branch", "how", "when"].map((h) => el("th", {}, h)))), el("tbody", {}, found.disclosures.map((d) => el("tr", {}, el("td", {}, d.reader), el("td", {}, d.namespace), el("td", {}, d.branch), el("td", {}, d.via), el("td", {}, typeof d.at === "number" ? when(d.at) : String(d.at))))))
          : el("p", { class: "dim" }, "no one was shown this message"),
      );
      parts.push(el("h3", {}, "erased"));
      parts.push(found.erasures.length ? el("ul", { class: "erasures" }, found.erasures.map((e) => el("li", {}, erasureText(e)))) : el("p", { class: "dim" }, "not erased"));
    }
    box.replaceChildren(...parts);
  } catch (error) {
    showError(box, error);
  }
}

$("audit-go").addEventListener("click", loadAudit);
$("audit-id").addEventListener("keydown", (event) => event.key === "Enter" && loadAudit());

// -- search: what a reader's search finds --------------------------------------------------------

// A memory a search found: the drawer with the messages it covers (from the namespace searched).
async function openMemoryHit(reader, namespace, id) {
  try {
    const tree = await api("memories", { branch: state.branch, namespace });
    const memory = tree.levels.flatMap((level) => level.memories).find((m) => m.id === id);
    if (memory) openMessages(`${id}: the ${memory.message_count} messages it covers`, memory.message_ids, reader, memory.message_count);
    else showError($("search-result"), `memory ${id} is not among ${reader}'s memories on ${state.branch} now`);
  } catch (error) {
    showError($("search-result"), error);
  }
}

function hitRow(hit, reader, namespace) {
  const open = (event) => {
    event.preventDefault();
    if (hit.kind === "memory") openMemoryHit(reader, namespace, hit.id);
    else openMessages(`message ${hit.id}`, [hit.id], reader);
  };
  const title = hit.kind === "memory" ? "open the messages this memory covers" : "open the message";
  return el(
    "tr",
    { class: `hit kind-${hit.kind}`, dataset: { id: hit.id, kind: hit.kind } },
    el("td", {}, hit.kind === "memory" && hit.level !== null && hit.level !== undefined ? `memory L${hit.level}` : hit.kind),
    el("td", {}, el("a", { href: "#", class: "hit-id", title, onclick: open }, hit.id)),
    el("td", { class: "num" }, typeof hit.score === "number" ? hit.score.toFixed(2) : String(hit.score ?? "")),
    el("td", {}, hit.participant ?? el("span", { class: "dim" }, "–")),
    el("td", {}, el("div", { class: "hit-text" }, hit.text)),
  );
}

async function loadSearch() {
  const box = $("search-result");
  const reader = $("search-reader").value;
  const q = $("search-q").value.trim();
  if (!q) {
    $("search-count").textContent = "";
    box.replaceChildren(el("p", { class: "dim" }, "search the history as one reader: only what that reader may see is found"));
    return;
  }
  const run = ++state.searchRun;
  box.dataset.busy = "1"; // until the newest search has rendered
  delete box.dataset.reader;
  delete box.dataset.query;
  try {
    const found = await api("search", { branch: state.branch, reader, q, limit: 50 });
    if (run !== state.searchRun) return;
    $("search-count").textContent = `${found.hits.length} ${found.hits.length === 1 ? "hit" : "hits"} for ${found.reader}`;
    box.replaceChildren(
      found.hits.length
        ? el("table", { class: "hits", dataset: { reader: found.reader } }, el("thead", {}, el("tr", {}, ["kind", "id", "score", "participant", "text"].map((h) => el("th", {}, h)))), el("tbody", {}, found.hits.map((hit) => hitRow(hit, found.reader, found.namespace))))
        : el("p", { class: "dim" }, `nothing ${found.reader} may see matches`),
    );
    Object.assign(box.dataset, { reader: found.reader, query: q }); // what the list shows
  } catch (error) {
    if (run !== state.searchRun) return;
    $("search-count").textContent = "";
    showError(box, error);
  } finally {
    if (run === state.searchRun) delete box.dataset.busy;
  }
}

$("search-go").addEventListener("click", loadSearch);
$("search-q").addEventListener("keydown", (event) => event.key === "Enter" && loadSearch());
$("search-reader").addEventListener("change", loadSearch);
wirePictures();

// -- tabs, refresh, live ----------------------------------------------------------------------

function fillSelect(select, names, keep, blank) {
  const before = select.value;
  select.replaceChildren(...(blank !== undefined ? [el("option", { value: "" }, blank)] : []), ...names.map((n) => el("option", { value: n }, n)));
  if (names.includes(before) || (before === "" && blank !== undefined)) select.value = before;
  else if (keep !== undefined && names.includes(keep)) select.value = keep;
}

async function loadBasics() {
  state.report = await api("namespaces");
  const branches = state.report.branches.map((b) => b.name);
  fillSelect($("branch"), branches, state.branch ?? state.report.newest_branch); // opens on the branch written last
  state.branch = $("branch").value || "main";
  state.readers = (await api("readers", { branch: state.branch })).readers;
  fillSelect($("log-reader"), state.readers, undefined, "(as stored: every block)");
  fillSelect($("cmp-a"), state.readers, state.readers[0]);
  fillSelect($("cmp-b"), state.readers, state.readers[1]);
  fillSelect($("view-a"), state.readers, state.readers[0]);
  fillSelect($("view-b"), state.readers, undefined, "(none)");
  fillSelect($("search-reader"), state.readers, state.readers[0]);
  const here = state.report.branches.find((b) => b.name === state.branch);
  fillSelect($("mem-ns"), here ? here.namespaces.map((ns) => ns.namespace) : [], (here?.namespaces.find((ns) => ns.summaries.L1 > 0) || {}).namespace);
}

const loaders = { store: async () => renderStore(), log: () => loadLog(true), readers: () => loadCompare(true), compile: loadViews, memories: loadMemories, audit: loadAudit, pictures: () => loadPictures(), search: loadSearch };

function currentTab() {
  const tab = location.hash.slice(1);
  return tab in loaders ? tab : "store";
}

async function showTab() {
  const tab = currentTab();
  for (const link of document.querySelectorAll("#tabs a")) link.classList.toggle("active", link.dataset.tab === tab);
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${tab}`;
  await loaders[tab]();
  document.body.dataset.ready = tab;
}

// New messages on the log tab are appended, and erased ones marked; every other tab is worked out again.
async function refresh() {
  await loadBasics();
  await applyErasures();
  const tab = currentTab();
  if (tab === "log") await loadLog(false);
  else await loaders[tab]();
  document.body.dataset.changes = String(Number(document.body.dataset.changes || 0) + 1);
}

window.addEventListener("hashchange", showTab);
$("branch").addEventListener("change", async () => {
  state.branch = $("branch").value;
  await loadBasics();
  await showTab();
});

// Each event says how many changes the server has seen: one the page has not (made while it
// loaded, or while the stream was down) is a reason to work the tab out again.
function listen() {
  const source = new EventSource(`/api/events?token=${encodeURIComponent(token)}`);
  const heard = (event) => {
    const changes = JSON.parse(event.data).changes;
    document.body.dataset.live = "1";
    if (changes === state.changes) return;
    state.changes = changes;
    refresh().catch((error) => console.error(error));
  };
  source.addEventListener("hello", heard);
  source.addEventListener("change", heard);
  source.addEventListener("open", () => $("live").classList.remove("off"));
  source.addEventListener("error", () => {
    $("live").classList.add("off");
    delete document.body.dataset.live;
  });
}

// Where the page starts: the store's erasures and changes so far, and the API's compile budget.
async function start() {
  const status = await api("status");
  state.erasures = status.erasures;
  state.changes = status.changes;
  $("view-budget").value = status.compile_defaults.max_tokens;
  $("view-reserve").value = status.compile_defaults.reserve;
  await loadBasics();
  await showTab();
  listen();
}

start().catch((error) => showError(document.querySelector("main"), error));
