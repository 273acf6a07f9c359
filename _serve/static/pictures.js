// asides serve: the Pictures tab. Five pictures of the store, each an inline SVG drawn by hand
// with document.createElementNS: no chart library (the page has no build step and its CSP lets it
// load only its own files), and an SVG's labels are text in the DOM, selectable and testable.
// Every value from the store is put on the page as text (textContent), never as markup.
//
// This file is loaded before app.js and only defines functions and constants: app.js calls
// wirePictures once, and loadPictures (the tab's loader, on showing it and on each change of the
// store). It uses app.js's helpers ($, el, api, state, when, showError, messageNode, openMessages,
// openAudit, fillSelect) when they are called, never at load.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const PICTURES = ["context", "compression", "life", "visibility", "cache"];
const pictureRuns = {}; // the newest draw of each picture: older answers are dropped
const CONTEXT_LIMIT = 200; // compiles drawn in the context picture (the newest)
const TICK_GAP = 18; // px between two rows of labels (a 12 px label's box is about 15 px high)

// -- drawing helpers ------------------------------------------------------------------------------

// An SVG element with these attributes (set as attributes, class included) and children (strings
// become text nodes).
function svgEl(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A label at (x, y), y being its baseline; anchor is start, middle or end.
function svgText(x, y, words, cls, anchor) {
  return svgEl("text", { x, y, class: cls || null, "text-anchor": anchor || "start" }, words);
}

// A tooltip for a mark (the browser shows it on hover): an SVG <title>, not a label.
function tip(words) {
  return svgEl("title", {}, words);
}

// The width a label would take in svg with this class (the svg must be on the page).
function measure(svg, words, cls) {
  const probe = svgText(0, 0, words, cls);
  svg.append(probe);
  const width = probe.getComputedTextLength();
  probe.remove();
  return width;
}

// An empty svg for picture `name`, `width` wide; the drawing sets its height at the end.
function pictureSvg(name, width, label) {
  return svgEl("svg", { class: "picture", "data-picture": name, width, height: 10, viewBox: `0 0 ${width} 10`, role: "img", "aria-label": label });
}

function setHeight(svg, height) {
  const width = svg.getAttribute("width");
  svg.setAttribute("height", Math.ceil(height));
  svg.setAttribute("viewBox", `0 0 ${width} ${Math.ceil(height)}`);
}

// Whether two boxes (getBoundingClientRect) overlap, `margin` px counted around each.
function boxesOverlap(a, b, margin) {
  return a.left - margin < b.right && b.left - margin < a.right && a.top - margin < b.bottom && b.top - margin < a.bottom;
}

// Labels of class "yields" (axis ticks, labels inside bars) are dropped where they would overlap
// another label: so no two labels of a picture ever overlap, whatever the data.
function dropOverlaps(svg) {
  const texts = [...svg.querySelectorAll("text")];
  const kept = texts.filter((t) => !t.classList.contains("yields")).map((t) => t.getBoundingClientRect());
  for (const label of texts.filter((t) => t.classList.contains("yields"))) {
    const box = label.getBoundingClientRect();
    if (kept.some((other) => boxesOverlap(box, other, 1))) label.remove();
    else kept.push(box);
  }
}

// Round values from 0 to at least `max`, about `count` of them (steps of 1, 2 or 5 times a power
// of ten; whole steps when `whole`).
function niceTicks(max, count, whole) {
  if (!(max > 0)) return [0];
  const raw = max / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  if (whole) step = Math.max(1, Math.round(step));
  const ticks = [];
  for (let value = 0; value <= max + step * 1e-9; value += step) ticks.push(Math.round(value * 1e6) / 1e6);
  return ticks;
}

const numberFormat = new Intl.NumberFormat("en-US");
function fmt(n) {
  return numberFormat.format(n);
}

function percent(part, whole) {
  return whole > 0 ? Math.round((100 * part) / whole) : 0;
}

// A stretch of time in words: 420 ms, 3.2 s, 14 min, 2.5 h, 3.0 days.
function duration(seconds) {
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

// Legend items laid out in rows from (x, baseline y), a new row before one would pass maxX. Each
// item: a label and a swatch, drawn by swatch(x, top) in a 14 x 12 box (none: the label alone).
// Returns the baseline of the last row.
function drawLegend(svg, items, x, y, maxX) {
  let cx = x;
  let cy = y;
  for (const item of items) {
    const indent = item.swatch ? 19 : 0;
    const labelWidth = measure(svg, item.label, "legend-label");
    if (cx > x && cx + indent + labelWidth > maxX) {
      cx = x;
      cy += TICK_GAP;
    }
    svg.append(svgEl("g", { class: "legend-item" }, item.swatch ? item.swatch(cx, cy - 10) : null, svgText(cx + indent, cy, item.label, "legend-label")));
    cx += indent + labelWidth + 18;
  }
  return cy;
}

function boxSwatch(cls, extra) {
  return (x, top) => svgEl("rect", { x, y: top, width: 14, height: 12, rx: 2, class: cls, ...(extra || {}) });
}

function lineSwatch(cls) {
  return (x, top) => svgEl("line", { x1: x, y1: top + 6, x2: x + 14, y2: top + 6, class: cls });
}

// A hatch pattern (for a stretch not yet in a memory), defined in svg under this id.
function hatchPattern(svg, id) {
  svg.append(
    svgEl(
      "defs",
      {},
      svgEl("pattern", { id, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, svgEl("rect", { width: 6, height: 6, class: "hatch-bg" }), svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "hatch-line" })),
    ),
  );
}

// An empty state: the picture says, in words, why there is nothing to draw.
function emptyPicture(name, words) {
  return el("p", { class: "dim empty-picture", dataset: { picture: name } }, words);
}

// -- the tab --------------------------------------------------------------------------------------

// The controls' choices, kept across a change of the store (a reader or namespace that went away
// falls back to the first).
function fillPictureControls() {
  const here = state.report ? state.report.branches.find((b) => b.name === state.branch) : null;
  const namespaces = here ? here.namespaces : [];
  fillSelect($("pic-context-reader"), state.readers, state.readers[0]);
  fillSelect($("pic-compression-ns"), namespaces.map((ns) => ns.namespace), (namespaces.find((ns) => ns.summaries && ns.summaries.L1 > 0) || {}).namespace);
}

// The tab's loader: every picture drawn again from the store as it is now.
async function loadPictures() {
  fillPictureControls();
  await Promise.all(PICTURES.map(drawPicture));
}

// Fetch a picture's data, then draw it in its box (on the page, so that labels can be measured)
// and say in its caption what it shows. A newer draw of the same picture makes this one moot.
async function drawPicture(name) {
  const box = $(`pic-${name}`);
  const caption = $(`pic-${name}-caption`);
  const run = (pictureRuns[name] = (pictureRuns[name] || 0) + 1);
  box.dataset.busy = "1"; // until the newest draw is on the page
  try {
    const data = await PICTURE_DATA[name]();
    if (run !== pictureRuns[name]) return;
    const width = Math.max(520, Math.min(box.clientWidth || 900, 1100));
    const words = PICTURE_DRAW[name](box, data, width);
    caption.replaceChildren(...[words].flat());
    const svg = box.querySelector("svg.picture");
    if (svg) dropOverlaps(svg);
  } catch (error) {
    if (run !== pictureRuns[name]) return;
    showError(box, error);
    caption.replaceChildren();
  } finally {
    if (run === pictureRuns[name]) delete box.dataset.busy;
  }
}

// -- 1. a reader's context, compile after compile ------------------------------------------------

// The parts of a compile, bottom to top: the head, memories by level, raw recent messages,
// injections.
function contextParts(compiles) {
  const levels = new Set();
  for (const c of compiles) for (const level of Object.keys(c.parts.memories || {})) levels.add(level);
  const sorted = [...levels].sort((a, b) => Number(a) - Number(b));
  return [
    { key: "head", label: "head (raw, before the first memory)", cls: "part-head", tokens: (c) => c.parts.head || 0 },
    ...sorted.map((level) => ({ key: `L${level}`, label: level === "0" ? "memories of unknown level" : `L${level} memories`, cls: `part-mem lvl-${Math.min(Number(level), 4)}`, tokens: (c) => (c.parts.memories || {})[level] || 0 })),
    { key: "raw", label: "raw recent", cls: "part-raw", tokens: (c) => c.parts.raw || 0 },
    { key: "injections", label: "injections", cls: "part-inj", tokens: (c) => c.parts.injections || 0 },
  ];
}

function compileTip(c, parts) {
  const pieces = parts.map((p) => `${p.key} ${fmt(p.tokens(c))}`).join(", ");
  return `compile ${c.id} at ${when(c.at)} in ${c.namespace}: ${fmt(c.tokens)} of ${fmt(c.budget)} tokens (${pieces}), ${c.messages} messages`;
}

function drawContext(box, data, width) {
  const reader = data.reader;
  const compiles = data.compiles;
  if (!reader) {
    box.replaceChildren(emptyPicture("context", "the store names no reader"));
    return "";
  }
  if (!compiles.length) {
    box.replaceChildren(emptyPicture("context", `no compile recorded yet for ${reader}`));
    return `A compile record is written by each ContextManager.compile (never by a preview); ${reader} has none on ${state.branch}.`;
  }
  const svg = pictureSvg("context", width, `${reader}'s context over ${compiles.length} compiles`);
  box.replaceChildren(svg);
  const parts = contextParts(compiles);
  const largest = Math.max(...compiles.map((c) => c.tokens), 1);
  const budget = Math.max(...compiles.map((c) => c.budget || 0));
  // The budget is drawn when the compiles take a fair part of it; else the scale is the compiles'
  // own and a note says where the budget is.
  const budgetOnScale = budget > 0 && largest >= budget / 4;
  const top = budgetOnScale ? Math.max(largest, budget) : largest;
  const plotH = 220;
  const ticks = niceTicks(top, plotH / 44);
  const yMax = Math.max(top, ticks[ticks.length - 1]);
  const tickWidth = Math.max(...ticks.map((t) => measure(svg, fmt(t), "tick")));
  const left = Math.max(tickWidth + 14, measure(svg, "tokens", "axis-title") + 8);
  const right = width - 12;

  const legendItems = parts.map((p) => ({ label: p.label, swatch: boxSwatch(p.cls) }));
  if (budgetOnScale) legendItems.push({ label: "budget (max_tokens less the reserve)", swatch: lineSwatch("budget") });
  const legendBottom = drawLegend(svg, legendItems, left, 14, right);
  const plotTop = legendBottom + 34;
  const plotBottom = plotTop + plotH;
  const y = (tokens) => plotBottom - (tokens / yMax) * plotH;

  svg.append(svgText(4, plotTop - 12, "tokens", "axis-title"));
  if (!budgetOnScale && budget > 0) svg.append(svgText(right, plotTop - 12, `budget ${fmt(budget)} tokens: above the scale (the largest compile is ${percent(largest, budget)} % of it)`, "note", "end"));
  for (const t of ticks) {
    svg.append(svgEl("line", { x1: left, x2: right, y1: y(t), y2: y(t), class: t === 0 ? "axis" : "grid" }));
    svg.append(svgText(left - 6, y(t) + 4, fmt(t), "tick yields", "end"));
  }

  const slot = (right - left) / compiles.length;
  const barWidth = Math.max(1, Math.min(slot * 0.75, 48));
  compiles.forEach((c, i) => {
    const x = left + slot * i + (slot - barWidth) / 2;
    const group = svgEl("g", { class: "compile", "data-id": c.id }, tip(compileTip(c, parts)));
    let base = 0;
    for (const part of parts) {
      const tokens = part.tokens(c);
      if (tokens <= 0) continue;
      group.append(svgEl("rect", { x, width: barWidth, y: y(base + tokens), height: Math.max(0.5, y(base) - y(base + tokens)), class: part.cls }));
      base += tokens;
    }
    svg.append(group);
    if (budgetOnScale && c.budget) svg.append(svgEl("line", { x1: left + slot * i, x2: left + slot * (i + 1), y1: y(c.budget), y2: y(c.budget), class: "budget" }));
  });

  const first = compiles[0];
  const last = compiles[compiles.length - 1];
  const row = plotBottom + 16;
  if (compiles.length === 1) svg.append(svgText(left, row, `at ${when(first.at)}`, "tick"));
  else {
    svg.append(svgText(left, row, `first: ${when(first.at)}`, "tick"));
    svg.append(svgText(right, row, `last: ${when(last.at)}`, "tick", "end"));
  }
  const shown = compiles.length >= CONTEXT_LIMIT ? `the newest ${compiles.length} compiles` : `${compiles.length} ${compiles.length === 1 ? "compile" : "compiles"}`;
  svg.append(svgText((left + right) / 2, row + TICK_GAP, `${shown}, oldest to newest, one bar each`, "axis-title", "middle"));
  setHeight(svg, row + TICK_GAP + 8);

  const memories = parts.filter((p) => p.key.startsWith("L")).map((p) => `${p.key} ${fmt(p.tokens(last))}`);
  return [
    `${reader}'s newest compile (${when(last.at)}, ${last.namespace}): ${fmt(last.tokens)} tokens of a ${fmt(last.budget)}-token budget (${percent(last.tokens, last.budget)} %), ${last.messages} messages: `,
    `head ${fmt(last.parts.head || 0)}, memories ${memories.length ? memories.join(", ") : "0"}, raw ${fmt(last.parts.raw || 0)}, injections ${fmt(last.parts.injections || 0)}.`,
  ].join("");
}

// -- 2. compression: memories per level over the history ------------------------------------------

function drawCompression(box, data, width) {
  const { tree, ns, head } = data;
  if (!ns) {
    box.replaceChildren(emptyPicture("compression", "no namespace on this branch"));
    return "";
  }
  const pending = el("span", { class: "pending" }, ns.pending_work ? `pending work: ${ns.pending_work}` : "pending work: none (ready)");
  const memories = tree.levels.flatMap((level) => level.memories);
  if (!memories.length) {
    box.replaceChildren(emptyPicture("compression", `${ns.namespace} keeps no memories yet (its strategy does not summarise, or nothing was compressed yet)`));
    return [pending];
  }
  const svg = pictureSvg("compression", width, `memories of ${ns.namespace} per level`);
  box.replaceChildren(svg);
  const hatchId = "hatch-compression";
  hatchPattern(svg, hatchId);
  const levels = [...new Set(memories.map((m) => m.level))].sort((a, b) => b - a); // top row: the highest level
  const left = Math.max(...levels.map((level) => measure(svg, `L${level}`, "lane-label"))) + 16;
  const right = width - 12;
  const lastCovered = Math.max(...memories.map((m) => m.last_sequence));
  const firstCovered = Math.min(...memories.map((m) => m.first_sequence));
  const end = Math.max(head, lastCovered);
  const x = (sequence) => left + (sequence / (end + 1)) * (right - left);

  const legendItems = levels
    .slice()
    .reverse()
    .map((level) => ({ label: `L${level} memory`, swatch: boxSwatch(`mem lvl-${Math.min(level, 4)}`) }));
  legendItems.push({ label: "merged into a higher level (faded)", swatch: boxSwatch("mem lvl-1 merged") });
  if (lastCovered < head) legendItems.push({ label: "not yet in a memory", swatch: boxSwatch("uncovered", { fill: `url(#${hatchId})` }) });
  const legendBottom = drawLegend(svg, legendItems, left, 14, right);

  const rowH = 30;
  const plotTop = legendBottom + 16;
  levels.forEach((level, i) => {
    const top = plotTop + i * (rowH + 6);
    svg.append(svgEl("rect", { x: left, y: top, width: right - left, height: rowH, class: "lane" }));
    svg.append(svgText(left - 8, top + rowH / 2 + 4, `L${level}`, "lane-label", "end"));
    for (const m of memories.filter((m) => m.level === level)) {
      const x0 = x(m.first_sequence);
      const w = Math.max(2, x(m.last_sequence + 1) - x0 - 1);
      const words = `${m.id}: #${m.first_sequence}–#${m.last_sequence}, ${m.message_count} messages${m.merged_into ? `, merged into ${m.merged_into}` : ""}`;
      const open = () => openMessages(`${m.id}: the ${m.message_count} messages it covers`, m.message_ids, tree.reader, m.message_count);
      const group = svgEl("g", { class: "memory-mark", "data-id": m.id, onclick: open }, tip(words), svgEl("rect", { x: x0, y: top + 2, width: w, height: rowH - 4, rx: 3, class: `mem lvl-${Math.min(level, 4)} ${m.merged_into ? "merged" : ""}` }));
      if (measure(svg, m.id, "inbar") + 8 < w) group.append(svgText(x0 + w / 2, top + rowH / 2 + 4, m.id, "inbar yields", "middle"));
      svg.append(group);
    }
    if (level === Math.min(...levels) && lastCovered < head) {
      const x0 = x(lastCovered + 1);
      const w = Math.max(2, x(head + 1) - x0);
      svg.append(svgEl("rect", { x: x0, y: top + 2, width: w, height: rowH - 4, class: "uncovered", fill: `url(#${hatchId})` }, tip(`#${lastCovered + 1}–#${head}: not yet in a memory`)));
    }
  });
  const plotBottom = plotTop + levels.length * (rowH + 6) - 6;
  svg.append(svgEl("line", { x1: left, x2: right, y1: plotBottom + 1, y2: plotBottom + 1, class: "axis" }));
  const row = plotBottom + 16;
  const headLabel = svgText(right, row, `head #${head}`, "tick", "end");
  svg.append(headLabel);
  const headLeft = right - measure(svg, `head #${head}`, "tick") - 12;
  for (const t of niceTicks(end, (right - left) / 90, true)) {
    if (x(t) > headLeft) continue;
    svg.append(svgEl("line", { x1: x(t), x2: x(t), y1: plotBottom + 1, y2: plotBottom + 5, class: "axis" }));
    svg.append(svgText(x(t), row, `#${t}`, "tick yields", t === 0 ? "start" : "middle"));
  }
  svg.append(svgText((left + right) / 2, row + TICK_GAP, `message sequence on ${state.branch}, 0 to its head`, "axis-title", "middle"));
  setHeight(svg, row + TICK_GAP + 8);

  const counts = levels
    .slice()
    .reverse()
    .map((level) => `L${level} ${memories.filter((m) => m.level === level).length}`)
    .join(" · ");
  const reader = tree.reader ? `written from ${tree.reader}'s view` : "no reader recorded";
  const rest = lastCovered < head ? `; #${lastCovered + 1}–#${head} not yet in a memory` : "; every message up to the head is in a memory";
  return [`${ns.namespace} (${reader}): ${counts}; memories cover #${firstCovered}–#${lastCovered}${rest}. `, pending];
}

// -- 3. a message's life ---------------------------------------------------------------------------

// The message the picture starts with: a private line of the first reader that was shown to
// someone (else the first private line found, else none).
async function defaultLifeMessage() {
  for (const reader of state.readers.slice(0, 3)) {
    const page = await api("messages", { branch: state.branch, reader, private: 1, limit: 20 });
    const privateOnes = page.messages.filter((m) => m.blocks.some((b) => Array.isArray(b.audience)));
    for (const m of privateOnes.slice(0, 5)) {
      const life = await api("life", { message: m.id, branch: state.branch });
      if (life.events.some((e) => e.what === "shown")) return m.id;
    }
    if (privateOnes.length) return privateOnes[0].id;
  }
  return "";
}

async function lifeData() {
  const input = $("pic-life-id");
  if (!input.value.trim()) input.value = await defaultLifeMessage();
  const id = input.value.trim();
  return id ? api("life", { message: id, branch: state.branch }) : null;
}

const VIA = ["compile", "preview", "compression", "search"];

// A mark for an event at (x, y): its shape and colour say what happened (and, when shown, how).
function lifeMark(event, x, y) {
  const kind = event.what === "shown" ? `via-${VIA.includes(event.via) ? event.via : "compile"}` : `life-${event.what}`;
  switch (kind) {
    case "life-written":
      return svgEl("circle", { cx: x, cy: y, r: 5, class: kind });
    case "life-edited":
      return svgEl("path", { d: `M${x} ${y - 6}L${x + 6} ${y}L${x} ${y + 6}L${x - 6} ${y}Z`, class: kind });
    case "life-erased":
      return svgEl("path", { d: `M${x - 5} ${y - 5}L${x + 5} ${y + 5}M${x + 5} ${y - 5}L${x - 5} ${y + 5}`, class: kind });
    case "via-preview":
      return svgEl("circle", { cx: x, cy: y, r: 4.5, class: kind });
    case "via-compression":
      return svgEl("rect", { x: x - 4.5, y: y - 4.5, width: 9, height: 9, class: kind });
    case "via-search":
      return svgEl("path", { d: `M${x} ${y - 6}L${x + 5.5} ${y + 4}L${x - 5.5} ${y + 4}Z`, class: kind });
    default:
      return svgEl("circle", { cx: x, cy: y, r: 4.5, class: kind });
  }
}

function lifeSwatch(event) {
  return (x, top) => lifeMark(event, x + 7, top + 6);
}

function laneOf(event) {
  if (event.what !== "shown") return "log";
  return event.reader ? event.reader : `${event.namespace} (no reader)`;
}

function eventTip(event) {
  const at = typeof event.at === "number" ? when(event.at) : "time not kept";
  if (event.what === "shown") return `shown to ${event.reader || "no reader"} via ${event.via}, ${event.namespace} on ${event.branch}, ${at}`;
  if (event.what === "erased") return `erased (${event.reason}), erasure ${event.erasure}, ${at}`;
  return `${event.what}, ${at}`;
}

function drawLife(box, life, width) {
  if (!life) {
    box.replaceChildren(emptyPicture("life", "give a message id (a click on a message id elsewhere sets it here too)"));
    return "";
  }
  const m = life.message;
  const link = el("a", { href: "#audit", onclick: () => openAudit(m.id) }, `the audit of message ${m.id}`);
  if (life.recording !== "recorded" && life.events.every((e) => e.what !== "shown")) {
    // without recording, "shown to no one" could not be told from "not recorded"
    box.replaceChildren(emptyPicture("life", `who was shown message ${m.id} is not recorded: ${life.recording}`));
    return [link];
  }
  const svg = pictureSvg("life", width, `the life of message ${m.id}`);
  box.replaceChildren(svg);
  const events = life.events;
  const lanes = ["log"];
  for (const event of events) if (!lanes.includes(laneOf(event))) lanes.push(laneOf(event));
  const left = Math.max(...lanes.map((lane) => measure(svg, lane, "lane-label"))) + 18;
  const right = width - 16;
  const times = events.map((e) => e.at).filter((t) => typeof t === "number");
  const t0 = times.length ? Math.min(...times) : 0;
  const t1 = times.length ? Math.max(...times) : 0;
  const x = (t) => (t1 > t0 ? left + 10 + ((t - t0) / (t1 - t0)) * (right - left - 20) : (left + right) / 2);

  const legendItems = [
    { label: "written", swatch: lifeSwatch({ what: "written" }) },
    { label: "edited", swatch: lifeSwatch({ what: "edited" }) },
    { label: "erased", swatch: lifeSwatch({ what: "erased" }) },
    ...VIA.map((via) => ({ label: `shown via ${via}`, swatch: lifeSwatch({ what: "shown", via }) })),
  ];
  const legendBottom = drawLegend(svg, legendItems, left, 14, right);
  const laneH = 26;
  const plotTop = legendBottom + 16;
  lanes.forEach((lane, i) => {
    const mid = plotTop + i * laneH + laneH / 2;
    svg.append(svgEl("line", { x1: left, x2: right, y1: mid, y2: mid, class: lane === "log" ? "lane-line log" : "lane-line" }));
    svg.append(svgText(left - 10, mid + 4, lane, `lane-label ${lane === "log" ? "" : "reader-lane"}`, "end"));
  });
  let previous = t0;
  for (const event of events) {
    const at = typeof event.at === "number" ? event.at : previous; // an edit written before edits kept their time
    previous = at;
    const mid = plotTop + lanes.indexOf(laneOf(event)) * laneH + laneH / 2;
    svg.append(svgEl("g", { class: "life-event", "data-what": event.what, "data-via": event.via || null }, tip(eventTip(event)), lifeMark(event, x(at), mid)));
  }
  const plotBottom = plotTop + lanes.length * laneH;
  svg.append(svgEl("line", { x1: left, x2: right, y1: plotBottom, y2: plotBottom, class: "axis" }));
  const row = plotBottom + 16;
  svg.append(svgText(left, row, when(t0), "tick"));
  if (t1 > t0) svg.append(svgText(right, row, `${when(t1)} (${duration(t1 - t0)} later)`, "tick", "end"));
  svg.append(svgText((left + right) / 2, row + TICK_GAP, "time, from the first event to the last", "axis-title", "middle"));
  setHeight(svg, row + TICK_GAP + 8);

  const shown = events.filter((e) => e.what === "shown");
  const byVia = VIA.map((via) => [via, shown.filter((e) => e.via === via).length]).filter(([, n]) => n).map(([via, n]) => `${via} ${n}`);
  const readersShown = [...new Set(shown.map((e) => e.reader).filter(Boolean))];
  const erased = events.find((e) => e.what === "erased");
  const who = m.erased ? "erased" : `#${m.sequence}, ${m.participant}`;
  const may = life.readers === null ? "every reader may see it" : `only ${life.readers.join(", ")} may see some block of it`;
  const never = life.readers ? life.readers.filter((r) => !readersShown.includes(r)) : [];
  return [
    `Message ${m.id} (${who}): ${may}. `,
    shown.length ? `Shown ${shown.length} ${shown.length === 1 ? "time" : "times"} to ${readersShown.join(", ") || "no reader"} (${byVia.join(", ")})` : "Shown to no one yet",
    never.length ? `; never shown to ${never.join(", ")}. ` : ". ",
    erased ? `Erased (${erased.reason}), erasure ${erased.erasure}. ` : "Not erased. ",
    "See ",
    link,
    ".",
  ];
}

// -- 4. visibility: who can see whose lines --------------------------------------------------------

// The drawer with participant's messages holding a line for reader (as reader sees them).
async function openPrivateLines(reader, participant) {
  const drawer = $("drawer");
  $("drawer-title").textContent = `${participant}'s private lines ${reader} sees`;
  drawer.hidden = false;
  const body = $("drawer-body");
  body.dataset.reader = reader;
  body.replaceChildren(el("li", { class: "dim" }, "loading…"));
  try {
    const found = [];
    let after = -1;
    for (let pages = 0; pages < 20 && after !== null && after !== undefined && found.length < 500; pages += 1) {
      const page = await api("messages", { branch: state.branch, participant, reader, private: 1, after, limit: 500 });
      found.push(...page.messages);
      after = page.next_after;
    }
    body.replaceChildren(el("li", { class: "dim as-reader" }, `as ${reader} sees them`));
    body.append(...found.map(messageNode));
    if (!found.length) body.append(el("li", { class: "dim" }, `${participant} wrote no line for ${reader} alone`));
  } catch (error) {
    showError(body, error);
  }
}

function drawVisibility(box, data, width) {
  const readers = data.readers;
  const participants = data.participants;
  if (!readers.length || !participants.length) {
    box.replaceChildren(emptyPicture("visibility", readers.length ? "the branch holds no message" : "the store names no reader"));
    return "";
  }
  const svg = pictureSvg("visibility", width, "who can see whose private lines");
  box.replaceChildren(svg);
  const cell = new Map(data.cells.map((c) => [`${c.reader}\u0000${c.participant}`, c]));
  const most = Math.max(1, ...data.cells.map((c) => c.private));
  const hiddenText = (c) => `${c.hidden} hidden`;
  const sharedText = (p) => `${data.shared[p] || 0} shared`;
  const colW = Math.max(64, ...participants.map((p) => Math.max(measure(svg, p, "col-head"), measure(svg, sharedText(p), "small"))), ...data.cells.map((c) => measure(svg, hiddenText(c), "small"))) + 16;
  const left = Math.max(measure(svg, "reader ↓", "axis-title"), ...readers.map((r) => measure(svg, r, "lane-label"))) + 18;
  const cellH = 42;
  const titleRow = 14;
  const headRow = titleRow + TICK_GAP + 4;
  const sharedRow = headRow + TICK_GAP - 3;
  const gridTop = sharedRow + 10;
  const gridRight = left + colW * participants.length;
  if (gridRight + 8 > width) {
    svg.setAttribute("width", gridRight + 8);
  }
  const svgWidth = Number(svg.getAttribute("width"));
  svg.append(svgText(left, titleRow, "whose lines (participant) →", "axis-title"));
  svg.append(svgText(4, headRow, "reader ↓", "axis-title"));
  participants.forEach((p, j) => {
    const cx = left + colW * j + colW / 2;
    svg.append(svgText(cx, headRow, p, "col-head", "middle"));
    svg.append(svgText(cx, sharedRow, sharedText(p), "small", "middle"));
  });
  readers.forEach((reader, i) => {
    const top = gridTop + i * cellH;
    svg.append(svgText(left - 10, top + cellH / 2 + 4, reader, "lane-label", "end"));
    participants.forEach((participant, j) => {
      const c = cell.get(`${reader}\u0000${participant}`) || { reader, participant, private: 0, hidden: 0 };
      const x0 = left + colW * j;
      const shade = c.private ? 0.15 + (0.75 * c.private) / most : 0;
      const words = `${reader} sees ${c.private} private ${c.private === 1 ? "line" : "lines"} of ${participant}; ${c.hidden} of ${participant}'s ${c.hidden === 1 ? "line is" : "lines are"} kept from ${reader}`;
      svg.append(
        svgEl(
          "g",
          { class: `cell ${c.private ? "has-private" : ""}`, "data-reader": reader, "data-participant": participant, "data-private": c.private, onclick: () => openPrivateLines(reader, participant) },
          tip(words + (c.private ? " (click: open them)" : "")),
          svgEl("rect", { x: x0 + 1, y: top + 1, width: colW - 2, height: cellH - 2, rx: 3, class: "cell-bg" }),
          shade ? svgEl("rect", { x: x0 + 1, y: top + 1, width: colW - 2, height: cellH - 2, rx: 3, class: "cell-shade", "fill-opacity": shade.toFixed(3) }) : null,
          svgText(x0 + colW / 2, top + 19, String(c.private), "count", "middle"),
          svgText(x0 + colW / 2, top + 34, hiddenText(c), "small", "middle"),
        ),
      );
    });
  });
  const gridBottom = gridTop + readers.length * cellH;
  const legendItems = [{ label: "0", swatch: boxSwatch("cell-bg") }];
  if (most > 2) legendItems.push({ label: `${Math.round(most / 2)}`, swatch: boxSwatch("cell-shade", { "fill-opacity": (0.15 + (0.75 * Math.round(most / 2)) / most).toFixed(3) }) });
  legendItems.push({ label: `${most}: private lines the reader sees (darker: more)`, swatch: boxSwatch("cell-shade", { "fill-opacity": 0.9 }) });
  legendItems.push({ label: "n hidden: the participant's lines kept from the reader", swatch: null });
  const legendBottom = drawLegend(svg, legendItems, left, gridBottom + 22, Math.max(svgWidth - 8, left + 300));
  setHeight(svg, legendBottom + 10);

  const withPrivate = data.cells.filter((c) => c.private).length;
  return `Of ${fmt(data.messages)} messages on ${state.branch}, each reader (row) sees the counted private lines of each participant (column): lines whose audience names that reader; "hidden" counts the participant's lines whose audience leaves the reader out. ${withPrivate} of ${data.cells.length} pairs share private lines. Click a cell to open those messages as the reader sees them.`;
}

// -- 5. the prompt cache ---------------------------------------------------------------------------

function drawCache(box, data, width) {
  const compiles = data.compiles;
  if (!compiles.length) {
    box.replaceChildren(emptyPicture("cache", `no compile recorded yet on ${state.branch}`));
    return "";
  }
  const svg = pictureSvg("cache", width, "how much of each reader's requests a prompt cache could serve");
  box.replaceChildren(svg);
  // one series per reader (per reader and namespace when a reader compiles in several)
  const namespacesOf = new Map();
  for (const c of compiles) if (c.reader) namespacesOf.set(c.reader, new Set([...(namespacesOf.get(c.reader) || []), c.namespace]));
  const keyOf = (c) => (!c.reader ? `${c.namespace} (no reader)` : namespacesOf.get(c.reader).size > 1 ? `${c.reader} in ${c.namespace}` : c.reader);
  const series = new Map();
  for (const c of compiles) {
    if (!series.has(keyOf(c))) series.set(keyOf(c), []);
    series.get(keyOf(c)).push(c);
  }
  const names = [...series.keys()].sort();
  const longest = Math.max(...[...series.values()].map((s) => s.length));
  const ratio = (c) => (c.tokens > 0 ? Math.min(1, c.cached / c.tokens) : 0);
  const left = measure(svg, "100 %", "tick") + 14;
  const right = width - 16;
  const legendItems = names.map((name, i) => {
    const last = series.get(name)[series.get(name).length - 1];
    return { label: `${name}: ${percent(last.cached, last.tokens)} % last`, swatch: lineSwatch(`series series-${i % 8}`) };
  });
  const legendBottom = drawLegend(svg, legendItems, left, 14, right);
  const plotTop = legendBottom + 34;
  const plotH = 200;
  const plotBottom = plotTop + plotH;
  const x = (index) => (longest > 1 ? left + 12 + (index / (longest - 1)) * (right - left - 24) : (left + right) / 2);
  const y = (r) => plotBottom - r * plotH;
  svg.append(svgText(4, plotTop - 12, "cached / tokens", "axis-title"));
  for (const r of [0, 0.25, 0.5, 0.75, 1]) {
    svg.append(svgEl("line", { x1: left, x2: right, y1: y(r), y2: y(r), class: r === 0 ? "axis" : "grid" }));
    svg.append(svgText(left - 6, y(r) + 4, `${r * 100} %`, "tick", "end"));
  }
  names.forEach((name, i) => {
    const points = series.get(name);
    const group = svgEl("g", { class: `series-line series-${i % 8}`, "data-reader": name, "data-compiles": points.length });
    if (points.length > 1) group.append(svgEl("polyline", { points: points.map((c, k) => `${x(k).toFixed(1)},${y(ratio(c)).toFixed(1)}`).join(" "), class: "series" }));
    if (points.length <= 80) {
      points.forEach((c, k) =>
        group.append(svgEl("circle", { cx: x(k), cy: y(ratio(c)), r: 3, class: "point", "data-id": c.id }, tip(`${name}, compile ${k + 1} (${when(c.at)}): ${fmt(c.cached)} of ${fmt(c.tokens)} tokens the same as the compile before (${percent(c.cached, c.tokens)} %)`))),
      );
    }
    svg.append(group);
  });
  const row = plotBottom + 16;
  // compile numbers 1, then round ones (5, 10, ...) up to the longest series
  const ticks = [1, ...niceTicks(longest, (right - left) / 80, true).filter((t) => t > 1)];
  for (const t of ticks) svg.append(svgText(x(t - 1), row, String(t), "tick yields", "middle"));
  svg.append(svgText((left + right) / 2, row + TICK_GAP, "a reader's compiles, 1 = its first (each compared with the one before it)", "axis-title", "middle"));
  setHeight(svg, row + TICK_GAP + 8);

  const words = names.map((name) => {
    const s = series.get(name);
    const last = s[s.length - 1];
    return `${name} ${percent(last.cached, last.tokens)} % (${fmt(last.cached)} of ${fmt(last.tokens)} tokens, ${s.length} ${s.length === 1 ? "compile" : "compiles"})`;
  });
  return `The newest compile of each: ${words.join("; ")}. A cache could serve the leading part of a request that equals the same manager's previous compile; a first compile has none.`;
}

// -- what each picture draws from --------------------------------------------------------------

const PICTURE_DATA = {
  context: async () => {
    const reader = $("pic-context-reader").value;
    if (!reader) return { reader: "", compiles: [], count: 0 };
    return { reader, ...(await api("compiles", { reader, branch: state.branch, limit: CONTEXT_LIMIT })) };
  },
  compression: async () => {
    const name = $("pic-compression-ns").value;
    const here = state.report.branches.find((b) => b.name === state.branch);
    const ns = here ? here.namespaces.find((n) => n.namespace === name) : null;
    if (!ns) return { ns: null };
    return { ns, head: here.head, tree: await api("memories", { branch: state.branch, namespace: name }) };
  },
  life: lifeData,
  visibility: () => api("visibility", { branch: state.branch }),
  cache: () => api("compiles", { branch: state.branch, limit: 1000 }),
};

const PICTURE_DRAW = { context: drawContext, compression: drawCompression, life: drawLife, visibility: drawVisibility, cache: drawCache };

// The controls: each redraws its own picture.
function wirePictures() {
  $("pic-context-reader").addEventListener("change", () => drawPicture("context"));
  $("pic-compression-ns").addEventListener("change", () => drawPicture("compression"));
  $("pic-life-go").addEventListener("click", () => drawPicture("life"));
  $("pic-life-id").addEventListener("keydown", (event) => event.key === "Enter" && drawPicture("life"));
}
