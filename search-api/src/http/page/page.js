// rowsearch's search page: plain JavaScript over the server's own HTTP API
// (API.md): GET /tables, /tables/{t}, /tables/{t}/search, /suggest,
// /threads/{id} and a hit's row.
// No framework and no request to anything but this server.
"use strict";

const LIMIT = 10;
const CROP_WORDS = 40;  // words of a left-out field (a mail body) a hit shows
const DEBOUNCE_MS = 120;
const FRESHNESS_EVERY_MS = 5000;
const KEY_STORAGE = "rowsearch.key";
const MATCH_LIMIT = 1000;  // matching messages a thread view marks, at most
const MAX_INDENT = 8;      // reply depths indented (deeper ones stay there)

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  for (const child of children) node.append(child);
  return node;
};

const state = {
  tables: [],      // [{name, search: {partition, fields, facets}}] of GET /tables
  table: null,     // the chosen table's entry
  offset: 0,
  selected: [],    // [{facet, value, param|clause}] facet values clicked
  hits: [],
  total: 0,
  collapsed: false, // whether the hits shown are conversations
  searchSeq: 0,    // which search an answer belongs to (late answers are dropped)
  searching: null, // AbortController of the search in flight
  suggesting: null,
  suggestion: -1,  // index of the highlighted suggestion
  freshnessAt: 0,
};

// ---- HTTP ----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_error";
    this.position = error.position;
  }
}

async function api(path, signal) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(path, { headers, signal });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new ApiError(response.status, body);
    if (error.code === "missing_key" || error.code === "invalid_key") askForKey(error);
    throw error;
  }
  return body;
}

function askForKey(error) {
  $("key-button").hidden = false;
  $("key-why").textContent = error.code === "invalid_key"
    ? "That access key is not valid here. Enter another one."
    : "This server needs an access key.";
  if (!$("key-dialog").open) $("key-dialog").showModal();
}

// ---- tables and freshness ------------------------------------------------

async function loadTables() {
  const answer = await api("/tables");
  state.tables = answer.tables.filter((t) => t.search);
  const picker = $("table");
  picker.replaceChildren(...state.tables.map((t) => el("option", { value: t.name, textContent: t.name })));
  if (state.tables.length === 0) {
    showEmpty("No searchable table yet: ingest mail (rowsearch ingest PATH) or create a table with a search section.");
    return;
  }
  const wanted = new URLSearchParams(location.search).get("table");
  const chosen = state.tables.find((t) => t.name === wanted) || state.tables.find((t) => t.name === "mail") || state.tables[0];
  picker.value = chosen.name;
  chooseTable(chosen.name);
}

function chooseTable(name) {
  state.table = state.tables.find((t) => t.name === name) || null;
  $("conversations-label").hidden = !threadField();
  state.selected = [];
  state.offset = 0;
  state.freshnessAt = 0;
  refreshFreshness();
  scheduleSearch(0);
}

async function refreshFreshness(seq) {
  const line = $("freshness");
  if (seq !== undefined) line.dataset.seq = seq;
  const now = Date.now();
  if (!state.table || now - state.freshnessAt < FRESHNESS_EVERY_MS) return renderFreshness();
  state.freshnessAt = now;
  try {
    // GET /tables gives the sequences to a key that may see the whole
    // table; to a key confined to partitions, the answers' seq is all.
    const answer = await api("/tables");
    const f = (answer.tables.find((t) => t.name === state.table.name) || {}).freshness || {};
    line.dataset.store = f.store_seq ?? "";
    line.dataset.index = f.index_seq ?? "";
    line.dataset.lag = f.lag_rows ?? "";
  } catch (_) {
    // Shown again with the next answer.
  }
  renderFreshness();
}

function renderFreshness() {
  const d = $("freshness").dataset;
  const parts = [];
  if (d.store) parts.push(`store seq ${d.store}`);
  if (d.index) parts.push(`index seq ${d.index}${d.lag ? ` (${d.lag} rows behind)` : ""}`);
  if (d.seq) parts.push(`answers reflect seq ${d.seq}`);
  $("freshness").textContent = parts.join(" · ");
}

