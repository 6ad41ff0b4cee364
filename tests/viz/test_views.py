"""Who sees whom, in a real Chromium against real node processes: the view matrix (``/views``),
the Cluster page's events, timeline and members, and the Node page's own-process figures.

One 4-node cluster per test (``slow``, ``browser``): a node is killed by pid and a partition is
injected with the control RPC's ``block``, as ``cluster.local`` does. Every wait is a condition
(``expect`` on the page, ``wait_for`` on the API), never a fixed sleep.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support import wait_for

from .conftest import LocalNodes, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TIMEOUT_MS = 30_000
CHANGE_MS = 60_000  # a kill or a partition seen by every live node (SWIM suspicion included)


def cell(page: Any, observer: int, subject: int) -> Any:
    return page.locator(f"#matrix td.cell[data-observer='{observer}'][data-subject='{subject}']")


def test_matrix_events_and_process_figures_after_a_kill(
    fresh_cluster4: LocalNodes, page: Any
) -> None:
    nodes = fresh_cluster4
    base = nodes.url(0)
    page.goto(f"{base}/views")
    expect(page.locator("#matrix td.cell[data-state='alive']")).to_have_count(
        16, timeout=TIMEOUT_MS
    )
    expect(page.locator("#banner.agree")).to_be_visible()
    expect(page.locator("#views-summary")).to_contain_text("every 2 s")
    periods = page.evaluate(
        "import('/viz/common/membership.js').then((m) => [4, 50, 51, 250, 1000].map(m.viewsPeriod))"
    )
    assert periods == [2000, 2000, 4000, 10000, 40000]  # one look per 2 s per 50 members
    disk = {"m1": {"latency_ms": 200, "errors": 10, "full": True}}
    said = page.evaluate(
        "(d) => import('/viz/common/membership.js').then((m) => m.faultsText("
        "{blocked: [], loss: {}, delay: {}, disk: d, active: true}))",
        disk,
    )
    assert said == "disk m1: 200 ms, 10 % errors, full"  # a disk fault is named, not hidden
    said = page.evaluate(
        "() => import('/viz/common/membership.js').then((m) => m.faultsText({blocked: [],"
        " loss: {}, delay: {}, cut: [3, 4], clock: {offset: -3600, rate: 1.5}, active: true}))"
    )
    assert said == "sends nothing to nodes 3, 4 · clock -3600 s x1.5"  # a cut and a clock too
    expect(page.locator("#matrix th[scope='row']")).to_have_count(4)

    # a kill: every live observer's row shows the dead subject; the dead node's row is marked
    nodes.kill(3)
    for observer in range(3):
        expect(cell(page, observer, 3)).to_have_attribute("data-state", "dead", timeout=CHANGE_MS)
    row = page.locator("#matrix tr[data-observer='3']")
    expect(row).to_have_class(re.compile(r"\bunreachable\b"), timeout=TIMEOUT_MS)
    expect(row.locator(".row-error")).to_contain_text("no answer: unreachable")
    expect(row.locator("td.cell[data-state='unknown']")).to_have_count(4)
    expect(page.locator("#banner.agree")).to_be_visible(timeout=CHANGE_MS)
    expect(page.locator("#banner")).to_contain_text("No view from node 3")
    screenshot(page, "views_after_kill")

    # the Cluster page: the kill in the events panel, the timeline, incarnation and since
    page.goto(f"{base}/")
    kill_event = page.locator("#events tr[data-subject='3'][data-new='dead']")
    expect(kill_event.first).to_be_visible(timeout=TIMEOUT_MS)
    expect(kill_event.first.locator(".ev-change")).to_contain_text("dead")
    first_row = page.locator("#events tbody tr").first
    seqs = [int(s) for s in page.locator("#events tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.seq)")]  # fmt: skip
    assert seqs == sorted(seqs, reverse=True), seqs  # newest first
    expect(first_row).to_be_visible()
    expect(page.locator("svg.band[data-subject='3'] rect[data-state='dead']")).to_have_count(1)
    expect(page.locator("svg.band")).to_have_count(4)
    card = page.locator("article.node-card[data-key='3']")
    expect(card.locator(".since")).to_contain_text(re.compile(r"changed \d+ (s|min) ago"))
    expect(card.locator(".inc")).to_contain_text(re.compile(r"incarnation \d+"))
    expect(page.locator("#fault-badge")).to_be_hidden()
    expect(page.locator("a#views-link")).to_have_attribute("href", "/views")
    screenshot(page, "cluster_after_kill")

    # the table view: sortable, filtered by state
    page.locator("#node-layout").select_option("table")
    rows = page.locator("#node-grid table.members tbody tr")
    expect(rows).to_have_count(4)
    page.get_by_role("button", name="State").click()
    expect(page.locator("table.members th[data-sort='state']")).to_have_attribute(
        "aria-sort", "ascending"
    )
    expect(rows.last).to_have_attribute("data-key", "3")  # dead sorts after alive
    page.locator("#node-filter").select_option("down")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-view", "dead")
    screenshot(page, "cluster_table_view")

    # the Node page: this process's own figures beside the whole machine's
    ident = nodes.harness.identity(nodes.nodes[1])
    assert ident is not None
    page.goto(f"{base}/viz/rt_admin/node.html?node=1")
    proc = page.locator("#process-body [data-scope='process']")
    expect(proc.locator("[data-k='pid']")).to_have_text(str(ident["pid"]), timeout=TIMEOUT_MS)
    expect(proc.locator("[data-k='port']")).to_have_text(str(ident["runtime_port"]))
    expect(proc.locator("[data-k='cpu'] .n")).to_have_text(re.compile(r"\d+\.\d %"))
    expect(proc.locator("[data-k='rss'] .n")).to_have_text(re.compile(r"\d.* (KiB|MiB|GiB)"))
    machine = page.locator("#process-body [data-scope='machine']")
    expect(machine).to_contain_text("Whole machine")
    expect(machine.locator("[data-k='machine-mem'] .n")).to_have_text(re.compile(r"\d+\.\d %"))
    screenshot(page, "node_process")


def test_banner_names_the_disagreement_after_a_partition(
    fresh_cluster3: LocalNodes, page: Any
) -> None:
    # A partition as ``rt_cluster partition 0,1 2`` makes it: each side blocks the other. Both
    # sides call the other dead and lead apart; node 0's page still shows node 2's row (the
    # views channel is not cut by injected faults) and names both leaders.
    nodes = fresh_cluster3
    base = nodes.url(0)
    page.goto(f"{base}/views")
    expect(page.locator("#matrix td.cell[data-state='alive']")).to_have_count(9, timeout=TIMEOUT_MS)
    expect(page.locator("#banner.agree")).to_be_visible()
    nodes.block(2, [0, 1])
    nodes.block(0, [2])
    nodes.block(1, [2])
    # every cross pair: node 2 leads alone only once it holds both 0 and 1 dead
    for observer, subject in ((2, 0), (2, 1), (0, 2), (1, 2)):
        wait_for(
            f"node {observer} to see node {subject} dead",
            lambda o=observer, s=subject: nodes.state_seen_by(o, s),
            until=lambda state: state == "dead",
            timeout=CHANGE_MS / 1000,
        )
    banner = page.locator("#banner.disagree")
    expect(banner).to_contain_text("2 leaders seen", timeout=TIMEOUT_MS)
    expect(banner).to_contain_text("node 0 (by nodes 0, 1); node 2 (by node 2)")
    expect(banner.locator("li.about[data-subject='0']")).to_contain_text("node 2 sees it dead")
    expect(cell(page, 2, 0)).to_have_attribute("data-state", "dead", timeout=TIMEOUT_MS)
    expect(cell(page, 2, 2)).to_have_attribute("data-state", "alive")
    expect(cell(page, 0, 0)).to_have_attribute("data-state", "alive")
    expect(cell(page, 0, 2)).to_have_attribute("data-state", "dead")
    faults = page.locator("#matrix tr[data-observer='2'] .fault-badge")
    expect(faults).to_contain_text("blocks nodes 0, 1")
    expect(page.locator("#matrix tr[data-observer='0'] .fault-badge")).to_contain_text(
        "blocks node 2"
    )
    screenshot(page, "views_partition")

    page.goto(f"{nodes.url(2)}/")
    expect(page.locator("#fault-badge")).to_contain_text("blocks nodes 0, 1", timeout=TIMEOUT_MS)
    screenshot(page, "cluster_partitioned_node")
