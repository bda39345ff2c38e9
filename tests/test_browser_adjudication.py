"""AdjudicationView in a real headless Chromium (pytest-ipywidgets + Playwright).

Checks: two annotators' marks drawn side by side, character exact, with the
characters they do not both mark highlighted (and "no evidence" / "not
annotated" said as such); items come most disagreement first; a click on
Accept writes the gold annotation to the SQLite store (read back with
Store.load / adjudication()) and the gold row shows it; Majority with a
reason likewise; the filter bar finds items by text and by "no evidence",
shows the count, and a click in its list goes there; ←/→ and a Python change
of ``index`` redraw; hostile text and annotator names stay text; a saved
page shows the item and says it cannot save.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_events import settle_injected
from IPython.display import display
from polling import wait_until

from attnwidget.annotations import Store
from attnwidget.views import AdjudicationView

pytestmark = pytest.mark.browser

ROOT = ".attnw-adjudication"
HOSTILE = "<img src=x onerror=window.__xss=1>"
INJECTED = """() => ({
  xss: window.__xss ?? null,
  elements: document.querySelectorAll(
    '.attnw-adjudication img, .attnw-adjudication script, .attnw-adjudication svg'
  ).length,
  handlers: [...document.querySelectorAll('*')].filter(e =>
    [...e.attributes].some(a => /^on/i.test(a.name))).length,
})"""


def make_store(path: Path, names: tuple[str, str, str] = ("ana", "ben", "cy")) -> Store:
    """Four items; token F1 (ana vs ben): film 0, keys 2/3, same 1, dull only ana."""
    a, b, c = names
    store = Store(path, labels=["pos", "neg"])
    store.add_items(
        [
            {"id": "keys", "text": "the keys to the cabinet"},
            {"id": "same", "text": "all agree here"},
            {"id": "film", "text": "a truly great film"},
            {"id": "dull", "text": "dull and long"},
        ]
    )
    store.save("keys", annotator=a, char_spans=[(4, 8)], label="pos")  # "keys"
    store.save("keys", annotator=b, char_spans=[(4, 11)], label="pos")  # "keys to"
    store.save("keys", annotator=c, char_spans=[(4, 8)], label="neg")
    store.save("same", annotator=a, spans=[(0, 2)])
    store.save("same", annotator=b, spans=[(0, 2)])
    store.save("film", annotator=a, char_spans=[(8, 13)])  # "great"
    store.save("film", annotator=b, spans=[], no_evidence=True)
    store.save("dull", annotator=a, spans=[(0, 1)])
    return store


def wait_item(page: Any, item: str, timeout: float = 15000) -> None:
    page.locator(f'{ROOT}[data-item="{item}"][data-state="ready"]').wait_for(timeout=timeout)


def runs(page: Any, row: str, cls: str) -> list[str]:
    """Texts of a row's runs with class ``cls`` (row: an annotator's name, or "diff")."""
    selector = ".attnw-adj-diffrow" if row == "diff" else f'.attnw-adj-row[data-annotator="{row}"]'
    return page.locator(f"{ROOT} {selector} .attnw-adj-run.{cls}").all_text_contents()


def test_rows_side_by_side_accept_and_majority(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    store = make_store(tmp_path / "r.sqlite")
    view = AdjudicationView(store, annotators=["ana", "ben"])
    assert view.order == ["film", "keys", "same", "dull"]  # most disagreement first
    display(view)
    page = page_session
    wait_item(page, "film")
    rows = page.locator(f"{ROOT} .attnw-adj-row:not(.attnw-adj-diffrow)")
    assert rows.evaluate_all("rs => rs.map(r => [r.dataset.annotator, r.dataset.status])") == [
        ["ana", "saved"],
        ["ben", "no_evidence"],
        ["gold", "missing"],
    ]
    assert runs(page, "ana", "attnw-adj-mark") == ["great"]
    assert runs(page, "ben", "attnw-adj-mark") == []
    ben = page.locator(f'{ROOT} .attnw-adj-row[data-annotator="ben"]')
    assert "no evidence" in ben.inner_text()
    assert runs(page, "diff", "attnw-adj-diff") == ["great"]
    diff = page.locator(f"{ROOT} .attnw-adj-diffrow").inner_text()
    assert "5 characters not marked by all" in diff

    # → : the next item in disagreement order; marks are character exact.
    page.locator(ROOT).focus()
    page.keyboard.press("ArrowRight")
    wait_item(page, "keys")
    assert view.index == 1 and view.item_id == "keys"
    assert runs(page, "ana", "attnw-adj-mark") == ["keys"]
    assert runs(page, "ben", "attnw-adj-mark") == ["keys", " to"]
    assert runs(page, "diff", "attnw-adj-diff") == [" to"]
    assert runs(page, "diff", "attnw-adj-mark") == ["keys"]  # marked by both

    # Accept ben: gold in the store, linked to both sources, drawn at once.
    page.locator(f'{ROOT} .attnw-adj-accept[data-annotator="ben"]').click()
    page.locator(f'{ROOT} .attnw-adj-gold[data-status="saved"]').wait_for(timeout=10000)
    fresh = Store(tmp_path / "r.sqlite")
    gold = fresh.load("keys", annotator="gold")
    assert gold is not None and gold.char_spans == ((4, 11),)
    made = fresh.adjudication("keys")
    assert made is not None and made.rule == "ben" and made.reason is None
    assert [(a, r) for a, r, _ in made.sources] == [("ana", 1), ("ben", 1)]
    assert runs(page, "gold", "attnw-adj-mark") == ["keys", " to"]
    assert "accepted ben" in page.locator(f"{ROOT} .attnw-adj-how").inner_text()
    wait_until(lambda: view.last_saved is not None and view.last_saved["rule"] == "ben")
    assert view.rule == "ben"

    # Majority with a reason: a new gold revision, only "keys" (both mark it).
    page.locator(f"{ROOT} .attnw-adj-reason").fill("only the head noun")
    page.locator(f'{ROOT} .attnw-adj-merge[data-rule="majority"]').click()
    page.locator(f'{ROOT} .attnw-adj-how:has-text("only the head noun")').wait_for(timeout=10000)
    fresh = Store(tmp_path / "r.sqlite")
    gold = fresh.load("keys", annotator="gold")
    assert gold is not None and gold.revision == 2 and gold.char_spans == ((4, 8),)
    made = fresh.adjudication("keys")
    assert made is not None and made.rule == "majority" and made.reason == "only the head noun"
    assert runs(page, "gold", "attnw-adj-mark") == ["keys"]
    assert view.last_saved is not None and view.last_saved["revision"] == 2

    # A Python change of index redraws; a missing annotator shows as such.
    view.index = 3
    wait_item(page, "dull")
    assert page.locator(f'{ROOT} [data-annotator="ben"][data-status="missing"]').count() == 1
    assert page.locator(f'{ROOT} .attnw-adj-accept[data-annotator="ben"]').is_disabled()
    assert "fewer than two annotations" in page.locator(f"{ROOT} .attnw-adj-position").inner_text()
    view.item_id = "same"
    wait_item(page, "same")
    assert "all agree" in page.locator(f"{ROOT} .attnw-adj-diffrow").inner_text()
    page_watch.assert_clean()


def test_filter_bar_finds_and_jumps(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    view = AdjudicationView(make_store(tmp_path / "r.sqlite"), annotators=["ana", "ben"])
    display(view)
    page = page_session
    wait_item(page, "film")
    assert page.locator(f"{ROOT} .attnw-adj-count").text_content() == "4 items"
    page.locator(f"{ROOT} .attnw-adj-search").fill("CABINET")
    page.locator(f'{ROOT}[data-matches="1"][data-state="ready"]').wait_for(timeout=10000)
    assert view.filters == {"text": "CABINET"} and view.match_count == 1
    assert page.locator(f"{ROOT} .attnw-adj-count").text_content() == "1 of 4 items match"
    page.locator(f"{ROOT} .attnw-adj-match").click()  # jump there
    wait_item(page, "keys")
    assert view.index == 1

    page.locator(f"{ROOT} .attnw-adj-search").fill("")
    page.locator(f"{ROOT} .attnw-adj-noevidence").select_option("yes")
    wait_until(lambda: view.filters == {"no_evidence": True})
    page.locator(f'{ROOT}[data-matches="1"][data-state="ready"]').wait_for(timeout=10000)
    assert page.locator(f"{ROOT} .attnw-adj-match-id").all_text_contents() == ["film"]
    page.locator(f"{ROOT} .attnw-adj-match").click()
    wait_item(page, "film")

    page.locator(f"{ROOT} .attnw-adj-noevidence").select_option("")
    page.locator(f"{ROOT} .attnw-adj-maxf1").fill("0.7")
    wait_until(lambda: view.filters == {"max_token_f1": 0.7})
    page.locator(f'{ROOT}[data-matches="2"][data-state="ready"]').wait_for(timeout=10000)
    assert page.locator(f"{ROOT} .attnw-adj-match-id").all_text_contents() == ["film", "keys"]
    # Python sets the filters: the list follows.
    view.filters = {"annotator": "ben", "label": "pos"}
    page.locator(f'{ROOT}[data-matches="1"]').wait_for(timeout=10000)
    assert page.locator(f"{ROOT} .attnw-adj-match-id").all_text_contents() == ["keys"]
    page_watch.assert_clean()


def test_hostile_text_and_names_stay_text(
    tmp_path: Path, page_watch: Any, solara_test: Any, page_session: Any
) -> None:
    store = Store(tmp_path / "x.sqlite")
    text = f"a {HOSTILE} b </script><script>window.__xss=2</script>"
    store.add_items([{"id": HOSTILE, "text": text}])
    store.save(HOSTILE, annotator=HOSTILE, char_spans=[(2, 2 + len(HOSTILE))])
    store.save(HOSTILE, annotator='"><svg onload=window.__xss=3>', spans=[(0, 1)])
    view = AdjudicationView(store)
    display(view)
    page = page_session
    page.locator(f'{ROOT}[data-state="ready"]').wait_for(timeout=15000)
    names = page.locator(f"{ROOT} .attnw-adj-name").all_text_contents()
    assert HOSTILE in names and '"><svg onload=window.__xss=3>' in names
    assert HOSTILE in page.locator(f"{ROOT} .attnw-adj-run.attnw-adj-mark").all_text_contents()
    assert page.locator(f"{ROOT} .attnw-adj-match-id").all_text_contents() == [HOSTILE]
    page.locator(f"{ROOT} .attnw-adj-accept").first.click()
    page.locator(f'{ROOT} .attnw-adj-gold[data-status="saved"]').wait_for(timeout=10000)
    settle_injected(page, page_watch)
    assert page.evaluate(INJECTED) == {"xss": None, "elements": 0, "handlers": 0}
    page_watch.assert_clean()


def test_a_saved_page_shows_the_item_and_refuses_to_save(tmp_path: Path, open_page: Any) -> None:
    view = AdjudicationView(make_store(tmp_path / "r.sqlite"), annotators=["ana", "ben"])
    path = tmp_path / "adjudication.html"
    view.to_html(path)
    watch = open_page(path)
    page = watch.page
    wait_item(page, "film")
    assert page.locator(ROOT).get_attribute("data-matches") == "4"
    page.locator(f'{ROOT} .attnw-adj-merge[data-rule="union"]').click()
    page.locator(f'{ROOT}[data-error*="saved page"]').wait_for(timeout=5000)
    assert Store(tmp_path / "r.sqlite").load("film", annotator="gold") is None
    watch.assert_clean()