// ---- the query -----------------------------------------------------------

// The field the chosen table's hits collapse by (null: no threads).
function threadField() {
  return (state.table && state.table.search.threads) || null;
}

// Whether searches answer one hit per conversation.
function conversations() {
  return threadField() !== null && $("conversations").checked;
}

function typed() {
  return $("q").value.trim();
}

// The query sent: what was typed, narrowed by the facet values clicked.
// Returns [query, offset of the typed text in it].
function composed() {
  const clauses = state.selected.filter((s) => s.clause).map((s) => s.clause);
  if (clauses.length === 0) return [typed(), 0];
  return [`(${typed()}) ${clauses.join(" ")}`, 1];
}

function searchParams(extra) {
  const params = new URLSearchParams();
  const [q] = composed();
  params.set("q", q);
  const user = state.selected.find((s) => s.param === "user");
  if (user) params.set("user", user.value);
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params;
}

let debounce = null;
function scheduleSearch(delay = DEBOUNCE_MS) {
  clearTimeout(debounce);
  debounce = setTimeout(search, delay);
}

async function search() {
  clearTimeout(debounce);
  if (state.searching) state.searching.abort();
  const mine = ++state.searchSeq;
  syncLocation();
  if (!state.table || typed() === "") {
    state.searching = null;
    renderNothing();
    return;
  }
  const controller = new AbortController();
  state.searching = controller;
  const t = state.table;
  const query = typed();
  const facets = facetNames(t);
  const params = searchParams({
    limit: LIMIT,
    offset: state.offset,
    sort: $("sort").value,
    highlight: "true",
    typos: $("typos").checked ? "auto" : "off",
  });
  const collapsed = conversations();
  if (collapsed) params.set("collapse", "thread");
  // Fields a list leaves out (mail bodies): the words around the match.
  const cropped = hiddenFields(t);
  if (cropped.length) params.set("crop", cropped.map((f) => `${f}:${CROP_WORDS}`).join(","));
  if (facets.length) params.set("facets", facets.join(","));
  try {
    const answer = await api(`/tables/${encodeURIComponent(t.name)}/search?${params}`, controller.signal);
    if (mine !== state.searchSeq) return;
    renderAnswer(answer, query, collapsed);
    refreshFreshness(answer.seq);
  } catch (error) {
    if (error.name === "AbortError" || mine !== state.searchSeq) return;
    renderError(error, query);
  } finally {
    if (state.searching === controller) state.searching = null;
  }
}

function facetNames(t) {
  // Mailbox (the partition), the month, then the fields declared facet.
  const all = (t.search.facets || []).filter((f) => f !== "year");
  const first = [t.search.partition, "month"].filter((f) => all.includes(f));
  return [...first, ...all.filter((f) => !first.includes(f))];
}

function syncLocation() {
  const params = new URLSearchParams();
  if (state.table) params.set("table", state.table.name);
  if (typed()) params.set("q", typed());
  if ($("sort").value !== "relevance") params.set("sort", $("sort").value);
  if (threadField() && !$("conversations").checked) params.set("conversations", "off");
  const url = params.toString() ? `?${params}` : location.pathname;
  history.replaceState(null, "", url);
}

// ---- rendering -----------------------------------------------------------

function renderNothing() {
  $("summary").hidden = true;
  $("did-you-mean").hidden = true;
  $("error").hidden = true;
  $("pager").hidden = true;
  $("hits").replaceChildren();
  $("facets").replaceChildren();
  renderSelected();
  showEmpty("");
}

function showEmpty(text) {
  $("empty").textContent = text;
  $("empty").hidden = text === "";
}

// Each answer shown (hits or an error) counts in <body data-answers>, with
// the typed query it answers in data-answered-for and its time in
// data-answered-at (performance.now()): what a test or a timing waits for.
function answered(query) {
  const data = document.body.dataset;
  data.answeredFor = query;
  data.answers = String(Number(data.answers || 0) + 1);
  data.answeredAt = performance.now().toFixed(1);
}

