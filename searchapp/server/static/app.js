// The search page of `searchapp serve`: plain DOM, no framework, nothing from another origin (the server's
// Content-Security-Policy allows only its own files).
//
// Everything that comes from the index (passage text, paths, titles, metadata) is untrusted: it reaches the page
// through textContent and createElement only, never as HTML.
"use strict";

(() => {
  const PAGE_SIZE = 10;
  const MAX_K = 1000; // the API's bound on k (server/schemas.py): the last reachable page without `offset`
  const CONTEXT_CHARS = 400;
  const DOCUMENT_CHARS = 200000; // one request's window of a document (the API allows up to 1,000,000)
  const SNIPPET_CHARS = 300;
  // "No good match": the best hit shares no word with the query (BM25 0) and its cosine is below this. With
  // all-MiniLM-L6-v2, passages unrelated to a query score about 0 to 0.2, related ones 0.3 and above.
  const WEAK_COSINE = 0.25;
  const KEY_STORE = "searchapp.apiKey";
  // Words not worth highlighting (the index's lexical side drops the same kind of words).
  const STOP = new Set(("a an and are as at be but by do does for from how i in is it of on or that the this to " +
    "was what when where which who why will with you").split(" "));

  const $ = (id) => document.getElementById(id);

  /** An element with a class and text; text is set as text, never parsed. */
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
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

  // Whether /search takes `offset` (a later API may): then a page asks for its own hits only. Until then a page
  // asks for k = (page + 1) * PAGE_SIZE (+ 1) and shows the last PAGE_SIZE.
  let offsetSupport = null;
  function supportsOffset() {
    if (offsetSupport === null) {
      offsetSupport = api("/openapi.json").then(
        (schema) => {
          const request = schema && schema.components && schema.components.schemas &&
            schema.components.schemas.SearchRequest;
          return Boolean(request && request.properties && request.properties.offset);
        },
        () => false,
      );
    }
    return offsetSupport;
  }

  // ---- text: terms, offsets, highlights ----------------------------------------------------------------------

  /** The query's words worth highlighting, longest first (so a longer word wins where two start alike). */
  function queryTerms(query) {
    const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
    let terms = words.filter((w) => w.length > 1 && !STOP.has(w));
    if (!terms.length) terms = words;
    return [...new Set(terms)].sort((a, b) => b.length - a.length);
  }

  /** [start, end) code-unit ranges of the words of `text` that start with a query term, case-insensitively. */
  function termRanges(text, terms) {
    if (!terms.length || !text) return [];
    const alternatives = terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
    const re = new RegExp("(?<![\\p{L}\\p{N}])(?:" + alternatives + ")[\\p{L}\\p{N}]*", "giu");
    const out = [];
    for (const m of text.matchAll(re)) out.push([m.index, m.index + m[0].length]);
    return out;
  }

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

  /** Highlight offsets sent by the server (code points; [s, e] pairs or {start, end}) as code-unit ranges, or
   * null when they do not fit the text (then the page computes its own). */
  function serverRanges(text, highlights) {
    const total = codePoints(text);
    const out = [];
    for (const h of highlights) {
      const s = Array.isArray(h) ? h[0] : h && h.start;
      const e = Array.isArray(h) ? h[1] : h && h.end;
      if (!Number.isInteger(s) || !Number.isInteger(e) || s < 0 || e <= s || e > total) return null;
      out.push([codeUnit(text, s), codeUnit(text, e)]);
    }
    return out.sort((a, b) => a[0] - b[0]);
  }

  /** `text` as text nodes with <mark> around `ranges` (sorted; overlaps are merged). */
  function marked(text, ranges) {
    const frag = document.createDocumentFragment();
    let pos = 0;
    for (const [s, e] of ranges) {
      const start = Math.max(s, pos);
      if (e <= start) continue;
      if (start > pos) frag.append(text.slice(pos, start));
      frag.append(el("mark", "term", text.slice(start, e)));
      pos = e;
    }
    if (pos < text.length) frag.append(text.slice(pos));
    return frag;
  }

  /** Move a cut to a space nearby, and never between the two halves of a surrogate pair. */
  function cutAt(text, i, forward) {
    const limit = 40;
    for (let d = 0; d < limit; d++) {
      const j = forward ? i + d : i - d;
      if (j <= 0 || j >= text.length) return Math.max(0, Math.min(j, text.length));
      if (/\s/.test(text[j])) return forward ? j + 1 : j;
    }
    const low = text.charCodeAt(i);
    return low >= 0xdc00 && low <= 0xdfff ? i + 1 : i;
  }

  /** The part of a passage shown in the list: the server's snippet if it sent one, else a window of the
   * passage around its first matching word. */
  function snippet(hit, terms) {
    const s = hit.snippet;
    const text = String(hit.text);
    if (s && typeof s.text === "string" && Array.isArray(s.highlights)) {
      const ranges = serverRanges(s.text, s.highlights);
      if (ranges) return marked(s.text, ranges);
    }
    // The API's form: the window and its highlights in the document's offsets (code points), inside the passage.
    if (s && Number.isInteger(s.start) && Number.isInteger(s.end) && Array.isArray(s.highlights) &&
        Number.isInteger(hit.start)) {
      const a = s.start - hit.start;
      const b = s.end - hit.start;
      if (a >= 0 && b >= a && b <= codePoints(text)) {
        const shown = text.slice(codeUnit(text, a), codeUnit(text, b));
        const rel = s.highlights.map((h) => Array.isArray(h) ? [h[0] - s.start, h[1] - s.start] : null);
        const ranges = rel.every(Boolean) ? serverRanges(shown, rel) : null;
        if (ranges) {
          const frag = document.createDocumentFragment();
          if (a > 0) frag.append("… ");
          frag.append(marked(shown, ranges));
          if (b < codePoints(text)) frag.append(" …");
          return frag;
        }
      }
    }
    const ranges = termRanges(text, terms);
    if (text.length <= SNIPPET_CHARS) return marked(text, ranges);
    const first = ranges.length ? ranges[0][0] : 0;
    const start = first < SNIPPET_CHARS / 2 ? 0 : cutAt(text, first - 60, true);
    const end = start + SNIPPET_CHARS >= text.length ? text.length : cutAt(text, start + SNIPPET_CHARS, false);
    const inside = ranges.filter(([a, b]) => a >= start && b <= end).map(([a, b]) => [a - start, b - start]);
    const frag = document.createDocumentFragment();
    if (start > 0) frag.append("… ");
    frag.append(marked(text.slice(start, end), inside));
    if (end < text.length) frag.append(" …");
    return frag;
  }

  // ---- state in the URL's fragment, so that Back, reload and links work -------------------------------------

  function readState() {
    const p = new URLSearchParams(location.hash.slice(1));
    const mode = ["hybrid", "dense", "lexical"].includes(p.get("mode")) ? p.get("mode") : "hybrid";
    const page = Math.max(0, Math.min(Number.parseInt(p.get("page") || "0", 10) || 0, MAX_K / PAGE_SIZE - 1));
    return {
      q: p.get("q") || "", mode, prefix: p.get("prefix") || "", meta: p.get("meta") || "", page,
      doc: p.get("doc"), passage: p.get("p"), at: Number.parseInt(p.get("s") || "0", 10) || 0,
    };
  }

  function searchParams(state) {
    const p = new URLSearchParams({ q: state.q, mode: state.mode });
    if (state.prefix) p.set("prefix", state.prefix);
    if (state.meta) p.set("meta", state.meta);
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
    if (state.prefix || state.meta) $("filters").open = true;
  }

  function formState(page) {
    const data = new FormData(form());
    return {
      q: String(data.get("q") || "").trim(), mode: String(data.get("mode") || "hybrid"),
      prefix: String(data.get("prefix") || "").trim(), meta: String(data.get("meta") || "").trim(), page,
    };
  }

  function say(parts, cls) {
    const m = $("message");
    m.className = cls || "";
    m.replaceChildren(...parts);
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

  function renderHit(state, hit, rank, terms) {
    const li = el("li", "result");
    li.tabIndex = 0;
    li.dataset.passage = String(hit.passage_id);
    const head = el("div", "head");
    const title = el("a", "title", hit.title || basename(hit.path));
    title.href = docHash(state, hit);
    const score = el("span", "score", fmt(hit.score));
    score.title = `score ${fmt(hit.score)} · cosine ${fmt(hit.dense_score)} · BM25 ${fmt(hit.lexical_score)}`;
    head.append(el("span", "rank", String(rank)), title, score);
    const snip = el("p", "snippet");
    snip.append(snippet(hit, terms));
    const context = el("div", "context");
    context.id = "context-" + hit.passage_id;
    context.hidden = true;
    const toggle = el("button", "show-context", "Show in context");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", "false");
    toggle.setAttribute("aria-controls", context.id);
    toggle.addEventListener("click", () => toggleContext(li, hit, terms));
    const open = el("a", "open", "Open document");
    open.href = docHash(state, hit);
    const actions = el("div", "actions");
    actions.append(toggle, open);
    li.append(head, el("div", "path", hit.path));
    if (hit.metadata && Object.keys(hit.metadata).length) li.append(metaList(hit.metadata));
    li.append(snip, actions, context);
    return li;
  }

  async function toggleContext(li, hit, terms) {
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
      const c = await api(`/passages/${encodeURIComponent(hit.passage_id)}/context?chars=${CONTEXT_CHARS}`);
      box.replaceChildren(contextView(c, terms));
      box.dataset.loaded = "1";
    } catch (e) {
      if (e instanceof AuthNeeded) return askKey("The key was refused: enter it again.");
      box.replaceChildren(el("span", "error", "Could not load the context: " + e.message));
    }
  }

  function contextView(c, terms) {
    const text = el("div", "context-text");
    let before = String(c.before);
    let after = String(c.after);
    // Where the context is cut inside the document, cut it at a word's edge rather than inside a word.
    if (c.start - codePoints(before) > 0) {
      const space = before.search(/\s/);
      before = "… " + (space >= 0 && space < 40 ? before.slice(space + 1) : before);
    }
    if (c.end + codePoints(after) < c.n_chars) {
      const last = after.match(/\s\S*$/);
      after = (last && after.length - last.index < 40 ? after.slice(0, last.index) : after) + " …";
    }
    const passage = el("mark", "passage");
    passage.append(marked(c.text, termRanges(c.text, terms)));
    text.append(el("span", "before", before), passage, el("span", "after", after));
    const where = el("p", "muted small",
      `Characters ${c.start.toLocaleString()}–${c.end.toLocaleString()} of ${c.n_chars.toLocaleString()}; ` +
      "the whitespace between passages is not stored and is shown as line breaks.");
    const frag = document.createDocumentFragment();
    frag.append(text, where);
    return frag;
  }

  async function runSearch(state) {
    fillForm(state);
    document.title = state.q ? state.q + " – searchapp" : "searchapp";
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
    const byOffset = await supportsOffset();
    const body = { query: state.q, mode: state.mode };
    if (filters) body.filters = filters;
    // One hit more than the page shows: whether there is a next page, without an empty last page.
    if (byOffset) {
      body.k = PAGE_SIZE + 1;
      body.offset = state.page * PAGE_SIZE;
    } else {
      body.k = Math.min(MAX_K, (state.page + 1) * PAGE_SIZE + 1);
    }
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
    const hits = byOffset ? all.slice(0, PAGE_SIZE) : all.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
    const more = byOffset ? all.length > PAGE_SIZE : all.length > (state.page + 1) * PAGE_SIZE;
    const terms = queryTerms(state.q);
    results.replaceChildren(...hits.map((h, i) => renderHit(state, h, state.page * PAGE_SIZE + i + 1, terms)));
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
    $("doc-path").textContent = state.doc;
    $("doc-meta").replaceChildren();
    $("doc-note").textContent = "";
    $("doc-text").replaceChildren();
    // A window that holds the passage: from the start when it is near enough, else centred on it.
    const start = state.at < DOCUMENT_CHARS * 0.75 ? 0 : Math.max(0, state.at - DOCUMENT_CHARS / 2);
    let d;
    try {
      d = await api(`/documents/${encodeURIComponent(state.doc)}?start=${start}&max_chars=${DOCUMENT_CHARS}`);
    } catch (e) {
      if (e instanceof AuthNeeded) return askKey("The key was refused: enter it again.");
      $("doc-title").textContent = "Could not open the document";
      $("doc-note").textContent = e.message;
      return;
    }
    document.title = (d.title || basename(d.path)) + " – searchapp";
    $("doc-title").textContent = d.title || basename(d.path);
    $("doc-path").textContent = d.path;
    $("doc-meta").replaceWith(Object.assign(metaList(d.metadata), { id: "doc-meta" }));
    let note = "Rebuilt from the indexed passages (the full text is not stored): the whitespace between " +
      "passages is shown as line breaks.";
    if (d.truncated) {
      note += ` Showing characters ${(d.start + 1).toLocaleString()}–${d.end.toLocaleString()} of ` +
        `${d.n_chars.toLocaleString()}.`;
    }
    $("doc-note").textContent = note;
    const pre = $("doc-text");
    const target = (d.passages || []).find((p) => String(p.passage_id) === String(state.passage));
    if (!target) {
      pre.textContent = d.text;
      pre.focus();
      return;
    }
    const a = codeUnit(d.text, Math.max(0, target.start - d.start));
    const b = codeUnit(d.text, Math.max(0, target.end - d.start));
    const mark = el("mark", "passage");
    mark.id = "target";
    mark.tabIndex = -1;
    const passage = d.text.slice(a, b);
    mark.append(marked(passage, termRanges(passage, queryTerms(state.q))));
    pre.append(d.text.slice(0, a), mark, d.text.slice(b));
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
    $("index-info").textContent = parts.filter(Boolean).join(" · ");
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
    offsetSupport = null;
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

  function init() {
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
