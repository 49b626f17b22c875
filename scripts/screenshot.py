"""Take docs/search-page.png: the search page of `searchapp serve` over the bundled sample (data/sample/).

    .venv/bin/python scripts/screenshot.py [--query "how are passages split?"] [--out docs/search-page.png]

Builds an index of a copy of data/sample in a temporary folder (with the bundled model; the page then shows
that folder's paths, not those of the machine it ran on), serves it read-only on a free
loopback port, and drives the system's Chromium through Playwright (test extra; `apt-get install chromium`,
never `playwright install`): a query, the first result's context opened, a screenshot.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.error import URLError
from urllib.request import Request, urlopen

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", default="how are passages split?")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "search-page.png")
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    chromium = os.environ.get("SEARCHAPP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("no Chromium on PATH: apt-get install chromium")
    from playwright.sync_api import expect, sync_playwright

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "searchapp"]
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "ix"
        # The page shows each file's stored (absolute) path: a copy of the sample in the temporary folder,
        # ingested by a relative path from there, so that no path of the machine that took it is in the picture.
        shutil.copytree(ROOT / "data" / "sample", Path(tmp) / "sample")
        subprocess.run([*cli, "ingest", "sample", "--index", str(index)], check=True, env=env, cwd=tmp,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        server = subprocess.Popen([*cli, "serve", "--index", str(index), "--port", str(port), "--read-only"], env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    urlopen(url + "/ui/app.css", timeout=2).close()
                    break
                except (URLError, OSError):
                    if server.poll() is not None or time.monotonic() > deadline:
                        sys.exit("searchapp serve did not start")
                    time.sleep(0.2)
            # The server loads its model on the first query: not the time the page should show.
            warm = Request(url + "/search", data=b'{"query": "warm up", "k": 1}',
                           headers={"Content-Type": "application/json"})
            urlopen(warm, timeout=120).close()
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": args.width, "height": args.height})
                page.goto(url + "/")
                page.fill("#q", args.query)
                page.press("#q", "Enter")
                expect(page.locator("#results")).to_have_attribute("aria-busy", "false", timeout=60_000)
                page.locator("#results .result").first.locator("button.show-context").click()
                expect(page.locator("#results .context mark.passage").first).to_be_visible()
                page.locator("#q").blur()
                args.out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.out))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