function renderAnswer(answer, query, collapsed) {
  answered(query);
  state.total = answer.total;
  state.hits = answer.hits;
  state.collapsed = collapsed;
  $("error").hidden = true;
  $("summary").hidden = false;
  $("total").textContent = String(answer.total);
  const [one, many] = collapsed ? ["conversation", "conversations"] : ["match", "matches"];
  $("total-label").textContent = answer.total === 1 ? one : many;
  $("took").textContent = `in ${answer.took_ms.toFixed(1)} ms`;
  const dym = answer.did_you_mean;
  $("did-you-mean").hidden = !dym;
  if (dym) $("did-you-mean-link").textContent = dym;
  $("hits").replaceChildren(...answer.hits.map(renderHit));
  renderFacets(answer.facets || {});
  renderSelected();
  const pages = Math.max(1, Math.ceil(answer.total / LIMIT));
  const page = Math.floor(state.offset / LIMIT) + 1;
  $("pager").hidden = answer.total <= LIMIT;
  $("page-of").textContent = `page ${page} of ${pages}`;
  $("prev").disabled = state.offset === 0;
  $("next").disabled = state.offset + LIMIT >= answer.total;
  showEmpty(answer.total === 0 ? "Nothing matches." : "");
}

function text(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "object" && value.base64 !== undefined) return `(binary, ${atob(value.base64).length} bytes)`;
  return String(value);
}

// A highlight of the API (`<em>` around matched words, the text between
// HTML-escaped: `&lt;` `&gt;` `&amp;`) as DOM nodes: the markers become
// marks, the text is unescaped and inserted as text, never parsed as HTML.
function marked(snippet) {
  const out = document.createDocumentFragment();
  const text = (s) => s.replace(/&(lt|gt|amp);/g, (_, e) => ({ lt: "<", gt: ">", amp: "&" })[e]);
  let inside = false;
  for (const part of snippet.split(/(<em>|<\/em>)/)) {
    if (part === "<em>") inside = true;
    else if (part === "</em>") inside = false;
    else if (part) out.append(inside ? el("mark", { textContent: text(part) }) : document.createTextNode(text(part)));
  }
  return out;
}

function when(rfc3339) {
  const d = new Date(rfc3339);
  return isNaN(d) ? "" : d.toISOString().slice(0, 16).replace("T", " ");
}

// Search fields the table's documents leave out by default (`display`).
function hiddenFields(t) {
  const display = t.search.display;
  return display && !display.includes("*") ? t.search.fields.filter((f) => !display.includes(f)) : [];
}

// A binary string (API.md, "Byte strings") as its bytes: UTF-8 as is,
// `\\` a backslash, `\xNN` any other byte.
function bytesOf(s) {
  const out = [];
  const utf8 = new TextEncoder();
  for (let i = 0; i < s.length;) {
    if (s[i] === "\\" && s[i + 1] === "x") { out.push(parseInt(s.slice(i + 2, i + 4), 16)); i += 4; }
    else if (s[i] === "\\" && s[i + 1] === "\\") { out.push(92); i += 2; }
    else { const ch = String.fromCodePoint(s.codePointAt(i)); out.push(...utf8.encode(ch)); i += ch.length; }
  }
  return new Uint8Array(out);
}

// A hit's whole document (or a thread view message's: `key` and
// `document` alike): the fields its answer left out or cropped, read from
// its row (a key that may not read rows keeps the cropped text).
async function wholeDocument(hit) {
  const t = state.table;
  const names = hiddenFields(t);
  if (!names.length) return hit.document || {};
  const key = Array.from(bytesOf(hit.key), (b) => "%" + b.toString(16).padStart(2, "0")).join("");
  const columns = names.map((n) => t.search.columns[n]);
  const row = await api(`/tables/${encodeURIComponent(t.name)}/rows/${key}?columns=${encodeURIComponent(columns.join(","))}`);
  const doc = { ...(hit.document || {}) };
  for (const name of names) {
    const cell = row.cells.find((c) => c.column === t.search.columns[name]);
    if (cell) doc[name] = new TextDecoder().decode(bytesOf(cell.value));
  }
  return doc;
}

