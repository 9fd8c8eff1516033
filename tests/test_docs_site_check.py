"""The headless-browser pass over the built site (docs/check_site.py, ``make docs-check``).

The rules are tested without a browser; one test plants every defect the pass looks for in a two-page site and runs
the real browser on it where Chromium and Selenium are installed (``make docs-check`` needs them anyway)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_site", REPO / "docs" / "check_site.py")
check_site = importlib.util.module_from_spec(_spec)
sys.modules["check_site"] = check_site  # dataclasses look their module up there
_spec.loader.exec_module(check_site)


def test_requests_outside_the_site_are_found_and_own_ones_are_not():
    origin = "http://127.0.0.1:8123"
    urls = [
        f"{origin}/assets/main.css",
        "data:image/png;base64,AAAA",
        "https://fonts.googleapis.com/css?family=Roboto",
        "http://127.0.0.1:9999/other-server.js",
        "https://fonts.googleapis.com/css?family=Roboto",
        "blob:http://127.0.0.1:8123/abc",
    ]
    assert check_site.outside(urls, origin) == [
        "https://fonts.googleapis.com/css?family=Roboto",
        "http://127.0.0.1:9999/other-server.js",
    ]


def test_request_urls_come_from_the_performance_log():
    def entry(method, url):
        return {"message": json.dumps({"message": {"method": method, "params": {"request": {"url": url}}}})}

    log = [entry("Network.requestWillBeSent", "https://a.example/x.js"), entry("Network.responseReceived", "z")]
    assert check_site.requested_urls(log) == ["https://a.example/x.js"]


def test_pages_are_every_index_html_home_first(tmp_path):
    for folder in ("", "results/speed", "guides/mars", "results"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "index.html").write_text("<html></html>")
    (tmp_path / "404.html").write_text("<html></html>")
    assert check_site.site_pages(tmp_path) == ["", "guides/mars/", "results/", "results/speed/"]


def test_summary_names_every_problem_and_counts_pages():
    good = check_site.PageReport(path="")
    bad = check_site.PageReport(
        path="results/speed/",
        outside_requests=["https://fonts.example/f.woff2"],
        clipped_tables=[{"index": 3, "header": "a | b", "hidden_px": 40, "top_px": 900, "where": "in the open page"}],
        broken_images=["img/x.png"],
    )
    text = check_site.summary([good, bad])
    assert "results/speed/: request outside the site: https://fonts.example/f.woff2" in text
    assert "figure did not load: img/x.png" in text
    assert "table 3 (a | b) cut off by 40 px" in text
    assert text.endswith("2 pages checked, 1 with problems")
    assert good.ok and not bad.ok


def test_a_folder_without_a_built_site_is_one_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no built site"):
        check_site.check_site(tmp_path, tmp_path / "out")


def _browser_available() -> bool:
    return (
        importlib.util.find_spec("selenium") is not None
        and shutil.which("chromedriver") is not None
        and any(shutil.which(name) for name in check_site.BROWSERS)
    )


@pytest.mark.skipif(not _browser_available(), reason="needs Chromium, chromedriver and Selenium (make docs-check)")
def test_the_browser_pass_finds_planted_defects_and_passes_a_clean_page(tmp_path):
    site = tmp_path / "site"
    (site / "bad").mkdir(parents=True)
    clean = "<html><body><article><table><tr><th>a</th></tr><tr><td>1</td></tr></table></article></body></html>"
    (site / "index.html").write_text(clean)
    wide = "".join(f"<td>{'x' * 30}{i}</td>" for i in range(40))
    (site / "bad" / "index.html").write_text(
        "<html><head><link rel='stylesheet' href='https://fonts.googleapis.com/css?family=Roboto'></head><body>"
        "<article style='width:600px'><div style='overflow-x:auto'><table><tr><th>wide</th></tr>"
        f"<tr>{wide}</tr></table></div><img src='../missing.png'></article></body></html>"
    )
    reports = check_site.check_site(site, tmp_path / "out", width=1000, height=700)
    by_page = {r.path: r for r in reports}
    assert by_page[""].ok, check_site.summary(reports)
    bad = by_page["bad/"]
    assert bad.outside_requests == ["https://fonts.googleapis.com/css?family=Roboto"]
    assert bad.broken_images == ["../missing.png"]
    assert len(bad.clipped_tables) == 1 and bad.clipped_tables[0]["header"] == "wide"
    assert (tmp_path / "out" / "home.png").stat().st_size > 0 and (tmp_path / "out" / "bad.png").is_file()
    assert [r["path"] for r in json.loads((tmp_path / "out" / "report.json").read_text())] == ["", "bad/"]
