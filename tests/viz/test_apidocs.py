"""The API page (``/api/docs``) in a real Chromium against a real node: every operation of
``/openapi.json`` listed, Try it answering from the node, nothing loaded from elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import LocalNodes, get_json, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_api_page_lists_every_operation_and_tries_a_get(cluster1: LocalNodes, page: Any) -> None:
    base = cluster1.url(0)
    routes = get_json(f"{base}/api/routes")["routes"]
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda req: None if req.url.startswith((base, "data:")) else elsewhere.append(req.url),
    )
    page.goto(f"{base}/api/docs")
    expect(page.locator("details.op")).to_have_count(len(routes))
    expect(page.locator("details.op .badge.bad")).to_have_count(0)  # nothing undeclared
    op = page.locator("#get_api_nodes_node_workers")
    op.locator("summary").click()
    expect(op.locator("input[name='node']")).to_have_value("local")
    op.get_by_role("button", name="Send").click()
    expect(op.locator(".form-message.ok")).to_contain_text("→ 200")
    expect(op.locator("pre.json")).to_contain_text('"workers"')
    page.locator("#api-filter").fill("destroy")
    expect(page.locator("details.op:not([hidden])")).to_have_count(1)
    expect(page.locator("#api-count")).to_have_text("1 shown")
    page.locator("#api-filter").fill("")
    page.goto(f"{base}/api/docs#post_api_pools_compose")
    expect(page.locator("#post_api_pools_compose")).to_have_attribute("open", "")
    screenshot(page, "api_docs")
    assert elsewhere == [], f"the page asked other origins: {elsewhere}"
