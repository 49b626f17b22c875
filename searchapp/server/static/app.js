// The search page of `searchapp serve`: plain DOM, no framework, nothing from another origin (the server's
// Content-Security-Policy allows only its own files).
//
// Everything that comes from the index (passage text, paths, titles, metadata) is untrusted: it reaches the page
// through textContent and createElement only, never as HTML, and every text shown goes through `shown`, the CLI's
// rule for control and bidi characters (the server's table: searchapp/display.py).
"use strict";

(() => {
  // What the page must know of the API, from the server itself (server/page.py writes it into the HTML): the
  // modes and the default one, max_k, max_query_chars and document_chars (one request's window of a document).
  const SETTINGS = JSON.parse(document.body.dataset.settings);
  const PAGE_SIZE = 10;
  const LAST_PAGE = Math.floor(SETTINGS.max_k / PAGE_SIZE) - 1; // offset and k stay within max_k
  const CONTEXT_CHARS = 400;
  // "No good match": the best hit shares no word with the query (BM25 0) and its cosine is below this. With
  // all-MiniLM-L6-v2, passages unrelated to a query score about 0 to 0.2, related ones 0.3 and above.
  const WEAK_COSINE = 0.25;
  const KEY_STORE = "searchapp.apiKey";

  const $ = (id) => document.getElementById(id);
  const ESCAPES = new Map(Object.entries(SETTINGS.escapes));
  const LAYOUT = new Set(SETTINGS.layout);

  /** `text` as the page shows it: each character of the server's table (controls, bidi marks, overrides and
   * isolates) as its visible escape, as the CLI prints it, so that "invoice\u202efdp.exe" cannot read as
   * "invoiceexe.pdf"; in a passage's text (`block`) white space stays its layout. */
  function shown(text, block = false) {
    let out = "";
    for (const ch of String(text)) out += ESCAPES.has(ch) && !(block && LAYOUT.has(ch)) ? ESCAPES.get(ch) : ch;
    return out;
  }

  /** Set a node's text (one line: `shown`); text is set as text, never parsed. */
  function setText(node, text) {
    node.textContent = shown(text);
  }

  /** An element with a class and text (shown as `setText` shows it). */
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) setText(e, text);
    return e;
  }

  /** A stretch of a passage's or document's text, as text (`shown` as a block). */
  function textNode(text) {
    return document.createTextNode(shown(text, true));
  }

  // ---- the API ---------------------------------------------------------------------------------------------

  class AuthNeeded extends Error {}

  async function api(path, body) {
    const headers = { Accept: "application/json" };
    const key = sessionStorage.getItem(KEY_STORE);
    if (key) headers.Authorization = "Bearer " + key;
    const init = { headers, cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    if (response.status === 401) throw new AuthNeeded("API key needed");
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      const message = data && data.error && data.error.message ? data.error.message : "HTTP " + response.status;
      throw new Error(message);
    }
    return data;
  }

  // ---- text: offsets and highlights (the server finds the query's words: the page has no rules of its own) -----

  /** The code-unit index of code point `cp` of `text` (the API counts code points, JavaScript code units). */
  function codeUnit(text, cp) {
    if (!/[\uD800-\uDFFF]/.test(text)) return Math.min(cp, text.length);
    let i = 0;
    for (let n = 0; n < cp && i < text.length; n++) i += text.codePointAt(i) > 0xffff ? 2 : 1;
    return i;
  }

  function codePoints(text) {
    let n = 0;
    for (const _ of text) n++;
    return n;
  }

  /** The server's highlights of `text`, a stretch of a document that starts at its offset `at` ([s, e] pairs in
   * document offsets, code points, in text order), as [start, end) code-unit ranges of `text`, in one pass. */
  function unitRanges(text, at, highlights) {
    const out = [];
    let cp = 0;
    let i = 0;
    const unit = (target) => {
      for (; cp < target && i < text.length; cp++) i += text.codePointAt(i) > 0xffff ? 2 : 1;
      return i;
    };
    for (const [s, e] of highlights || []) {
      if (s - at < cp) continue; // outside the text, or out of order: never sent by the server
      const start = unit(s - at);
      out.push([start, unit(e - at)]);
    }
    return out;
  }

  /** `text.slice(from, to)` as text nodes with <mark> around the parts of `ranges` (code units of `text`,
   * sorted) inside it. */
  function marked(text, ranges, from = 0, to = text.length) {
    const frag = document.createDocumentFragment();
    let pos = from;
    for (const [s, e] of ranges) {
      const start = Math.max(s, pos);
      const end = Math.min(e, to);
      if (end <= start) continue;
      if (start > pos) frag.append(textNode(text.slice(pos, start)));
      const term = el("mark", "term");
      term.append(textNode(text.slice(start, end)));
      frag.append(term);
      pos = end;
    }
    if (pos < to) frag.append(textNode(text.slice(pos, to)));
    return frag;
  }

  /** The part of a passage shown in the list: the server's snippet, a window of the passage and its highlights
   * in the document's offsets. */
  function snippet(hit) {
    const text = String(hit.text);
    const s = hit.snippet || { start: hit.start, end: hit.end, highlights: [] };
    const [[a, b]] = unitRanges(text, hit.start, [[s.start, s.end]]);
    const frag = document.createDocumentFragment();
    if (a > 0) frag.append("… ");
    frag.append(marked(text, unitRanges(text, hit.start, s.highlights), a, b));
    if (b < text.length) frag.append(" …");
    return frag;
  }

  // ---- state in the URL's fragment, so that Back, reload and links work -------------------------------------

  function readState() {
    const p = new URLSearchParams(location.hash.slice(1));
    const mode = SETTINGS.modes.includes(p.get("mode")) ? p.get("mode") : SETTINGS.mode;
    const page = Math.max(0, Math.min(Number.parseInt(p.get("page") || "0", 10) || 0, LAST_PAGE));
    return {
      q: p.get("q") || "", mode, prefix: p.get("prefix") || "", meta: p.get("meta") || "",
      collection: p.get("collection") || "", page,
      doc: p.get("doc"), passage: p.get("p"), at: Number.parseInt(p.get("s") || "0", 10) || 0,
    };
  }

  function searchParams(state) {
    const p = new URLSearchParams({ q: state.q, mode: state.mode });
    if (state.prefix) p.set("prefix", state.prefix);
    if (state.meta) p.set("meta", state.meta);
    if (state.collection) p.set("collection", state.collection);
    if (state.page) p.set("page", String(state.page));
    return p;
  }

  function go(params) {
    $("results").setAttribute("aria-busy", "true"); // until the view is drawn (screen readers, and tests)
    const hash = "#" + params.toString();
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  function docHash(state, hit) {
    const p = searchParams(state);
    p.set("doc", hit.path);
    p.set("p", String(hit.passage_id));
    p.set("s", String(hit.start));
    return "#" + p.toString();
  }

  // ---- filters -------------------------------------------------------------------------------------------

  /** "team=security, year=2024" -> {team: "security", year: 2024}, as the CLI's --filter reads it: a value is
   * JSON where it parses (numbers, true/false, "quoted, strings"), else the text; a repeated key takes any of
   * its values. Commas inside double quotes do not separate. */
  function parseMetadata(text) {
    const items = [];
    let current = "";
    let quoted = false;
    for (const ch of text) {
      if (ch === '"') quoted = !quoted;
      if ((ch === "," || ch === "\n") && !quoted) {
        items.push(current);
        current = "";
      } else current += ch;
    }
    items.push(current);
    const out = {};
    for (const item of items.map((i) => i.trim()).filter(Boolean)) {
      const at = item.indexOf("=");
      const key = at < 0 ? "" : item.slice(0, at).trim();
      if (!key) throw new Error(`metadata filter "${item}": use KEY=VALUE`);
      const raw = item.slice(at + 1);
      let value;
      try {
        value = JSON.parse(raw);
      } catch (_) {
        value = raw.trim();
      }
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        const before = Array.isArray(out[key]) ? out[key] : [out[key]];
        value = before.concat(Array.isArray(value) ? value : [value]);
      }
      out[key] = value;
    }
    return out;
  }

  function filtersOf(state) {
    const metadata = parseMetadata(state.meta);
    const filters = {};
    if (Object.keys(metadata).length) filters.metadata = metadata;
    if (state.prefix) filters.path_prefix = state.prefix;
    if (state.collection) filters.collection = state.collection;
    return Object.keys(filters).length ? filters : null;
  }

  // ---- the search view -----------------------------------------------------------------------------------

  const form = () => $("search-form");
  let searchSeq = 0;
  let lastSearch = "";

  function fillForm(state) {
    $("q").value = state.q;
    for (const radio of form().elements.mode) radio.checked = radio.value === state.mode;
    $("path-prefix").value = state.prefix;
    $("meta").value = state.meta;
    $("collection").value = state.collection;
    if (state.prefix || state.meta || state.collection) $("filters").open = true;
  }

  function formState(page) {
    const data = new FormData(form());
    return {
      q: String(data.get("q") || "").trim(), mode: String(data.get("mode") || SETTINGS.mode),
      prefix: String(data.get("prefix") || "").trim(), meta: String(data.get("meta") || "").trim(),
      collection: String(data.get("collection") || ""), page,
    };
  }

  function say(parts, cls) {
    const m = $("message");
    m.className = cls || "";
    m.replaceChildren(...parts.map((p) => (typeof p === "string" ? shown(p) : p)));
  }

  function quoted(text) {
    return el("q", "query", text);
  }

  function weak(hit) {
    if (!hit) return false;
    const lexicalNone = hit.lexical_score === null || hit.lexical_score === undefined || hit.lexical_score <= 0;
    const denseLow = hit.dense_score === null || hit.dense_score === undefined || hit.dense_score < WEAK_COSINE;
    return lexicalNone && denseLow;
  }

  function fmt(x) {
    return typeof x === "number" ? x.toFixed(3) : "–";
  }

  function metaList(metadata, cls) {
    const ul = el("ul", cls || "meta");
    for (const [k, v] of Object.entries(metadata || {})) {
      const li = el("li");
      li.append(el("span", "meta-key", k), el("span", "meta-value", typeof v === "string" ? v : JSON.stringify(v)));
      ul.append(li);
    }
    return ul;
  }

  function basename(path) {
    const parts = String(path).split(/[\\/]/);
    return parts[parts.length - 1] || String(path);
  }

  function renderHit(state, hit, rank) {
    const li = el("li", "result");
    li.tabIndex = 0;
    li.dataset.passage = String(hit.passage_id);
    const head = el("div", "head");
    const title = el("a", "title", hit.title || basename(hit.path));
    title.href = docHash(state, hit);
    const score = el("span", "score", fmt(hit.score));
    score.title = `score ${fmt(hit.score)} · cosine ${fmt(hit.dense_score)} · BM25 ${fmt(hit.lexical_score)}`;
    // Which the hit is, a file or a text added through the API: a text's id may look like a file's path.
    const kind = hit.source === "text" ? "text" : "file";
    const source = el("span", "source " + kind, kind);
    source.title = kind === "text" ? "a text added through the API, by its id" : "an ingested file, by its path";
    head.append(el("span", "rank", String(rank)), title, source, score);
    const snip = el("p", "snippet");
    snip.append(snippet(hit));
    const context = el("div", "context");
    context.id = "context-" + hit.passage_id;
    context.hidden = true;
    const toggle = el("button", "show-context", "Show in context");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("aria-controls", context.id);
    toggle.addEventListener("click", () => toggleContext(li, hit, state.q));
    const open = el("a", "open", "Open document");
    open.href = docHash(state, hit);
    const actions = el("div", "actions");
    actions.append(toggle, open);
    li.append(head, el("div", "path", hit.path));
    if (hit.section) li.append(el("div", "section", hit.section));
    if (hit.metadata && Object.keys(hit.metadata).length) li.append(metaList(hit.metadata));
    li.append(snip, actions, context);
    return li;
  }

  async function toggleContext(li, hit, query) {
    const box = li.querySelector(".context");
    const button = li.querySelector(".show-context");
    if (!box.hidden) {
      box.hidden = true;
      button.setAttribute("aria-expanded", "false");
      button.textContent = "Show in context";
      return;
    }
    box.hidden = false;
    button.setAttribute("aria-expanded", "true");
    button.textContent = "Hide context";
    if (box.dataset.loaded) return;
    box.replaceChildren(el("span", "muted", "Loading…"));
    try {
      const c = await api(`/passages/${encodeURIComponent(hit.passage_id)}/context?` +
        new URLSearchParams({ chars: CONTEXT_CHARS, q: query }));
      box.replaceChildren(contextView(c));
      box.dataset.loaded = "1";
    } catch (e) {
      if (e instanceof AuthNeeded) return askKey("The key was refused: enter it again.");
      box.replaceChildren(el("span", "error", "Could not load the context: " + e.message));
    }
  }

  function contextView(c) {
    const before = String(c.before);
    const after = String(c.after);
    // One text, before + passage + after, marked as the server says; shown in its three parts.
    const full = before + String(c.text) + after;
    const ranges = unitRanges(full, c.start - codePoints(before), c.highlights);
    const passageEnd = full.length - after.length;
    let from = 0;
    let to = full.length;
    // Where the context is cut inside the document, cut it at a word's edge rather than inside a word.
    const cutBefore = c.start - codePoints(before) > 0;
    const cutAfter = c.end + codePoints(after) < c.n_chars;
    if (cutBefore) {
      const space = before.search(/\s/);
      if (space >= 0 && space < 40) from = space + 1;
    }
    if (cutAfter) {
      const last = after.match(/\s\S*$/);
      if (last && after.length - last.index < 40) to = passageEnd + last.index;
    }
    const head = el("span", "before");
    if (cutBefore) head.append("… ");
    head.append(marked(full, ranges, from, before.length));
    const passage = el("mark", "passage");
    passage.append(marked(full, ranges, before.length, passageEnd));
    const tail = el("span", "after");
    tail.append(marked(full, ranges, passageEnd, to));
    if (cutAfter) tail.append(" …");
    const text = el("div", "context-text");
    text.append(head, passage, tail);
    const where = el("p", "muted small",
      `Characters ${c.start.toLocaleString()}–${c.end.toLocaleString()} of ${c.n_chars.toLocaleString()}; ` +
      "the whitespace between passages is not stored and is shown as line breaks.");
    const frag = document.createDocumentFragment();
    frag.append(text, where);
    return frag;
  }

  async function runSearch(state) {
    fillForm(state);
    document.title = state.q ? shown(state.q) + " – searchapp" : "searchapp";
    lastSearch = "#" + searchParams(state).toString();
    const results = $("results");
    if (!state.q) {
      results.replaceChildren();
      $("pager").hidden = true;
      say([]);
      return;
    }
    let filters;
    try {
      filters = filtersOf(state);
    } catch (e) {
      results.replaceChildren();
      $("pager").hidden = true;
      return say([e.message], "error");
    }
    const seq = ++searchSeq;
    // One hit more than the page shows: whether there is a next page, without an empty last page.
    const body = { query: state.q, mode: state.mode, k: PAGE_SIZE + 1, offset: state.page * PAGE_SIZE };
    if (filters) body.filters = filters;
    const slow = setTimeout(() => seq === searchSeq && say(["Searching…"], "muted"), 150);
    const t0 = performance.now();
    let data;
    try {
      data = await api("/search", body);
    } catch (e) {
      if (seq !== searchSeq) return;
      if (e instanceof AuthNeeded) return askKey("The key was refused: enter it again.");
      results.replaceChildren();
      $("pager").hidden = true;
      return say(["Search failed: " + e.message], "error");
    } finally {
      clearTimeout(slow);
    }
    if (seq !== searchSeq) return; // a newer search was started meanwhile
    const ms = Math.round(performance.now() - t0);
    const all = Array.isArray(data.hits) ? data.hits : [];
    const hits = all.slice(0, PAGE_SIZE);
    const more = all.length > PAGE_SIZE;
    results.replaceChildren(...hits.map((h, i) => renderHit(state, h, state.page * PAGE_SIZE + i + 1)));
    results.classList.toggle("weak", false);
    const first = state.page * PAGE_SIZE + 1;
    if (!hits.length && state.page === 0) {
      say([el("strong", null, "No match"), " for ", quoted(state.q),
        filters ? ". Try without the filters, or other words." : ". Try other words, or another mode."], "empty");
    } else if (!hits.length) {
      say(["No more results for ", quoted(state.q), "."], "empty");
    } else if (state.page === 0 && weak(all[0])) {
      results.classList.add("weak");
      say([el("strong", null, "No good match"), " for ", quoted(state.q),
        ": no passage shares a word with it or comes close in meaning. The nearest ones:"], "empty");
    } else {
      say([`Results ${first}–${first + hits.length - 1} for `, quoted(state.q), ` (${state.mode}, ${ms} ms)`]);
    }
    $("pager").hidden = state.page === 0 && !more;
    $("prev").disabled = state.page === 0;
    $("next").disabled = !more;
    $("page-label").textContent = "Page " + (state.page + 1);
  }

  // ---- the document view ---------------------------------------------------------------------------------

  async function showDocument(state) {
    const back = "#" + searchParams({ ...state, page: state.page }).toString();
    $("back").href = state.q ? back : "#";
    $("doc-title").textContent = "Loading…";
    setText($("doc-path"), state.doc);
    $("doc-source").textContent = "";
    $("doc-meta").replaceChildren();
    $("doc-note").textContent = "";
    $("doc-text").replaceChildren();
    // A window that holds the passage: from the start when it is near enough, else centred on it.
    const chars = SETTINGS.document_chars;
    const start = state.at < chars * 0.75 ? 0 : Math.max(0, state.at - Math.floor(chars / 2));
    const params = new URLSearchParams({ start, max_chars: chars });
    if (state.q) params.set("q", state.q);
    let d;
    try {
      d = await api(`/documents/${encodeURIComponent(state.doc)}?${params}`);
    } catch (e) {
      if (e instanceof AuthNeeded) return askKey("The key was refused: enter it again.");
      $("doc-title").textContent = "Could not open the document";
      setText($("doc-note"), e.message);
      return;
    }
    document.title = shown(d.title || basename(d.path)) + " – searchapp";
    setText($("doc-title"), d.title || basename(d.path));
    setText($("doc-path"), d.path);
    $("doc-source").textContent = d.source === "text" ? "A text added through the API (this is its id, not a file)"
      : "An ingested file";
    $("doc-meta").replaceWith(Object.assign(metaList(d.metadata), { id: "doc-meta" }));
    let note = "Rebuilt from the indexed passages (the full text is not stored): the whitespace between " +
      "passages is shown as line breaks.";
    if (d.truncated) {
      note += ` Showing characters ${(d.start + 1).toLocaleString()}–${d.end.toLocaleString()} of ` +
        `${d.n_chars.toLocaleString()}.`;
    }
    $("doc-note").textContent = note;
    const pre = $("doc-text");
    const ranges = unitRanges(d.text, d.start, d.highlights);
    const target = (d.passages || []).find((p) => String(p.passage_id) === String(state.passage));
    if (!target) {
      pre.append(marked(d.text, ranges));
      pre.focus();
      return;
    }
    const a = codeUnit(d.text, Math.max(0, target.start - d.start));
    const b = codeUnit(d.text, Math.max(0, target.end - d.start));
    const mark = el("mark", "passage");
    mark.id = "target";
    mark.tabIndex = -1;
    mark.append(marked(d.text, ranges, a, b));
    pre.append(marked(d.text, ranges, 0, a), mark, marked(d.text, ranges, b));
    mark.scrollIntoView({ block: "center" });
    mark.focus({ preventScroll: true });
  }

  // ---- views, keys, start --------------------------------------------------------------------------------

  let routeSeq = 0;
  let openedPassage = null; // the passage of the document on show, to come back to

  function route() {
    const seq = ++routeSeq;
    const state = readState();
    $("key-form").hidden = true;
    const inDoc = Boolean(state.doc);
    $("search-view").hidden = inDoc;
    $("doc-view").hidden = !inDoc;
    $("results").setAttribute("aria-busy", "true");
    let done;
    if (inDoc) {
      openedPassage = state.passage;
      done = showDocument(state);
    } else {
      const focusQuery = !document.activeElement || document.activeElement === document.body ||
        !$("search-view").contains(document.activeElement);
      const returning = openedPassage;
      openedPassage = null;
      done = runSearch(state).then(() => {
        // Back from a document: the keyboard goes on from the result that was opened.
        const item = returning && [...$("results").children].find((li) => li.dataset.passage === returning);
        if (item) item.focus();
        else if (focusQuery) $("q").focus();
      });
    }
    return done.finally(() => seq === routeSeq && $("results").setAttribute("aria-busy", "false"));
  }

  function askKey(message) {
    sessionStorage.removeItem(KEY_STORE);
    $("search-view").hidden = true;
    $("doc-view").hidden = true;
    $("key-form").hidden = false;
    $("key-error").textContent = message || "";
    $("key").value = "";
    $("key").focus();
  }

  function showInfo(status) {
    const parts = [`${status.documents} documents`, `${status.passages} passages`, status.model];
    if (status.read_only) parts.push("read-only");
    setText($("index-info"), parts.filter(Boolean).join(" · "));
    // The collections the server says the index holds (GET /status): the page keeps no list of its own.
    const picker = $("collection");
    for (const name of status.collections || []) {
      const option = document.createElement("option");
      option.value = name;
      setText(option, name);
      picker.append(option);
    }
    const named = (status.collections || []).length > 0;
    picker.hidden = !named;
    $("collection-label").hidden = !named;
  }

  async function connect() {
    try {
      showInfo(await api("/status"));
    } catch (e) {
      if (e instanceof AuthNeeded) {
        return askKey(sessionStorage.getItem(KEY_STORE) ? "The server refused that key." : "");
      }
      $("key-form").hidden = true;
      $("search-view").hidden = false;
      return say(["Cannot reach the index: " + e.message], "error");
    }
    route();
  }

  function moveFocus(step) {
    const items = [...$("results").children];
    if (!items.length) return;
    const current = items.indexOf(document.activeElement && document.activeElement.closest(".result"));
    const next = current + step;
    if (next < 0) $("q").focus();
    else items[Math.min(next, items.length - 1)].focus();
  }

  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement ||
      t instanceof HTMLSelectElement || (t instanceof HTMLElement && t.isContentEditable);
    if (!$("doc-view").hidden) {
      if (ev.key === "Escape") {
        ev.preventDefault();
        location.hash = $("back").getAttribute("href");
      }
      return;
    }
    if ($("search-view").hidden) return;
    if (typing) {
      if (t === $("q") && ev.key === "ArrowDown" && $("results").children.length) {
        ev.preventDefault();
        moveFocus(1);
      }
      return;
    }
    const item = t instanceof HTMLElement ? t.closest(".result") : null;
    if (ev.key === "/") {
      ev.preventDefault();
      $("q").focus();
      $("q").select();
    } else if (ev.key === "j" || ev.key === "ArrowDown") {
      ev.preventDefault();
      moveFocus(1);
    } else if (ev.key === "k" || ev.key === "ArrowUp") {
      ev.preventDefault();
      moveFocus(-1);
    } else if (ev.key === "Enter" && item && t === item) {
      ev.preventDefault();
      item.querySelector(".show-context").click();
    } else if (ev.key === "o" && item) {
      ev.preventDefault();
      location.hash = item.querySelector("a.open").getAttribute("href");
    } else if (ev.key === "Escape") {
      $("q").focus();
    }
  }

  /** The mode choices, the server's modes in its order, its default checked. */
  function modeChoices() {
    const box = form().querySelector(".modes");
    for (const mode of SETTINGS.modes) {
      const radio = el("input");
      radio.type = "radio";
      radio.name = "mode";
      radio.value = mode;
      radio.checked = mode === SETTINGS.mode;
      const label = el("label");
      label.append(radio, " " + shown(mode));
      box.append(label);
    }
  }

  function init() {
    modeChoices();
    $("q").maxLength = SETTINGS.max_query_chars;
    form().addEventListener("submit", (ev) => {
      ev.preventDefault();
      go(searchParams(formState(0)));
    });
    for (const radio of form().elements.mode) {
      radio.addEventListener("change", () => formState(0).q && go(searchParams(formState(0))));
    }
    $("prev").addEventListener("click", () => go(searchParams({ ...readState(), page: readState().page - 1 })));
    $("next").addEventListener("click", () => go(searchParams({ ...readState(), page: readState().page + 1 })));
    $("key-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(KEY_STORE, $("key").value.trim());
      connect();
    });
    window.addEventListener("hashchange", () => {
      if ($("key-form").hidden) route();
    });
    document.addEventListener("keydown", onKey);
    connect();
  }

  init();
})();
