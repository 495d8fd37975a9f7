"""How `ssegrade batch` is told to run its containers on Ray: `--cluster ray`, or a
`--ray-address` given with a container engine; a bad combination is one line and exit 2,
before anything runs."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.cli.container_options import on_ray
from tests.support.realtask import ssegrade

ENGINES = ("local", "ray", "podman", "docker")


@given(
    st.sampled_from(ENGINES),
    st.sampled_from([None, "ray"]),
    st.sampled_from([None, "head:6379"]),
)
def test_containers_run_on_ray_when_asked_and_a_bad_combination_is_refused(
    engine: str, cluster: str | None, address: str | None
) -> None:
    containers = engine in ("podman", "docker")
    refused = (cluster is not None and not containers) or (address and engine == "local")
    if refused:
        with pytest.raises(click.UsageError) as caught:
            on_ray(engine, cluster, address)
        assert "\n" not in caught.value.message
    else:
        assert on_ray(engine, cluster, address) == (containers and bool(cluster or address))


@pytest.mark.parametrize(
    ("engine", "extra", "said"),
    [
        ("ray", ["--cluster", "ray"], "--cluster ray runs containers on Ray: give it with"),
        ("local", ["--cluster", "ray"], "--cluster ray runs containers on Ray: give it with"),
        ("local", ["--ray-address", "head:6379"], "--ray-address needs --engine ray, or"),
    ],
)
def test_a_bad_combination_is_one_line(
    tmp_path: Path, engine: str, extra: list[str], said: str
) -> None:
    (tmp_path / "jobs.jsonl").write_text("")
    args = ["batch", str(tmp_path / "jobs.jsonl"), "--results", str(tmp_path / "r")]
    done = ssegrade(*args, "--engine", engine, *extra)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert said in line, done.stderr
    assert not (tmp_path / "r").exists()