// A conversation's senders as a list shows them: the first ones, then how
// many more.
function participants(names) {
  const shown = names.slice(0, 3).map(text);
  return names.length > 3 ? `${shown.join(", ")} +${names.length - 3}` : shown.join(", ");
}

function renderHit(hit, i) {
  const doc = hit.document || {};
  const marks = hit.highlights || {};
  const thread = hit.thread;
  const subject = el("div", { className: "subject" });
  subject.append(marks.subject ? marked(marks.subject) : text(doc.subject) || "(no subject)");
  if (thread && thread.messages > 1) {
    // How many of the conversation's messages match, of how many.
    const count = el("span", { className: "badge", title: "messages of this conversation that match, of all it holds",
      textContent: thread.matched === thread.messages ? `${thread.messages}` : `${thread.matched} of ${thread.messages}` });
    count.dataset.testid = "thread-count";
    count.dataset.matched = thread.matched;
    count.dataset.messages = thread.messages;
    subject.append(count);
  }
  const partition = state.table.search.partition;
  const who = thread ? participants(thread.participants) : text(doc.from);
  const meta = el("div", { className: "meta",
    textContent: [who, when(doc.date), partition ? text(doc[partition]) : ""].filter(Boolean).join(" · ") });
  const snippet = el("div", { className: "snippet" });
  const other = Object.keys(marks).find((f) => f !== "subject");
  if (other) snippet.append(marked(marks[other]));
  else snippet.textContent = text(doc.body);
  const item = el("li", { className: "hit", tabIndex: 0 }, subject, meta, snippet);
  item.dataset.testid = "hit";
  item.dataset.index = i;
  item.addEventListener("click", () => openHit(i));
  item.addEventListener("keydown", (e) => {
    // Enter's default would also press the view's close button, which has
    // the focus by then.
    if (e.key === "Enter") { e.preventDefault(); openHit(i); }
    else if (e.key === "ArrowDown") { e.preventDefault(); focusHit(i + 1); }
    else if (e.key === "ArrowUp") { e.preventDefault(); i === 0 ? $("q").focus() : focusHit(i - 1); }
  });
  return item;
}

function focusHit(i) {
  const hits = $("hits").children;
  if (hits[i]) hits[i].focus();
}

const FACET_TITLES = { month: "Month", year: "Year" };

function facetTitle(name) {
  if (name === state.table.search.partition) return "Mailbox";
  return FACET_TITLES[name] || name.charAt(0).toUpperCase() + name.slice(1);
}

// What clicking value `value` of facet `name` adds to the search.
function facetChoice(name, value) {
  if (name === state.table.search.partition) return { facet: name, value, param: "user" };
  if (name === "month" || name === "year") return { facet: name, value, clause: `date:${value}` };
  if (value.includes('"')) return null; // no phrase can hold it
  return { facet: name, value, clause: `${name}:"${value}"` };
}

function renderFacets(facets) {
  const sections = [];
  for (const name of Object.keys(facets)) {
    // By count, most first (a JSON object's numeric keys do not keep order).
    const values = Object.entries(facets[name]).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    if (values.length === 0) continue;
    const list = el("ul");
    for (const [value, count] of values) {
      const choice = facetChoice(name, value);
      const pressed = state.selected.some((s) => s.facet === name && s.value === value);
      const button = el("button", { type: "button", className: "facet", disabled: !choice },
        el("span", { className: "value", textContent: value, title: value }),
        el("span", { className: "count", textContent: ` ${count}` }));
      button.dataset.testid = "facet-value";
      button.dataset.facet = name;
      button.setAttribute("aria-pressed", String(pressed));
      button.addEventListener("click", () => toggleFacet(choice, pressed));
      list.append(el("li", {}, button));
    }
    const section = el("section", {}, el("h3", { textContent: facetTitle(name) }), list);
    section.dataset.facet = name;
    sections.push(section);
  }
  $("facets").replaceChildren(...sections);
}

