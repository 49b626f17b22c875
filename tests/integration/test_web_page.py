"""The search page of `searchapp serve`, driven in a real browser: headless Chromium (the system's, never a
downloaded one) through Playwright, against `searchapp serve` started on loopback over a small index built with
the real model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed: pip install 'searchapp[server]'")
httpx = pytest.importorskip("httpx", reason="httpx (test extra) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")

from searchapp import Index, IndexConfig  # noqa: E402
from tests.server_helpers import free_port  # noqa: E402

CHROMIUM = os.environ.get("SEARCHAPP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH: apt-get install chromium (bash scripts/setup.sh --test does)"
)
expect = sync_api.expect
expect.set_options(timeout=30_000)  # a loaded CI machine; each wait ends as soon as the page is there
ROOT = Path(__file__).resolve().parents[2]
KEY = "s3cret key"

# Multi-byte characters before the passages: the API counts code points, JavaScript UTF-16 units.
GUIDE = (
    "# 🔑 Key guide\n\n"
    "Keys 🔐 are issued by the vault 🗝️ team. Every team asks the vault for its own keys.\n\n"
    "## Rotation\n\n"
    "Rotate the signing keys every quarter with the rotate command. The old key stays valid for one week.\n\n"
    "## Expiry\n\n"
    "Expired keys are refused by every service. Renew them before the end of the year.\n"
)
HOSTILE = 'Beware the payload: <script>alert(1)</script> and <img src=x onerror="alert(2)"> stay text.'


def notes() -> list[tuple[str, str, dict[str, Any]]]:
    """25 similar notes, enough for three pages of ten."""
    teams = ("security", "ops")
    return [(f"notes/keys-{i:02d}", f"Note {i}: rotate the signing keys of service number {i} every quarter.",
             {"team": teams[i % 2], "n": i}) for i in range(25)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, real_encoder) -> Path:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("web")
    (base / "docs").mkdir()
    (base / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    with Index(base / "ix", create=True, config=IndexConfig.from_flat(max_tokens=48), encoder=real_encoder) as ix:
        ix.ingest(base / "docs", collection="guides")
        ids, texts, metas = zip(*notes(), strict=True)
        ix.add_texts(list(texts), ids=list(ids), metadatas=list(metas))
        ix.add_texts([HOSTILE], ids=["hostile"], titles=['<b onmouseover="alert(3)">bold title</b>'],
                     metadatas=[{"note": "<img src=x onerror=alert(4)>"}])
    return base


class Server:
    """`searchapp serve` in its own process on a free loopback port, stopped by its PID."""

    def __init__(self, index: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "searchapp", "serve", "--index", str(index), "--port", str(self.port),
             "--read-only", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/ui/app.css", timeout=2)
                return
            except httpx.TransportError as exc:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("searchapp serve did not start: " + (self.proc.stderr.read() or "")) from exc
                time.sleep(0.2)

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        r = httpx.request(method, self.url + path, timeout=60, **kwargs)
        r.raise_for_status()
        return r.json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, 15)
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server(built: Path) -> Iterator[Server]:
    srv = Server(built / "ix")
    srv.api("POST", "/search", json={"query": "warm up", "k": 1})  # the server loads its model on first use
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        # As root (CI containers) Chromium's sandbox cannot start; the pages opened are this test's own.
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Tab:
    """A browser tab on the page, recording what a test must not see: dialogs, errors, other origins."""

    def __init__(self, browser: Any, url: str, **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.url = url
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[Any] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("request", lambda r: self.requests.append(r))

    def open(self, fragment: str = "") -> Any:
        self.page.goto(self.url + "/" + fragment)
        return self.page

    def search(self, query: str) -> Any:
        self.page.fill("#q", query)
        self.page.press("#q", "Enter")
        return settled(self.page)

    def close(self, expected_error: str | None = None) -> None:
        """Close the tab; fail on any dialog, script or console error (but ``expected_error``'s)."""
        self.context.close()
        assert not self.dialogs, self.dialogs
        assert not [e for e in self.errors if not (expected_error and expected_error in e)], self.errors
        others = [r.url for r in self.requests if not r.url.startswith(self.url + "/")]
        assert not others, others  # nothing fetched from another origin


@pytest.fixture()
def tab(browser: Any, server: Server) -> Iterator[Tab]:
    t = Tab(browser, server.url)
    yield t
    t.close()


def settled(page: Any) -> Any:
    """Wait until the page has drawn what it was asked for (it marks the results busy until then)."""
    expect(page.locator("#results")).to_have_attribute("aria-busy", "false")
    return page


def result_paths(page: Any) -> list[str]:
    return page.locator("#results .result .path").all_text_contents()


def test_a_query_shows_highlighted_results_their_context_and_their_document(tab: Tab, server: Server) -> None:
    page = tab.open()
    expect(page.locator("#q")).to_be_focused()
    expect(page.locator("#index-info")).to_contain_text("passages")
    tab.search("when are expired keys refused?")
    guide = str((server_root(server) / "docs" / "guide.md").resolve())
    api = server.api("POST", "/search", json={"query": "when are expired keys refused?", "k": 10})
    assert result_paths(page) == [h["path"] for h in api["hits"]]
    first = page.locator("#results .result").first
    hit = api["hits"][0]
    assert hit["path"] == guide and "refused" in hit["text"]
    marks = [m.lower() for m in first.locator(".snippet mark.term").all_text_contents()]
    assert marks and all(m.startswith(("expired", "keys", "refused")) for m in marks), marks
    assert first.locator(".snippet").text_content() == hit["text"]  # a short passage is shown whole

    first.locator("button.show-context").click()
    context = first.locator(".context")
    expect(context.locator("mark.passage")).to_have_text(hit["text"])
    want = server.api("GET", f"/passages/{hit['passage_id']}/context", params={"chars": 400})
    before, after = context.locator(".before").text_content(), context.locator(".after").text_content()
    # The document's own text, cut at a word's edge with an ellipsis where the context does not reach its ends.
    from_start = want["start"] == len(want["before"])
    assert before == want["before"] if from_start else want["before"].endswith(before.removeprefix("… "))
    assert before.strip() and want["after"].startswith(after.removesuffix(" …"))
    assert first.locator("button.show-context").get_attribute("aria-expanded") == "true"

    first.locator("a.open").click()
    expect(page.locator("#doc-view")).to_be_visible()
    document = server.api("GET", "/documents/" + quote(guide, safe=""))
    expect(page.locator("#doc-text")).to_have_text(document["text"], use_inner_text=False)
    # The passage is marked at its offsets, past emoji that take two UTF-16 units each.
    expect(page.locator("#target")).to_have_text(hit["text"])
    expect(page.locator("#target")).to_be_focused()
    assert page.locator("#doc-title").text_content() == hit["title"] and hit["title"]
    expect(page.locator("#doc-note")).to_contain_text("whitespace between passages")
    page.keyboard.press("Escape")
    expect(page.locator("#search-view")).to_be_visible()
    expect(page.locator("#q")).to_have_value("when are expired keys refused?")
    assert result_paths(page) == [h["path"] for h in api["hits"]]


def server_root(server: Server) -> Path:
    return Path(server.proc.args[server.proc.args.index("--index") + 1]).parent


def test_pages_of_ten_follow_the_ranking(tab: Tab, server: Server) -> None:
    page = tab.open()
    query = "rotate the signing keys of a service"
    tab.search(query)
    ranking = [h["path"] for h in server.api("POST", "/search", json={"query": query, "k": 1000})["hits"]]
    passages = server.api("GET", "/status")["passages"]
    assert len(ranking) == passages and 20 < passages < 30  # every passage: 25 notes, the hostile text, the guide's
    expect(page.locator("#prev")).to_be_disabled()
    shown = [result_paths(page)]
    while page.locator("#next").is_enabled():
        page.click("#next")
        settled(page)
        shown.append(result_paths(page))
        assert page.locator("#page-label").text_content() == f"Page {len(shown)}"
        assert page.locator("#results .rank").first.text_content() == str(10 * len(shown) - 9)
    assert shown == [ranking[:10], ranking[10:20], ranking[20:]]  # and no empty page after the last
    page.click("#prev")
    settled(page)
    assert result_paths(page) == ranking[10:20]
    asked = [(json.loads(r.post_data)["k"], json.loads(r.post_data).get("offset"))
             for r in tab.requests if r.url.endswith("/search")]
    # The API takes `offset`: page p asks for its own ten hits and one more (whether there is a next page).
    assert asked == [(11, 0), (11, 10), (11, 20), (11, 10)]
    assert len(page.locator("#results .result").all()) == 10


def test_snippet_highlights_sent_by_the_server_are_used(tab: Tab, server: Server) -> None:
    page = tab.open()
    query = "when are expired keys refused?"
    tab.search(query)
    hit = server.api("POST", "/search", json={"query": query, "k": 1})["hits"][0]
    snip = hit["snippet"]
    assert snip["highlights"], "the server marks the query's words"
    first = page.locator("#results .result").first
    chars = list(hit["text"])  # offsets are in code points
    window = "".join(chars[snip["start"] - hit["start"] : snip["end"] - hit["start"]])
    assert window in first.locator(".snippet").text_content()
    marks = ["".join(chars[s - hit["start"] : e - hit["start"]]) for s, e in snip["highlights"]]
    assert first.locator(".snippet mark").all_text_contents() == marks


def test_context_and_document_mark_the_query_as_the_server_says(tab: Tab, server: Server) -> None:
    page = tab.open()
    query = "rotating the expired keys"
    tab.search(query)
    hits = server.api("POST", "/search", json={"query": query, "k": 10})["hits"]
    hit = next(h for h in hits if "Rotate the signing keys" in h["text"])
    item = page.locator(f'#results .result[data-passage="{hit["passage_id"]}"]')
    item.locator("button.show-context").click()
    expect(item.locator(".context mark.passage")).to_be_visible()
    c = server.api("GET", f"/passages/{hit['passage_id']}/context", params={"chars": 400, "q": query})
    full, first = c["before"] + c["text"] + c["after"], c["start"] - len(c["before"])  # code points
    assert first == 0 and c["end"] + len(c["after"]) == c["n_chars"]  # the whole guide: nothing cut off
    want = [full[s - first : e - first] for s, e in c["highlights"]]
    # The server's stems: "rotating" marks "Rotation", "Rotate" and "rotate"; stopwords ("the") mark nothing.
    assert {"Rotation", "Rotate", "rotate", "keys", "Expired"} <= set(want) and "the" not in want
    assert item.locator(".context mark.term").all_text_contents() == want
    passage = [full[s - first : e - first] for s, e in c["highlights"] if c["start"] <= s and e <= c["end"]]
    assert item.locator(".context mark.passage mark.term").all_text_contents() == passage

    item.locator("a.open").click()
    expect(page.locator("#target")).to_be_focused()
    d = server.api("GET", "/documents/" + quote(hit["path"], safe=""), params={"q": query})
    assert page.locator("#doc-text mark.term").all_text_contents() == [
        d["text"][s - d["start"] : e - d["start"]] for s, e in d["highlights"]]
    assert page.locator("#target mark.term").all_text_contents() == passage
    expect(page.locator("#doc-text")).to_have_text(d["text"], use_inner_text=False)
    asked = [r.url for r in tab.requests if "/context?" in r.url or "/documents/" in r.url]
    assert len(asked) == 2 and all("q=rotating+the+expired+keys" in u for u in asked), asked


def test_filters_restrict_the_results(tab: Tab, server: Server) -> None:
    page = tab.open()
    page.click("#filters summary")
    page.fill("#meta", "team=ops, n=3, n=5, n=8")
    tab.search("rotate the signing keys")
    assert sorted(result_paths(page)) == ["notes/keys-03", "notes/keys-05"]  # 8 is a security note
    teams = page.eval_on_selector_all(
        "#results .meta li", "items => items.filter(i => i.firstChild.textContent === 'team')"
                             ".map(i => i.lastChild.textContent)")
    assert teams == ["ops", "ops"]
    page.fill("#meta", "")
    page.fill("#path-prefix", "notes/keys-1")
    tab.search("rotate the signing keys")
    want = server.api("POST", "/search", json={"query": "rotate the signing keys", "k": 10,
                                               "filters": {"path_prefix": "notes/keys-1"}})
    assert result_paths(page) == [h["path"] for h in want["hits"]] and len(want["hits"]) == 10
    assert all(p.startswith("notes/keys-1") for p in result_paths(page))
    page.fill("#path-prefix", "")
    page.fill("#meta", "team")
    tab.search("rotate the signing keys")
    expect(page.locator("#message")).to_have_text('metadata filter "team": use KEY=VALUE')
    assert page.locator("#results .result").count() == 0
    page.fill("#meta", "team=nobody")
    tab.search("rotate the signing keys")
    expect(page.locator("#message")).to_contain_text("No match")
    expect(page.locator("#message")).to_contain_text("without the filters")


def test_a_collection_is_picked_from_those_the_server_lists(tab: Tab, server: Server) -> None:
    # The page had no way to search one collection (the CLI, HTTP and MCP had).
    page = tab.open()
    page.click("#filters summary")
    names = page.eval_on_selector_all("#collection option", "options => options.map(o => o.value)")
    assert names == ["", *server.api("GET", "/status")["collections"]] == ["", "guides"]
    page.select_option("#collection", "guides")
    tab.search("rotate the signing keys")
    want = server.api("POST", "/search", json={"query": "rotate the signing keys", "k": 10,
                                               "filters": {"collection": "guides"}})
    assert result_paths(page) == [h["path"] for h in want["hits"]] and want["hits"]
    assert "collection=guides" in page.url
    page.select_option("#collection", "")
    tab.search("rotate the signing keys")
    assert any(p.startswith("notes/") for p in result_paths(page))


def test_untrusted_text_is_shown_as_text(tab: Tab) -> None:
    page = tab.open()
    tab.search("beware the payload")
    item = page.locator("#results .result", has_text="payload").first
    assert item.locator(".snippet").text_content() == HOSTILE
    assert item.locator(".title").text_content() == '<b onmouseover="alert(3)">bold title</b>'
    assert "<img src=x onerror=alert(4)>" in item.locator(".meta").text_content()
    item.locator("button.show-context").click()
    expect(item.locator("mark.passage")).to_have_text(HOSTILE)
    item.locator(".title").hover()
    item.locator("a.open").click()
    expect(page.locator("#doc-text")).to_have_text(HOSTILE)
    assert page.locator("#doc-title").text_content() == '<b onmouseover="alert(3)">bold title</b>'
    # No element was made from the text, so nothing could run: no script, image or bold tag anywhere.
    assert page.locator("body script, body img, body b").count() == 0
    assert page.evaluate("document.scripts.length") == 1  # app.js only
    assert not tab.dialogs


def test_no_good_match_is_said_plainly(tab: Tab) -> None:
    page = tab.open()
    tab.search("zebra xylophone marmalade")
    expect(page.locator("#message")).to_contain_text("No good match")
    assert page.locator("#results").get_attribute("class") == "results weak"
    tab.search("rotate the signing keys")
    expect(page.locator("#message")).to_contain_text("Results 1–10")
    page.click("text=lexical")
    expect(page.locator("#message")).to_contain_text("(lexical,")
    tab.search("zebra xylophone marmalade")
    expect(page.locator("#message")).to_contain_text("No match")
    assert page.locator("#results .result").count() == 0


def test_the_keyboard_alone_drives_the_page(tab: Tab) -> None:
    page = tab.open()
    expect(page.locator("#q")).to_be_focused()  # once the page knows it may search (no key needed here)
    page.keyboard.type("signing keys")
    page.keyboard.press("Enter")
    expect(page.locator("#results .result")).to_have_count(10)
    page.keyboard.press("ArrowDown")
    results = page.locator("#results .result")
    expect(results.nth(0)).to_be_focused()
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), outline  # the focus is visible
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(results.nth(2)).to_be_focused()
    page.keyboard.press("k")
    expect(results.nth(1)).to_be_focused()
    page.keyboard.press("Enter")
    expect(results.nth(1).locator(".context mark.passage")).to_be_visible()
    page.keyboard.press("o")
    expect(page.locator("#target")).to_be_focused()
    page.keyboard.press("Escape")
    expect(results.nth(1)).to_be_focused()  # back where the document was opened from
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.press("Tab")  # past the search button to the modes
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")  # hybrid -> dense, which searches again
    expect(page.locator("#message")).to_contain_text("(dense,")
    expect(page.locator("#q")).to_have_value("signing keys")


