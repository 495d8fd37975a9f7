"""The HTML report opened in a real headless browser (Chromium), when one is installed."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from interpreters.report_cli import report
from tests.runfolders import summary, write_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="Chromium is not installed (Debian package `chromium`)"
    ),
]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def browse(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium on the page with a fresh profile; fail the test if it fails."""
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


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
    assert dom.count("<details>") == 5


def test_page_renders_to_a_non_blank_screenshot(tmp_path: Path, page: Path) -> None:
    """A screenshot of the page has the window's size and more than a few colours."""
    shot = tmp_path / "shot.png"
    browse(tmp_path, page, "--window-size=1200,900", f"--screenshot={shot}")
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    assert len(set(pixels)) > 50
