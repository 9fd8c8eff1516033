"""Look at the built documentation site in a headless browser, page by page, before a release.

What a rule on the Markdown cannot see shows up only in a browser: a table wider than the column it sits in (its
right-hand columns hidden behind a scroll bar the reader may not notice), a figure that does not load, a font or
script fetched from the internet (an offline reader sees a broken page). This script serves ``site/`` on
127.0.0.1, opens every page in headless Chromium through Selenium, records every request the page makes, and
writes one screenshot per page beside a JSON report. It exits non-zero when any page has a problem.

Run it with ``make docs-check`` (builds the site first). Needs Chromium, its driver and Selenium:
``apt-get install chromium chromium-driver`` (or the browser of your system) and ``pip install selenium``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

# What the page reports about itself once loaded, every collapsed section opened as a reader would: images that
# failed, tables wider than the box that shows them.
# A table is cut off when its right edge passes the right edge of the content column or of the nearest ancestor
# that clips it (the theme wraps tables in a horizontally scrolling box).
PAGE_PROBE = """
document.querySelectorAll('details').forEach(d => { d.open = true; });
const article = document.querySelector('article') || document.body;
const limit = article.getBoundingClientRect().right;
const clipped = [];
document.querySelectorAll('article table').forEach((table, index) => {
  let right = limit;
  for (let node = table.parentElement; node && node !== document.body; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.overflowX !== 'visible') { right = Math.min(right, node.getBoundingClientRect().right); }
  }
  const box = table.getBoundingClientRect();
  if (box.right > right + 1) {
    const heading = table.closest('details') ? 'in a collapsed section' : 'in the open page';
    const head = Array.from(table.querySelectorAll('th')).map(th => th.textContent.trim()).slice(0, 3).join(' | ');
    clipped.push({index: index, hidden_px: Math.round(box.right - right), top_px: Math.round(box.top + window.scrollY),
                  where: heading, header: head});
  }
});
const broken = Array.from(document.images).filter(img => img.complete && img.naturalWidth === 0)
  .map(img => img.getAttribute('src'));
return {clipped_tables: clipped, broken_images: broken, title: document.title};
"""


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@dataclass
class PageReport:
    """One page: where it is, what it asked for outside the site, which tables were cut off, which images broke."""

    path: str
    outside_requests: list[str] = field(default_factory=list)
    clipped_tables: list[dict] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    screenshot: str | None = None

    @property
    def ok(self) -> bool:
        return not (self.outside_requests or self.clipped_tables or self.broken_images)


def site_pages(site: Path) -> list[str]:
    """Every page of a built MkDocs site, as the URL path a browser opens (``results/speed/``), home first."""
    pages = []
    for html in sorted(site.rglob("index.html")):
        relative = html.parent.relative_to(site).as_posix()
        pages.append("" if relative == "." else relative + "/")
    return sorted(pages, key=lambda page: (page != "", page))


def outside(urls: Iterable[str], origin: str) -> list[str]:
    """The requested URLs that leave the site: another host, or any scheme but the site's own, data: and blob:.

    Args:
        urls: every URL the page requested.
        origin: the site's own origin, ``http://127.0.0.1:PORT``.

    Returns:
        Those outside the site, deduplicated, in request order.
    """
    own = urlparse(origin)
    found: list[str] = []
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob", "about", "chrome-extension"):
            continue
        if parsed.scheme == own.scheme and parsed.netloc == own.netloc:
            continue
        if url not in found:
            found.append(url)
    return found


def requested_urls(performance_log: Sequence[dict]) -> list[str]:
    """URLs from Chromium's performance log (``Network.requestWillBeSent`` events)."""
    urls = []
    for entry in performance_log:
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def summary(reports: Sequence[PageReport]) -> str:
    """One line per problem, then a count; what a person reads before opening the screenshots."""
    lines = []
    for report in reports:
        page = report.path or "(home)"
        lines += [f"{page}: request outside the site: {url}" for url in report.outside_requests]
        lines += [f"{page}: figure did not load: {src}" for src in report.broken_images]
        lines += [
            f"{page}: table {t['index']} ({t['header']}) cut off by {t['hidden_px']} px {t['where']}, "
            f"{t['top_px']} px down"
            for t in report.clipped_tables
        ]
    bad = sum(not report.ok for report in reports)
    lines.append(f"{len(reports)} pages checked, {bad} with problems")
    return "\n".join(lines)


def _browser(width: int, height: int):
    try:
        from selenium import webdriver
    except ImportError as error:
        raise SystemExit(
            "docs check: Selenium is not installed: pip install selenium (and apt-get install chromium chromium-driver)"
        ) from error
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # the browser and driver of the system, named, so Selenium never tries to download one
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        missing = "Chromium" if browser is None else "chromedriver"
        raise SystemExit(f"docs check: {missing} is not installed: apt-get install chromium chromium-driver")
    options.binary_location = browser
    try:
        return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))
    except Exception as error:  # noqa: BLE001  (selenium raises several unrelated types for a missing browser)
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SystemExit(
            f"docs check: no headless Chromium could start ({first}); install it: apt-get install chromium "
            "chromium-driver"
        ) from error


def _serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the base class's name)
        pass


def check_site(site: Path, out: Path, width: int = 1280, height: int = 900) -> list[PageReport]:
    """Open every page, record its requests, probe its tables and images, save a full-page screenshot.

    Args:
        site: the built site (``mkdocs build`` output).
        out: folder for ``report.json`` and the screenshots (created; earlier screenshots are replaced).
        width, height: the browser window, a laptop's by default.

    Returns:
        One report per page, home first.
    """
    import base64

    if not (site / "index.html").is_file():
        raise SystemExit(f"docs check: {site} holds no built site (index.html missing); run make docs first")
    out.mkdir(parents=True, exist_ok=True)
    server, origin = _serve(site)
    driver = _browser(width, height)
    reports = []
    try:
        for page in site_pages(site):
            driver.get_log("performance")  # drop what earlier pages left in the log
            driver.get(f"{origin}/{page}")
            driver.execute_script("return document.fonts ? document.fonts.ready.then(() => true) : true")
            probe = driver.execute_script(PAGE_PROBE)
            urls = requested_urls(driver.get_log("performance"))
            name = (page.strip("/").replace("/", "_") or "home") + ".png"
            metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
            size = metrics["cssContentSize"]
            shot = driver.execute_cdp_cmd(
                "Page.captureScreenshot",
                {
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 12000), "scale": 1},
                },
            )
            (out / name).write_bytes(base64.b64decode(shot["data"]))
            reports.append(
                PageReport(
                    path=page,
                    outside_requests=outside(urls, origin),
                    clipped_tables=probe["clipped_tables"],
                    broken_images=probe["broken_images"],
                    screenshot=name,
                )
            )
    finally:
        driver.quit()
        server.shutdown()
    (out / "report.json").write_text(json.dumps([asdict(r) for r in reports], indent=1) + "\n", encoding="utf-8")
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=Path("site"), help="the built site (default: site)")
    parser.add_argument("--out", type=Path, default=Path("site-check"), help="screenshots and report.json")
    parser.add_argument("--width", type=int, default=1280, help="browser window width in CSS pixels")
    args = parser.parse_args(argv)
    reports = check_site(args.site, args.out, width=args.width)
    print(summary(reports))
    print(f"screenshots and report.json in {args.out}/")
    return 0 if all(report.ok for report in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