def test_the_page_fits_a_phone(browser: Any, server: Server) -> None:
    t = Tab(browser, server.url, viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True)
    page = t.open()
    t.search("rotate the signing keys")
    page.locator("#results .result").first.locator("button.show-context").click()
    expect(page.locator("#results .context mark.passage").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    t.close()


def test_a_server_with_a_key_asks_for_it_once(browser: Any, built: Path) -> None:
    srv = Server(built / "ix", "--api-key", KEY)
    try:
        t = Tab(browser, srv.url)
        page = t.open("#q=signing+keys&mode=lexical")
        expect(page.locator("#key-form")).to_be_visible()
        expect(page.locator("#key")).to_be_focused()
        assert page.locator("#search-view").is_hidden()
        page.fill("#key", "wrong")
        page.press("#key", "Enter")
        expect(page.locator("#key-error")).to_have_text("The server refused that key.")
        page.fill("#key", KEY)
        page.press("#key", "Enter")
        expect(page.locator("#results .result")).to_have_count(10)  # the search in the link, run once let in
        page.reload()  # the key is kept for this tab
        expect(page.locator("#results .result")).to_have_count(10)
        assert page.locator("#key-form").is_hidden()
        sent = [r.headers.get("authorization") for r in t.requests if r.url.endswith("/search")]
        assert sent == [f"Bearer {KEY}"] * 2
        assert page.evaluate("sessionStorage.getItem('searchapp.apiKey')") == KEY
        other = Tab(browser, srv.url)  # another tab (another session) is asked again
        expect(other.open().locator("#key-form")).to_be_visible()
        other.close(expected_error="401")  # Chromium logs the refused request
        t.close(expected_error="401")
    finally:
        srv.stop()


BIDI = "invoice\u202efdp.exe"  # reads "invoiceexe.pdf" where the override is obeyed


def test_control_and_bidi_characters_are_shown_as_the_cli_shows_them_and_each_hit_says_its_source(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, real_encoder,  # type: ignore[no-untyped-def]
) -> None:
    from searchapp.display import escapes, layout, printable

    base = tmp_path_factory.mktemp("bidi")
    (base / "docs").mkdir()
    (base / "docs" / f"{BIDI}.txt").write_text("The vault team's quarterly invoice, paid in full.\n", encoding="utf-8")
    with Index(base / "ix", create=True, config=IndexConfig.from_flat(max_tokens=48), encoder=real_encoder) as ix:
        ix.ingest(base / "docs")
        ix.add_texts(["A second invoice \u202edias\u202c with a \x1b]0;title\x07 and a \u2066note\u2069."],
                     ids=["forged-invoice"], titles=[BIDI], metadatas=[{"note": BIDI}])
    hidden = set(escapes()) - set(layout())

    def raw_controls(text: str) -> list[str]:
        return sorted({f"U+{ord(c):04X}" for c in text if c in hidden})

    srv = Server(base / "ix", "--lazy")  # lexical queries: no model needed
    try:
        t = Tab(browser, srv.url)
        page = settled(t.open("#q=invoice&mode=lexical"))
        expect(page.locator("#results .result")).to_have_count(2)
        hits = srv.api("POST", "/search", json={"query": "invoice", "mode": "lexical"})["hits"]
        by_source = {h["source"]: h for h in hits}
        assert set(by_source) == {"file", "text"}
        for item, hit in zip(page.locator("#results .result").all(), hits, strict=True):
            assert item.locator(".source").text_content() == hit["source"]
            assert item.locator(".path").text_content() == printable(hit["path"])
            assert item.locator(".title").text_content() == printable(hit["title"])
        text_item = page.locator("#results .result", has_text="forged-invoice")
        assert "\\u202edias\\u202c" in text_item.locator(".snippet").text_content()
        assert "\\x1b]0;title\\x07" in text_item.locator(".snippet").text_content()
        assert printable(BIDI) in text_item.locator(".meta").text_content()
        text_item.locator("button.show-context").click()
        expect(text_item.locator("mark.passage")).to_contain_text("\\u2066note\\u2069")
        assert raw_controls(page.evaluate("document.body.textContent")) == []
        assert raw_controls(page.title()) == []

        text_item.locator("a.open").click()
        expect(page.locator("#doc-view")).to_be_visible()
        expect(page.locator("#doc-text")).to_contain_text("\\u202edias\\u202c")
        assert page.locator("#doc-title").text_content() == printable(BIDI)
        expect(page.locator("#doc-source")).to_contain_text("text added through the API")
        assert raw_controls(page.evaluate("document.body.textContent")) == []
        assert raw_controls(page.title()) == []
        t.close()
    finally:
        srv.stop()
