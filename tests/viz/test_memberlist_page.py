"""The cluster page of a node speaking memberlist, with a Serf agent beside it, in Chromium.

The agent shows by name with its address, port and tags, marked ``external`` and without a
node page to link to; the views page names it ``not an rtsim node``.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from playwright.sync_api import expect

from cluster.local import free_port
from tests.support import Harness
from tests.support.serf import Agent, start_node

from .conftest import screenshot

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs Debian's serf"),
]

TIMEOUT_MS = 30_000


def test_the_cluster_page_shows_serf_agents_by_name(harness: Harness, page: Any) -> None:
    agent = Agent(harness, "serf-a", None, None, "role=web", "dc=east")
    node = start_node(harness, agent.port, None, port=free_port(), name="rt-0")
    page.goto(f"{node.url}/")
    cards = page.locator("#node-grid article.node-card")
    expect(cards).to_have_count(2, timeout=TIMEOUT_MS)
    serf = cards.filter(has_text="serf-a")
    expect(serf).to_have_attribute("data-state", "alive", timeout=TIMEOUT_MS)
    expect(serf.locator(".badge.external")).to_be_visible()
    expect(serf.locator("h3 a")).not_to_have_attribute("href", "")
    assert serf.locator("h3 a").get_attribute("href") is None  # no node page of its own
    expect(serf.locator(".ip")).to_have_text(f"IP 127.0.0.1:{agent.port} · dc=east, role=web")
    own = cards.filter(has_text="rt-0")
    expect(own.locator(".badge.self")).to_be_visible()
    expect(own.locator(".badge.external")).to_have_count(0)
    expect(own.locator("h3 a")).to_have_attribute("href", "/viz/rt_admin/node.html?node=0")
    screenshot(page, "memberlist_cluster")

    page.goto(f"{node.url}/viz/rt_admin/views.html")
    expect(page.locator("body")).to_contain_text("not an rtsim node", timeout=TIMEOUT_MS)
    screenshot(page, "memberlist_views")
