"""What explore leaves in ``--out`` (issue 44): a second search never writes over the first's
failures without a word, and a failure's report shows the broken property in its Expectations
table, with its bound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.explore.plants import planted
from tests.support.clusters import run_main


@pytest.mark.python_swim
def test_a_second_search_refuses_an_out_with_failures_unless_overwrite(tmp_path: Path) -> None:
    search = ("explore", "--runs", "10", "--seed", "1", "--out", str(tmp_path))
    with planted("crash_on_confirm"):
        assert run_main(*search)[0] == 1
        (first,) = tmp_path.glob("failure-*.yaml")
        before = first.read_text()
        code, out, err = run_main(*search)
        assert code == 2
        assert out == ""
        assert err.strip().splitlines()[-1] == (
            f"rt_cluster: --out {tmp_path} holds an earlier search's failures "
            f"({first.stem}): give another --out, or --overwrite to write over them"
        )
        assert first.read_text() == before
        assert run_main(*search, "--overwrite")[0] == 1


@pytest.mark.python_swim
def test_a_failures_report_lists_the_broken_property_with_its_bound(tmp_path: Path) -> None:
    with planted("no_expiry"):
        assert run_main("explore", "--runs", "40", "--seed", "1", "--out", str(tmp_path))[0] == 1
    (file,) = tmp_path.glob("failure-*.yaml")
    html = (file.with_suffix("") / "report.html").read_text()
    table = html.split("<h2>Expectations</h2>", 1)[1].split("</table>", 1)[0]
    (row,) = [r for r in table.split("<tr>") if "property completeness" in r]
    assert "class='fail'" in row
    assert "within the derived death bound" in row  # the bound
    assert re.search(r"node \d", row)  # what was seen