function toggleFacet(choice, pressed) {
  state.selected = state.selected.filter((s) => s.facet !== choice.facet);
  if (!pressed) state.selected.push(choice);
  state.offset = 0;
  search();
}

function renderSelected() {
  $("selected").replaceChildren(...state.selected.map((s) => {
    const chip = el("button", { type: "button", className: "chip", textContent: `${facetTitle(s.facet)}: ${s.value} ×`,
      title: "remove this filter" });
    chip.dataset.testid = "selected-facet";
    chip.addEventListener("click", () => toggleFacet(s, true));
    return chip;
  }));
}

function renderError(error, query) {
  answered(query);
  state.hits = [];
  $("summary").hidden = true;
  $("did-you-mean").hidden = true;
  $("pager").hidden = true;
  $("hits").replaceChildren();
  $("facets").replaceChildren();
  showEmpty("");
  $("error").hidden = false;
  $("error").dataset.code = error.code;
  $("error-message").textContent = error.message;
  const [q, shift] = composed();
  const at = typeof error.position === "number" ? error.position - shift : -1;
  if (at >= 0 && at <= typed().length && q) {
    $("error-where").textContent = `${typed()}\n${" ".repeat(at)}^ at character ${at + 1}`;
  } else {
    $("error-where").textContent = "";
  }
}

// ---- the document view ---------------------------------------------------

// A conversation of several messages opens as its thread; anything else
// as its document.
function openHit(i) {
  const hit = state.hits[i];
  if (hit && hit.thread && hit.thread.messages > 1) openThread(i);
  else openDocument(i);
}

function openDocument(i) {
  const hit = state.hits[i];
  if (!hit) return;
  showDocument(hit, hit.document || {}, i);
  wholeDocument(hit).then((doc) => {
    if ($("document").open && $("document").dataset.index === String(i)) showDocument(hit, doc, i);
  }).catch(() => {});
}

function showDocument(hit, doc, i) {
  $("doc-title").textContent = text(doc.subject) || "(no subject)";
  const rows = [];
  for (const [name, value] of Object.entries(doc)) {
    if (name === "body") continue;
    rows.push(el("tr", {}, el("th", { textContent: name }), el("td", { textContent: text(value) })));
  }
  rows.push(el("tr", {}, el("th", { textContent: "key" }), el("td", { textContent: JSON.stringify(hit.key_fields || hit.key) })));
  $("doc-fields").replaceChildren(...rows);
  $("doc-body").textContent = text(doc.body);
  const dialog = $("document");
  dialog.dataset.index = i;
  if (!dialog.open) {
    dialog.showModal();
    $("doc-close").focus();
  }
}

// ---- the thread view -----------------------------------------------------

// Hit `i`'s conversation as a tree (GET /tables/{t}/threads/{id}), replies
// indented under what they answer, the messages that match the search
// (the same query within `thread:ID`) marked; a message opens its body.
async function openThread(i) {
  const hit = state.hits[i];
  const t = state.table;
  const id = hit.thread.id;
  const dialog = $("thread");
  dialog.dataset.index = i;
  dialog.dataset.thread = id;
  delete dialog.dataset.ready;
  $("thread-title").textContent = text((hit.document || {}).subject) || "(no subject)";
  $("thread-figures").textContent = "";
  $("thread-messages").replaceChildren();
  if (!dialog.open) {
    dialog.showModal();
    $("thread-close").focus();
  }
  const base = `/tables/${encodeURIComponent(t.name)}`;
  const params = searchParams({ limit: Math.min(hit.thread.matched, MATCH_LIMIT), typos: $("typos").checked ? "auto" : "off" });
  params.set("q", `(${params.get("q")}) ${threadField()}:${id}`);
  try {
    const [view, found] = await Promise.all([
      api(`${base}/threads/${id}`),
      api(`${base}/search?${params}`).catch(() => ({ hits: [] })),
    ]);
    if (!dialog.open || dialog.dataset.thread !== id) return;
    const matching = new Set(found.hits.map((h) => h.key));
    const marked = view.messages.filter((m) => matching.has(m.key)).length;
    $("thread-figures").textContent = `${view.count} ${view.count === 1 ? "message" : "messages"}, ${marked} matching`;
    $("thread-messages").replaceChildren(...view.messages.map((m, n) => renderMessage(m, n, matching.has(m.key))));
  } catch (error) {
    if (!dialog.open || dialog.dataset.thread !== id) return;
    $("thread-figures").textContent = `could not read the conversation: ${error.message}`;
  }
  dialog.dataset.ready = "true";
}

