"""The dashboard pages in a real Chromium against real node processes.

Every test here starts node processes (``slow``) and drives Chromium (``browser``). Sync tests:
pytest-trio only takes over ``async def`` tests, so playwright's sync API runs as usual.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from scenarios.format.bounds import derive
from swim import SwimConfig
from tests.support import wait_for

from .conftest import LocalNodes, get_json, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT_MS = 30_000
# A killed node is dead everywhere within the derived bound (about 10 s at 4 nodes, 99.9 %);
# the page then needs its refresh: both are allowed.
DEAD_MS = int(derive("dead", "kill", 4, SwimConfig(), real=True).seconds * 1000) + TIMEOUT_MS


def post_form(url: str, data: dict[str, str]) -> Any:
    body = "&".join(f"{k}={v}" for k, v in data.items()).encode()
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.read()


def pool_ids(base: str) -> dict[str, str]:
    return {p["pool_name"]: p["pool_id"] for p in get_json(f"{base}/api/pools")["pools"]}


# ---- every page renders (and its screenshots) ------------------------------------------------


def test_every_page_renders_live_data(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(0)
    ids = pool_ids(base)
    page.goto(f"{base}/")
    expect(page.locator("#node-grid article.node-card")).to_have_count(3, timeout=TIMEOUT_MS)
    expect(page.locator("#cpu-box .value")).to_have_text(re.compile(r"\d+\.\d %"))
    expect(page.locator("#workers-summary [data-k='processed'] .n")).to_have_text(re.compile(r"\d"))
    screenshot(page, "cluster")

    page.goto(f"{base}/viz/rt_admin/node.html?node=1")
    expect(page.locator("#workers-body table.workers tbody tr").first).to_be_visible()
    expect(page.locator("#workers-sub")).to_contain_text("node 1")
    expect(page.locator("#bdevs-body table.bdevs")).to_be_visible()
    expect(page.locator("#predictions-body table.predictions")).to_be_visible()
    models = page.locator("#predictions-body tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[6].textContent, r.cells[7].textContent])"
    )
    assert models
    for tasks, badge in models:  # the badge follows the task count (learning rate 0.2: 11)
        n = int(tasks)
        assert badge == ("not trained yet" if n == 0 else f"learning ({n}/11)" if n < 11
                         else "trained"), (tasks, badge)  # fmt: skip
    screenshot(page, "node")

    page.goto(f"{base}/viz/rt_admin/pools.html")
    expect(page.locator("#pools-body article.pool-card")).to_have_count(len(ids))
    # cards are sorted by pool id inside each module's section, stats stream in
    bdev_ids = page.locator("section.mod-section:has(h3 code:text-is('rt_bdev')) .pool-id")
    texts = bdev_ids.all_text_contents()
    assert texts == sorted(texts, key=lambda t: tuple(int(x) for x in t.split(".")))
    expect(page.locator("article.pool-card[data-key='1.0'] dl.kv")).to_be_visible()
    expect(page.locator("article.pool-card[data-key='1.0'] button.destroy")).to_have_count(0)
    screenshot(page, "pools")

    page.goto(f"{base}/viz/rt_admin/pool.html?pool=1.0")
    expect(page.locator("#stats-body pre.json")).to_contain_text("num_workers")
    screenshot(page, "pool")

    page.goto(f"{base}/viz/rt_admin/config.html")
    expect(page.locator("#routes-body")).to_contain_text("/api/nodes/{node}/workers")
    expect(page.locator("#settings-body")).to_contain_text("viz_port")
    screenshot(page, "config")

    page.goto(f"{base}/viz/rt_bdev/?pool={ids['demo_ram']}")
    expect(page.locator("#cap-text")).to_contain_text("used of")
    expect(page.locator("#stats-table")).to_contain_text("Operations")
    screenshot(page, "rt_bdev")

    page.goto(f"{base}/viz/rt_safe_bdev/?pool={ids['demo_array']}")
    expect(page.locator("#roster table.roster tbody tr")).to_have_count(4)
    screenshot(page, "rt_safe_bdev")

    page.goto(f"{base}/viz/rt_cte_core/?pool={ids['demo_cte']}")
    expect(page.locator("#targets-body table.targets tbody tr").first).to_be_visible()
    screenshot(page, "rt_cte_core")


def test_navigation_reaches_views_and_module_pages(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(0)
    page.goto(f"{base}/viz/rt_admin/config.html")
    nav = page.get_by_role("navigation", name="Sections")
    expect(nav.get_by_role("link", name="Views")).to_have_attribute("href", "/views")
    expect(nav.get_by_role("link", name="API")).to_have_attribute("href", "/api/docs")
    menu = nav.get_by_role("button", name="Modules")
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    links = page.locator("#nav-modules a")
    expect(links).to_have_count(3)  # rt_bdev, rt_safe_bdev, rt_cte_core ship pages
    expect(page.locator("#nav-modules a[data-mod='rt_bdev']")).to_have_attribute(
        "href", "/viz/rt_bdev/index.html"
    )
    page.keyboard.press("Escape")
    expect(page.locator("#nav-modules")).to_be_hidden()
    expect(menu).to_be_focused()
    menu.click()
    page.locator("#nav-modules a[data-mod='rt_safe_bdev']").click()
    expect(page).to_have_url(re.compile(r"/viz/rt_safe_bdev/index\.html"))
    expect(page.get_by_role("button", name="Modules")).to_have_attribute("aria-current", "page")
    # the header still fits a phone: nothing wider than the viewport, every tab reachable
    page.set_viewport_size({"width": 390, "height": 900})
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide at 390"
    nav = page.get_by_role("navigation", name="Sections")
    for name in ("Cluster", "Views", "Pools", "Config", "API"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()
    page.get_by_role("button", name="Modules").click()
    expect(page.locator("#nav-modules a[data-mod='rt_cte_core']")).to_be_in_viewport()
    screenshot(page, "nav_modules_menu")


def test_events_panel_starts_again_when_the_node_restarted(cluster3: LocalNodes, page: Any) -> None:
    """Between two polls the node restarts and counts its events from 1 again: the panel sees
    the new ``boot`` and reads the new history, not the old cursor (which would hide it)."""

    def event(seq: int, subject: int, new: str) -> dict[str, Any]:
        return {"seq": seq, "wall": 1_700_000_000.0 + seq, "mono": float(seq), "observer": 0,
                "subject": subject, "old": "alive", "new": new, "incarnation": 0,
                "cause": "test"}  # fmt: skip

    boots = {
        "before": [event(1, 1, "suspected"), event(2, 1, "alive"), event(3, 1, "suspected")],
        "after": [event(1, 2, "suspected"), event(2, 2, "dead")],
    }
    now = {"boot": "before"}

    def answer(route: Any) -> None:
        after = int(re.search(r"[?&]after=(\d+)", route.request.url).group(1))  # type: ignore[union-attr]
        held = boots[now["boot"]]
        events = [e for e in held if e["seq"] > after]
        body = {"node_id": 0, "events": events, "next": events[-1]["seq"] if events else after,
                "dropped": 0, "boot": now["boot"]}  # fmt: skip
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(re.compile(r".*/api/events\?.*"), answer)
    page.goto(f"{cluster3.url(0)}/")
    rows = page.locator("#events tbody tr")
    expect(rows).to_have_count(3, timeout=TIMEOUT_MS)
    now["boot"] = "after"
    expect(page.locator("#events tbody tr[data-subject='2']")).to_have_count(2, timeout=TIMEOUT_MS)
    expect(page.locator("#events tbody tr[data-subject='1']")).to_have_count(0)


def test_monitor_explorer_shows_raw_json(cluster3: LocalNodes, page: Any) -> None:
    page.goto(f"{cluster3.url(0)}/viz/rt_admin/pools.html")
    form = page.locator("#monitor-body form")
    expect(form.locator("select option[value='1.0']")).to_have_count(1, timeout=TIMEOUT_MS)
    form.locator("select").select_option("1.0")
    form.get_by_label("Routing").fill("broadcast")
    form.get_by_role("button", name="Run query").click()
    out = page.locator("#monitor-body pre.json")
    expect(out).to_contain_text('"query": "stats"')
    for node_id in range(3):
        expect(out).to_contain_text(f'"{node_id}": {{')
    expect(page.locator("#monitor-body .form-message")).to_contain_text("Answered by all 3 nodes")
    # a query no node knows is an error in red, not an all-null success
    form.get_by_label("Query").fill("no_such_query")
    form.get_by_role("button", name="Run query").click()
    msg = page.locator("#monitor-body .form-message")
    expect(msg).to_have_class(re.compile(r"\bbad\b"))
    expect(msg).to_contain_text("no_such_query")
    expect(page.locator("#monitor-body .monitor-nodes li.ok")).to_have_count(0)


# ---- Add Pool: typed form, validation, destroy -------------------------------------------------


def test_typed_form_creates_a_pool_and_the_corner_control_destroys_it(
    cluster3: LocalNodes, page: Any
) -> None:
    base = cluster3.url(0)
    page.goto(f"{base}/viz/rt_admin/pools.html")
    page.get_by_label("Find a module").fill("bdev")
    page.locator("#mod-list button[data-mod='rt_bdev']").click()
    form = page.locator("#add-form form")
    pool_id_input = form.get_by_label("Pool ID")
    expect(pool_id_input).to_have_value(re.compile(r"^\d+\.\d+$"))
    suggested = pool_id_input.input_value()
    assert suggested not in pool_ids(base).values()
    form.get_by_label("Pool name").fill("viz_test_dev")
    form.get_by_label("Capacity").fill("2MB")
    form.get_by_role("button", name="Create").click()
    expect(form.locator(".form-message")).to_contain_text(
        f"Created pool viz_test_dev ({suggested})"
    )
    card = page.locator(f"#pools-body article.pool-card[data-key='{suggested}']")
    expect(card).to_be_visible()
    expect(card.locator("h3 a")).to_have_attribute("href", f"/viz/rt_bdev/?pool={suggested}")
    expect(card.locator("dl.kv")).to_contain_text("bdev type")
    # a fresh suggestion replaces the id just used
    expect(pool_id_input).not_to_have_value(suggested)

    card.get_by_role("button", name=f"Shut down pool viz_test_dev ({suggested})").click()
    dialog = page.locator("dialog.confirm")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(f"Shut down pool viz_test_dev ({suggested})?")
    screenshot(page, "pools_confirm_destroy")
    dialog.get_by_role("button", name="Shut down").click()
    expect(card).to_have_count(0)
    expect(page.locator("#pools-message")).to_contain_text("shut down")
    assert "viz_test_dev" not in pool_ids(base)


def test_destroy_can_be_cancelled_with_the_keyboard(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(0)
    page.goto(f"{base}/viz/rt_admin/pools.html")
    card = page.locator("#pools-body article.pool-card[data-key='800.0']")
    button = card.locator("button.destroy")
    expect(button).to_be_visible(timeout=TIMEOUT_MS)
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator("dialog.confirm")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("dialog.confirm")).to_be_hidden()
    expect(button).to_be_focused()
    assert "800.0" in pool_ids(base).values()


def test_validate_with_bad_fields_shows_every_fields_error(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(0)
    before = pool_ids(base)
    page.goto(f"{base}/viz/rt_admin/pools.html")
    page.locator("#mod-list button[data-mod='rt_bdev']").click()
    form = page.locator("#add-form form")
    form.get_by_label("Pool name").fill("")
    form.get_by_label("Pool ID").fill("not-an-id")
    form.get_by_label("Capacity").fill("lots")
    form.get_by_role("button", name="Validate").click()
    for name in ("pool_name", "pool_id", "capacity"):
        err = form.locator(f".field-error[data-field='{name}']")
        expect(err).not_to_be_empty()
        expect(form.locator(f"[name='{name}']")).to_have_attribute("aria-invalid", "true")
    expect(form.locator(".field-error[data-field='pool_id']")).to_contain_text("not-an-id")
    expect(form.locator(".field-error[data-field='capacity']")).to_contain_text("lots")
    expect(form.locator(".form-message")).to_contain_text("3 fields")
    expect(form.locator("[name='pool_name']")).to_be_focused()
    screenshot(page, "pools_validate_errors")
    # a Validate creates nothing, and fixed fields clear their errors
    assert pool_ids(base) == before
    form.get_by_label("Pool name").fill("viz_valid")
    form.get_by_label("Pool ID").fill("990.0")
    form.get_by_label("Capacity").fill("1MB")
    form.get_by_role("button", name="Validate").click()
    expect(form.locator(".form-message")).to_contain_text("All fields are valid")
    expect(form.locator(".field-error:not(:empty)")).to_have_count(0)
    assert pool_ids(base) == before


def test_compose_editor_from_the_pools_page(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(0)
    page.goto(f"{base}/viz/rt_admin/pools.html")
    # rt_admin is the runtime itself: it is no module to add a pool of
    expect(page.locator("#mod-list button[data-mod='rt_bdev']")).to_be_visible()
    expect(page.locator("#mod-list button[data-mod='rt_admin']")).to_have_count(0)
    page.get_by_role("button", name="Compose from YAML…").click()
    form = page.locator("#add-form form")
    expect(form.get_by_label("Module (mod_name)")).to_have_value("rt_bdev")
    expect(page.locator("#compose-title")).to_have_text("Compose a rt_bdev pool")
    form.get_by_label("Module (mod_name)").select_option("rt_safe_bdev")
    expect(page.locator("#compose-title")).to_have_text("Compose a rt_safe_bdev pool")
    expect(form.get_by_label("Pool id")).to_have_value(re.compile(r"^\d+\.0$"))
    form.get_by_label("Pool name").fill("")
    form.get_by_label("Module parameters (YAML)").fill("- not\n- a mapping")
    form.get_by_role("button", name="Validate").click()
    expect(form.locator(".field-error[data-field='pool_name']")).not_to_be_empty()
    expect(form.locator(".field-error[data-field='config']")).to_contain_text("mapping")
    # a YAML error and an unknown key both name their line and column, under the YAML box
    form.get_by_label("Module (mod_name)").select_option("rt_bdev")
    form.get_by_label("Pool name").fill("viz_yaml")
    form.get_by_label("Module parameters (YAML)").fill("capacity: 1M\n  bad: [1")
    form.get_by_role("button", name="Validate").click()
    expect(form.locator(".field-error[data-field='config']")).to_contain_text("line 2, column")
    form.get_by_label("Module parameters (YAML)").fill("capacity: 1M\ncapacty: 2M")
    form.get_by_role("button", name="Validate").click()
    err = form.locator(".field-error[data-field='config']")
    expect(err).to_contain_text("capacty: line 2, column 1: unknown parameter 'capacty'")
    expect(err).to_contain_text("known: bdev_type, capacity")
    screenshot(page, "pools_compose_errors")
    # the page's own link opens the editor too
    page.goto(f"{base}/viz/rt_admin/pools.html#compose")
    expect(page.locator("#compose-title")).to_have_text(re.compile(r"^Compose a \w+ pool$"))


def test_compose_opened_before_the_module_list_came_offers_the_modules(
    cluster3: LocalNodes, page: Any
) -> None:
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:  # the list is held back until released
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route(re.compile(r".*/api/chimods$"), hold)
    page.goto(f"{cluster3.url(0)}/viz/rt_admin/pools.html")
    wait_for("the page to ask for the modules", lambda: len(held), until=bool, timeout=20)
    page.get_by_role("button", name="Compose from YAML…").click()
    expect(page.locator("#compose-title")).to_have_text("Loading the modules…")
    released = True
    for route in held:
        route.continue_()
    form = page.locator("#add-form form")
    expect(form.get_by_label("Module (mod_name)")).to_have_value("rt_bdev", timeout=TIMEOUT_MS)
    expect(page.locator("#compose-title")).to_have_text("Compose a rt_bdev pool")


# ---- module pages --------------------------------------------------------------------------------


def test_safe_bdev_page_replaces_a_member_and_recovery_reaches_100(
    cluster3: LocalNodes, page: Any
) -> None:
    base = cluster3.url(1)
    ids = pool_ids(base)
    array = ids["demo_array"]
    page.goto(f"{base}/viz/rt_safe_bdev/?pool={array}")
    row = page.locator("#roster tr[data-pool='{}']".format(ids["demo_m1"]))
    expect(row).to_contain_text("active", timeout=TIMEOUT_MS)
    row.get_by_role("button", name="Replace demo_m1").click()
    form = page.locator("#replace-body form")
    expect(form.get_by_label("Failed member")).to_have_value(ids["demo_m1"])
    expect(form.get_by_label("Failed member")).to_be_focused()
    form.get_by_label("New member name").fill("viz_spare")
    form.get_by_label("Capacity").fill("1MB")
    form.get_by_role("button", name="Replace and recover").click()
    expect(form.locator(".form-message")).to_contain_text("viz_spare")
    expect(page.locator("#roster")).to_contain_text("viz_spare")
    expect(page.locator("#recovery-pct")).to_have_text("100 %", timeout=TIMEOUT_MS)
    expect(page.locator("#recovery-text")).to_contain_text("slots recovered")
    expect(page.locator("#recovery-state")).to_have_text("complete")
    screenshot(page, "rt_safe_bdev_recovered")
    stats = get_json(f"{base}/api/pools/{array}/monitor?query=stats")["results"]
    s = next(v for v in stats.values() if v)
    assert s["recovery_ops_total"] > 0
    assert s["recovery_ops_completed"] == s["recovery_ops_total"]


def test_cte_page_registers_and_unregisters_a_target(cluster3: LocalNodes, page: Any) -> None:
    base = cluster3.url(2)
    cte = pool_ids(base)["demo_cte"]
    page.goto(f"{base}/viz/rt_cte_core/?pool={cte}")
    form = page.locator("#register-body form")
    form.get_by_label("Target name").fill("viz_tier")
    form.get_by_label("Capacity").fill("1MB")
    form.get_by_role("button", name="Register target").click()
    expect(form.locator(".form-message")).to_contain_text("Registered target viz_tier")
    row = page.locator("#targets-body tr[data-name='viz_tier']")
    expect(row).to_be_visible()
    row.get_by_role("button", name="Unregister viz_tier").click()
    page.locator("dialog.confirm").get_by_role("button", name="Unregister").click()
    expect(row).to_have_count(0, timeout=TIMEOUT_MS)
    names = [t["name"] for t in get_json(f"{base}/api/mod/rt_cte_core/{cte}/targets")["targets"]]
    assert "viz_tier" not in names


# ---- failures: a paused peer, a killed node -----------------------------------------------------


def test_node_page_of_a_paused_peer_shows_the_error_and_recovers(
    cluster3: LocalNodes, page: Any
) -> None:
    page.goto(f"{cluster3.url(0)}/viz/rt_admin/node.html?node=2")
    panel = page.locator("#workers-panel")
    expect(panel.locator("table.workers tbody tr").first).to_be_visible(timeout=TIMEOUT_MS)
    cluster3.pause(2)
    try:
        status = panel.locator(".panel-status")
        expect(status).to_be_visible(timeout=TIMEOUT_MS)
        expect(status).to_contain_text(re.compile(r"503|did not answer|timed out"))
        expect(panel).to_have_class(re.compile(r"\bstale\b"))
        expect(status).to_contain_text("last updated")
        expect(page.locator("#bdevs-panel .panel-status")).to_be_visible(timeout=TIMEOUT_MS)
        screenshot(page, "node_paused_peer")
    finally:
        cluster3.resume(2)
    expect(panel.locator(".panel-status")).to_be_hidden(timeout=60_000)
    expect(panel).not_to_have_class(re.compile(r"\bstale\b"))
    expect(page.locator("#bdevs-panel .panel-status")).to_be_hidden(timeout=60_000)
    wait_for(
        "node 2 alive again in node 0's view",
        lambda: cluster3.state_seen_by(0, 2),
        until=lambda state: state == "alive",
        timeout=60,
    )


def test_cluster_page_marks_a_killed_node_dead(fresh_cluster3: LocalNodes, page: Any) -> None:
    # a second tab on the node about to die: it must say so and keep its data, dimmed
    own = page.context.new_page()
    own.goto(f"{fresh_cluster3.url(2)}/")
    expect(own.locator("#node-grid article.node-card")).to_have_count(3, timeout=TIMEOUT_MS)
    page.goto(f"{fresh_cluster3.url(0)}/")
    cards = page.locator("#node-grid article.node-card")
    expect(cards).to_have_count(3, timeout=TIMEOUT_MS)
    for i in range(3):
        expect(cards.nth(i)).to_have_attribute("data-state", "alive")
    expect(page.locator("article.node-card[data-key='0'] .badge.leader")).to_be_visible()
    expect(page.locator("article.node-card[data-key='0'] .badge.self")).to_be_visible()
    fresh_cluster3.kill(2)
    dead = page.locator("article.node-card[data-key='2']")
    expect(dead).to_have_attribute("data-state", "dead", timeout=60_000)
    expect(dead).to_have_class(re.compile(r"\bdead\b"))
    expect(dead.locator(".badge.state")).to_have_text("dead")
    expect(cards).to_have_count(3)
    expect(page.locator("#cluster-summary")).to_contain_text("1 dead")
    screenshot(page, "cluster_dead_node")

    expect(own.locator(".net-status")).to_contain_text("unreachable", timeout=TIMEOUT_MS)
    expect(own.locator("#nodes-panel")).to_have_class(re.compile(r"\bstale\b"))
    expect(own.locator("#nodes-panel .panel-status")).to_contain_text("last updated")
    expect(own.locator("#node-grid article.node-card")).to_have_count(3)
    screenshot(own, "cluster_own_node_down")


# ---- scale -------------------------------------------------------------------------------------


def test_pools_page_with_500_pools_paints_and_bounds_stats_requests(
    cluster1: LocalNodes, page: Any
) -> None:
    base = cluster1.url(0)
    before = len(pool_ids(base))
    for i in range(500 - before):
        post_form(
            f"{base}/api/mod/rt_bdev/create",
            {"pool_name": f"s{i:03d}", "pool_id": f"{2000 + i}.0", "bdev_type": "noop",
             "capacity": "4K"},
        )  # fmt: skip
    assert len(pool_ids(base)) == 500
    in_flight = {"now": 0, "max": 0, "done": 0}

    def started(req: Any) -> None:
        if "/monitor?query=stats" in req.url:
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])

    def ended(req: Any) -> None:
        if "/monitor?query=stats" in req.url:
            in_flight["now"] -= 1
            in_flight["done"] += 1

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    page.goto(f"{base}/viz/rt_admin/pools.html")
    expect(page.locator("#pools-body article.pool-card")).to_have_count(500, timeout=TIMEOUT_MS)
    # stats stream in after the list, cards on screen first, then by pool id (the node
    # answers each stats query in tens of ms with 500 pools, so all 500 take a while)
    expect(page.locator("article.pool-card[data-key='1.0'] dl.kv")).to_be_visible()
    hundredth = page.locator("#pools-body article.pool-card[data-key='2100.0'] dl.kv")
    expect(hundredth).to_contain_text("bdev type", timeout=60_000)
    assert in_flight["done"] >= 100
    assert 1 <= in_flight["max"] <= 6, in_flight
    page.locator("#pool-filter").fill("s48")
    expect(page.locator("#pools-body article.pool-card")).to_have_count(10)
    screenshot(page, "pools_500_filtered")


def test_safe_bdev_page_shows_where_members_live_and_what_a_dead_node_puts_at_risk(
    fresh_cluster4: LocalNodes, page: Any
) -> None:
    urls = [fresh_cluster4.url(i) for i in range(4)]
    for i in (1, 2, 3):
        form = {"pool_name": f"vm{i}", "pool_id": f"90{i}.0", "bdev_type": "ram", "capacity": "1M"}
        post_form(f"{urls[i]}/api/mod/rt_bdev/create", form)
    config = "members: vm1@1,vm2@2\nparity_members: vm3@3\nmax_failures: 1\nrecover_pace_s: 0"
    post_form(f"{urls[0]}/api/pools/compose", {
        "mod_name": "rt_safe_bdev", "pool_name": "spread", "pool_id": "950.0",
        "config": urllib.parse.quote(config)})  # fmt: skip
    page.goto(f"{urls[0]}/viz/rt_safe_bdev/?pool=950.0")
    row = page.locator("#roster tr[data-node='2']")
    expect(row).to_contain_text("node 2", timeout=TIMEOUT_MS)
    expect(row).to_contain_text("alive")
    expect(page.locator("#degraded-banner")).to_be_hidden()
    fresh_cluster4.kill(2)
    banner = page.locator("#degraded-banner")
    expect(banner).to_be_visible(timeout=TIMEOUT_MS)
    # the banner shows at once (node 2 alive, then suspect); "dead" takes a death's bound
    expect(banner).to_contain_text(
        "1 of 3 members out of service (vm2 on node 2 (dead))", timeout=DEAD_MS
    )
    expect(banner).to_contain_text("One more member failure loses data.")
    expect(row).to_contain_text("dead")
    expect(row).to_contain_text("faulty")
    screenshot(page, "rt_safe_bdev_degraded")
    page.goto(f"{urls[0]}/viz/rt_admin/pools.html")
    card = page.locator("article.pool-card", has_text="spread")
    expect(card.locator(".members-where")).to_have_text(
        "vm1@1, vm2@2 (faulty), vm3@3", timeout=TIMEOUT_MS
    )
