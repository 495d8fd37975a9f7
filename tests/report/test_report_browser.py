"""The HTML report opened in a real headless browser (Chromium), when one is installed."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from interpreters.cli.report import report
from tests.support.browserkit import browse
from tests.support.runfolders import summary, write_run

# Each test is skipped in `browse` when no Chromium is installed.
pytestmark = pytest.mark.slow


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the inflated image data of a PNG file."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat = b""
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        if kind == b"IDAT":
            idat += data[at + 8 : at + 8 + length]
        at += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.fixture
def page(tmp_path: Path) -> Path:
    """A report page over three rows and a few tasks, written with the command."""
    root = tmp_path / "results"
    for i, (model, agent) in enumerate(
        [("openai/gpt-5", "codex"), ("claude", "claude-code"), ("qwen", "openhands")]
    ):
        for task in range(5):
            status = "passed" if (task + i) % 3 else "failed"
            doc = summary(task=f"task-{task}", status=status)
            doc["task"]["scripts"]["test"] = "test.sh"
            doc["patch_result"]["func_test_success"] = status == "passed"
            if status == "failed":
                doc["patch_result"]["error_msg"] = f"Build failed (task {task})"
            write_run(root, f"task-{task}/{model}/{agent}/run-1", doc)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(report, [str(root), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def test_page_parses_with_its_chart_and_tables(tmp_path: Path, page: Path) -> None:
    """The browser builds the page: five chart panels, a bar per row and share, the tables."""
    dom = browse(tmp_path, page, "--dump-dom").stdout
    assert dom.count("<svg") == 5
    assert dom.count('class="bar"') == 3 * 3  # three rows; passed, build, functional
    assert "Per task" in dom
    runs = runs_table(dom)
    assert len(runs) == 15
    assert 'id="runs-filter"' in dom  # the script ran: the filter is there
    assert "Made by ssegrade " in dom


def runs_table(dom: str) -> list[str]:
    """The rows of the runs' table, in their order on the page."""
    body = dom[dom.index('<table id="runs">') :]
    body = body[body.index("<tbody>") : body.index("</tbody>")]
    return re.findall(r"<tr[^>]*>.*?</tr>", body, re.S)


def cell(row: str, index: int) -> str:
    """The text of a row's cell."""
    return re.sub(r"<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[index])


def test_the_address_filters_the_runs(tmp_path: Path, page: Path) -> None:
    """`#q=TEXT` (what typing in the filter keeps in the address) hides the runs whose line
    does not hold the text, whatever its case; the others stay shown."""
    dom = browse(tmp_path, page, "--dump-dom", fragment="q=BUILD%20FAILED").stdout
    rows = runs_table(dom)
    shown = [row for row in rows if not re.match(r"<tr[^>]*\bhidden", row)]
    assert shown
    assert all("Build failed (task" in row for row in shown)
    assert len(shown) == sum("Build failed (task" in row for row in rows) < len(rows)
    assert f"{len(shown)} of 15 runs" in dom


def test_the_address_sorts_the_runs(tmp_path: Path, page: Path) -> None:
    """`#sort=N&desc=1` sorts the runs by the Nth column, last first (what a click on its
    title does), and marks the column sorted."""
    dom = browse(tmp_path, page, "--dump-dom", fragment="sort=5&desc=1").stdout
    statuses = [cell(row, 5) for row in runs_table(dom)]
    assert statuses == sorted(statuses, reverse=True)
    assert statuses[0] == "passed"
    assert 'aria-sort="descending"' in dom
    unsorted = [cell(row, 5) for row in runs_table(browse(tmp_path, page, "--dump-dom").stdout)]
    assert unsorted != statuses  # by task, as written


def test_the_page_reads_whole_without_scripts(page: Path) -> None:
    """As written (what a reader without scripts sees), the runs' table is whole, in task
    order, with no filter to type in: the script makes it."""
    source = page.read_text()
    rows = runs_table(source)
    assert len(rows) == 15
    assert [cell(row, 0) for row in rows] == sorted(cell(row, 0) for row in rows)
    assert 'id="runs-filter"' not in source.replace('box.id = "runs-filter"', "")