function renderMessage(message, n, matches) {
  const doc = message.document || {};
  const line = el("div", { className: "line" },
    el("strong", { textContent: text(doc.from) || "(no sender)" }), ` · ${when(doc.date)}`);
  if (matches) line.append(el("span", { className: "tag", textContent: "matches" }));
  const item = el("li", { className: matches ? "message match" : "message", tabIndex: 0 },
    line, el("div", { className: "subject", textContent: text(doc.subject) || "(no subject)" }));
  item.style.marginLeft = `${Math.min(message.depth, MAX_INDENT) * 1.25}rem`;
  item.dataset.testid = "thread-message";
  item.dataset.depth = message.depth;
  item.dataset.key = message.key;
  item.dataset.matched = String(matches);
  item.addEventListener("click", (e) => { if (!e.target.closest("pre")) toggleBody(item, message); });
  item.addEventListener("keydown", (e) => {
    const step = { ArrowDown: 1, ArrowUp: -1 }[e.key];
    if (e.key === "Enter") { e.preventDefault(); toggleBody(item, message); }
    else if (step) { e.preventDefault(); const next = $("thread-messages").children[n + step]; if (next) next.focus(); }
  });
  return item;
}

// Shows a thread view message's body under it, or hides it again.
async function toggleBody(item, message) {
  const shown = item.querySelector("pre");
  if (shown) return shown.remove();
  const body = el("pre", { textContent: "…" });
  body.dataset.testid = "message-body";
  item.append(body);
  try {
    body.textContent = text((await wholeDocument(message)).body);
  } catch (error) {
    body.textContent = `could not read the message: ${error.message}`;
  }
}

// ---- suggestions ---------------------------------------------------------

let suggestTimer = null;
function scheduleSuggest() {
  clearTimeout(suggestTimer);
  suggestTimer = setTimeout(suggest, DEBOUNCE_MS);
}

async function suggest() {
  if (state.suggesting) state.suggesting.abort();
  const q = $("q").value;
  if (!state.table || q.trim() === "" || /\s$/.test(q)) return hideSuggestions();
  const controller = new AbortController();
  state.suggesting = controller;
  const params = new URLSearchParams({ q, limit: "6" });
  const user = state.selected.find((s) => s.param === "user");
  if (user) params.set("user", user.value);
  try {
    const answer = await api(`/tables/${encodeURIComponent(state.table.name)}/suggest?${params}`, controller.signal);
    if ($("q").value !== q) return;
    renderSuggestions(answer.suggestions.filter((s) => s.text !== q.trim()));
  } catch (_) {
    hideSuggestions(); // a word that cannot be completed: nothing to offer
  }
}

function renderSuggestions(list) {
  const box = $("suggestions");
  state.suggestion = -1;
  box.replaceChildren(...list.map((s, i) => {
    const item = el("li", { role: "option", id: `suggestion-${i}` },
      el("span", { textContent: s.text }), el("span", { className: "muted", textContent: String(s.docs) }));
    item.dataset.text = s.text;
    item.addEventListener("mousedown", (e) => { e.preventDefault(); acceptSuggestion(s.text); });
    return item;
  }));
  box.hidden = list.length === 0;
  $("q").setAttribute("aria-expanded", String(!box.hidden));
}

