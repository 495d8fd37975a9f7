"""The container engine's command lines (`ssegrade.batch._containers`) and the image jobs of a
jobs file (`ssegrade.batch._jobs`), checked without any engine, for podman and docker alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssegrade.batch import (
    BATCH_LABEL,
    RESULTS_AT,
    ContainerJob,
    Limits,
    batch_containers_argv,
    engine_problems,
    parse_jobs,
    remove_argv,
    run_argv,
)
from ssegrade.batch._containers import BUNDLE_AT, PATCH_AT, STAGING_AT

host_paths = st.lists(
    st.text("abcdefgh-_.0123456789", min_size=1, max_size=8).filter(lambda s: s not in (".", "..")),
    min_size=1,
    max_size=4,
).map(lambda parts: "/" + "/".join(parts))


@st.composite
def container_jobs(draw: st.DrawFn) -> ContainerJob:
    return ContainerJob(
        image=draw(st.sampled_from(["localhost/t:1", "ghcr.io/o/case/x@sha256:" + "a" * 64])),
        name=draw(st.text("abcdef0123456789-", min_size=1, max_size=20)),
        batch=draw(st.text("0123456789abcdef", min_size=1, max_size=16)),
        run_id=draw(st.text("abcdef0123456789", min_size=1, max_size=12)),
        bundle=draw(host_paths),
        patch=draw(host_paths),
        staging=draw(host_paths),
        task=draw(host_paths),
        repo=draw(host_paths),
        timeout=draw(st.integers(1, 10**5)),
        script_timeout=draw(st.none() | st.integers(1, 10**5)),
        agent_duration=draw(st.integers(0, 10**6)),
        agent_timeout=draw(st.booleans()),
        agent_exit_code=draw(st.none() | st.integers(-255, 255)),
        containment=draw(st.sampled_from([None, "full", "container", "weak"])),
        script_network=draw(st.sampled_from(["loopback", "host"])),
        script_env=tuple(draw(st.lists(st.sampled_from(["A", "TOKEN", "B_2"]), unique=True))),
        clean_env=draw(st.booleans()),
        limits=Limits(draw(st.integers(1 << 20, 1 << 40)), draw(st.integers(1, 10**5))),
    )


def _values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]


@given(container_jobs(), st.sampled_from(["podman", "docker"]))
def test_every_container_is_bounded_labelled_and_read_only_where_it_must_be(
    job: ContainerJob, engine: Any
) -> None:
    argv = run_argv(engine, job)
    split = argv.index(job.image)
    options, inside = argv[:split], argv[split + 1 :]
    assert options[:2] == ["run", "--rm"]
    assert _values(options, "--name") == [job.name]
    assert f"{BATCH_LABEL}={job.batch}" in _values(options, "--label")
    # network: none unless the scripts asked for the host's
    expected = "bridge" if job.script_network == "host" else "none"
    assert _values(options, "--network") == [expected]
    # capabilities: only full containment's two, only when full was chosen
    caps = _values(options, "--cap-add")
    assert caps == (["SYS_ADMIN", "NET_ADMIN"] if job.containment == "full" else [])
    assert "--privileged" not in options
    assert _values(options, "--security-opt") == ["no-new-privileges"]
    assert _values(options, "--memory") == [str(job.limits.memory)]
    assert _values(options, "--pids-limit") == [str(job.limits.pids)]
    (tmpfs,) = _values(options, "--tmpfs")
    assert tmpfs.startswith("/tmp:")
    assert f"size={job.limits.tmp_size}" in tmpfs
    mounts = _values(options, "-v")
    assert mounts == [
        f"{job.bundle}:{BUNDLE_AT}:ro",
        f"{job.patch}:{PATCH_AT}:ro",
        f"{job.staging}:{STAGING_AT}:rw",
    ]
    # variables: names only (values come from the engine's environment, never the argv)
    assert _values(options, "-e") == ["SSE_BASELINE=", *job.script_env]
    assert _values(options, "--entrypoint") == [f"{BUNDLE_AT}/ssegrade"]
    # inside: the bundle's evaluate, the job's facts
    assert inside[0] == "evaluate"
    assert _values(inside, "--patch") == [PATCH_AT]
    assert _values(inside, "--results") == [RESULTS_AT]
    assert _values(inside, "--task") == [job.task]
    assert _values(inside, "--repo") == [job.repo]
    assert _values(inside, "--timeout") == [str(job.timeout)]
    assert _values(inside, "--agent-duration") == [str(job.agent_duration)]
    assert ("--agent-timeout" in inside) == job.agent_timeout
    assert _values(inside, "--containment") == ([job.containment] if job.containment else [])
    assert _values(inside, "--script-network") == [job.script_network]
    assert _values(inside, "--script-env") == list(job.script_env)
    assert ("--clean-env" in inside) == job.clean_env


@pytest.mark.parametrize("bad", ["relative/path", "/a:b", "/a,b", "/a\nb"])
def test_a_host_path_that_would_split_a_mount_is_refused(bad: str) -> None:
    job = ContainerJob("i", "n", "b", "r", "/bundle", bad, "/s", "/ssebench", "/src")
    with pytest.raises(ValueError, match="cannot be mounted"):
        run_argv("podman", job)


def test_the_batch_label_finds_and_removes_its_containers_on_both_engines() -> None:
    for engine in ("podman", "docker"):
        listed = batch_containers_argv(engine, "b7")
        assert listed[:2] == ["ps", "--all"]
        assert f"label={BATCH_LABEL}=b7" in listed
        assert remove_argv(engine, ["x", "y"])[-2:] == ["x", "y"]
        assert "--force" in remove_argv(engine, ["x"])


def _problems(*lines: dict[str, Any]) -> list[tuple[int, str]]:
    _jobs, problems = parse_jobs("\n".join(json.dumps(line) for line in lines).encode())
    return [(p.line, p.message) for p in problems]


def test_image_jobs_default_to_ssebench_layout_and_name_their_bad_lines() -> None:
    jobs, problems = parse_jobs(b'{"image": "localhost/k:1", "patch": "p"}\n')
    assert problems == []
    assert jobs[0][1].task == "/ssebench"
    assert jobs[0][1].repo is None
    assert _problems(
        {"image": "i", "patch": "p", "task": "tasks/x"},
        {"image": "i", "patch": "p", "repo": "/src/../etc"},
        {"task": "t", "patch": "p", "build": "ctx"},
        {"task": "t", "patch": "p", "script_network": "host"},
        {"image": "a b", "patch": "p"},
        {"image": "i", "patch": "p", "script_network": "wide"},
        {"patch": "p"},
    ) == [
        (1, "task: in an image job, an absolute path in the image ('tasks/x')"),
        (2, "repo: in an image job, an absolute path in the image ('/src/../etc')"),
        (3, "build: for image jobs only (give `image`)"),
        (4, "script_network: for image jobs only (give `image`)"),
        (5, "image: 'a b' is not an image reference"),
        (6, "script_network: Input should be 'loopback' or 'host'"),
        (7, "task: required key is missing"),
    ]


def test_an_image_job_needs_a_container_engine_and_a_container_engine_image_jobs() -> None:
    jobs, _ = parse_jobs(b'{"task": "t", "patch": "p"}\n{"image": "i", "patch": "p"}\n')
    assert [p.line for p in engine_problems(jobs, "local")] == [2]
    assert [p.line for p in engine_problems(jobs, "ray")] == [2]
    for engine in ("podman", "docker"):
        (problem,) = engine_problems(jobs, engine)
        assert problem.line == 1
        assert f"--engine {engine} grades image jobs only" in problem.message