function hideSuggestions() {
  clearTimeout(suggestTimer);
  if (state.suggesting) state.suggesting.abort();
  $("suggestions").hidden = true;
  $("suggestions").replaceChildren();
  state.suggestion = -1;
  $("q").setAttribute("aria-expanded", "false");
}

function moveSuggestion(step) {
  const items = [...$("suggestions").children];
  if ($("suggestions").hidden || items.length === 0) return false;
  // Positions -1 (the box itself) to length - 1, round and round.
  const positions = items.length + 1;
  state.suggestion = (state.suggestion + 1 + step + positions) % positions - 1;
  items.forEach((item, i) => item.setAttribute("aria-selected", String(i === state.suggestion)));
  const current = items[state.suggestion];
  if (current) $("q").setAttribute("aria-activedescendant", current.id);
  else $("q").removeAttribute("aria-activedescendant");
  return true;
}

function acceptSuggestion(text) {
  $("q").value = `${text} `;
  hideSuggestions();
  state.offset = 0;
  search();
  $("q").focus();
}

// ---- wiring --------------------------------------------------------------

function wire() {
  const q = $("q");
  q.addEventListener("input", () => {
    state.offset = 0;
    scheduleSearch();
    scheduleSuggest();
  });
  q.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      if (!moveSuggestion(1)) focusHit(0);
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      moveSuggestion(-1);
    } else if (e.key === "Enter") {
      e.preventDefault();
      const chosen = $("suggestions").children[state.suggestion];
      if (chosen) acceptSuggestion(chosen.dataset.text);
      else { hideSuggestions(); state.offset = 0; search(); }
    } else if (e.key === "Escape") {
      e.preventDefault();
      if (!$("suggestions").hidden) hideSuggestions();
      else { q.value = ""; state.offset = 0; search(); }
    }
  });
  // Leaving the box closes the list (after a click on it has landed).
  q.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== q) hideSuggestions(); }, 100));
  $("search-form").addEventListener("submit", (e) => e.preventDefault());
  $("table").addEventListener("change", (e) => chooseTable(e.target.value));
  $("sort").addEventListener("change", () => { state.offset = 0; search(); });
  $("typos").addEventListener("change", () => { state.offset = 0; search(); });
  $("conversations").addEventListener("change", () => { state.offset = 0; search(); });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - LIMIT); search(); });
  $("next").addEventListener("click", () => { state.offset += LIMIT; search(); });
  $("did-you-mean-link").addEventListener("click", (e) => {
    e.preventDefault();
    q.value = $("did-you-mean-link").textContent;
    state.offset = 0;
    search();
  });
  $("doc-close").addEventListener("click", () => $("document").close());
  $("document").addEventListener("close", () => focusHit(Number($("document").dataset.index)));
  $("thread-close").addEventListener("click", () => $("thread").close());
  $("thread").addEventListener("close", () => focusHit(Number($("thread").dataset.index)));
  $("key-button").addEventListener("click", () => $("key-dialog").showModal());
  $("key-form").addEventListener("submit", () => {
    const key = $("key-input").value.trim();
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else sessionStorage.removeItem(KEY_STORAGE);
    $("key-input").value = "";
    start();
  });
  document.addEventListener("keydown", (e) => {
    // "/" jumps to the search box, as on most search pages.
    if (e.key === "/" && document.activeElement !== q && !document.querySelector("dialog[open]")) {
      e.preventDefault();
      q.focus();
    }
  });
}

async function start() {
  try {
    await loadTables();
  } catch (error) {
    if (error.code !== "missing_key" && error.code !== "invalid_key") renderError(error, "");
  }
}

function restoreLocation() {
  const params = new URLSearchParams(location.search);
  if (params.get("q")) $("q").value = params.get("q");
  if (["relevance", "newest", "oldest"].includes(params.get("sort"))) $("sort").value = params.get("sort");
  if (params.get("conversations") === "off") $("conversations").checked = false;
}

wire();
restoreLocation();
start();
