"""`docs/k8s/grade-job.yaml`, the Kubernetes Job of one grading that docs/batch.md shows, read
field by field: what it runs (the task's image, ssegrade's bundle, a command `evaluate`
accepts), where (volumes: the bundle, the patch as a file, the results, a bounded /tmp), and
how (container containment: root, no capability added, no host namespace; a pod never
restarted in place; bounded resources)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from interpreters.cli.main import cli

MANIFEST = Path(__file__).resolve().parents[2] / "docs" / "k8s" / "grade-job.yaml"
_UNITS = {"": 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@pytest.fixture(scope="module")
def job() -> dict[str, Any]:
    """The manifest, parsed."""
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return loaded


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["template"]["spec"]
    return spec


def _container(job: dict[str, Any], name: str) -> dict[str, Any]:
    pod = _pod(job)
    found: list[dict[str, Any]] = [
        c for c in [*pod["initContainers"], *pod["containers"]] if c["name"] == name
    ]
    assert len(found) == 1, name
    return found[0]


def _mounts(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {mount["name"]: mount for mount in container["volumeMounts"]}


def quantity(text: str | int) -> float:
    """A Kubernetes quantity (`500m`, `2Gi`, `"2"`) as a number."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti)?", str(text))
    assert match is not None, text
    return float(match.group(1)) * _UNITS[match.group(2) or ""]


def test_it_is_one_job_that_runs_once(job: dict[str, Any]) -> None:
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert _pod(job)["restartPolicy"] == "Never"
    assert job["spec"]["backoffLimit"] == 1
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    assert pod_labels == job["metadata"]["labels"]


def test_the_grading_runs_in_the_tasks_image_with_the_bundle(job: dict[str, Any]) -> None:
    grade = _container(job, "grade")
    assert re.fullmatch(r"[\w.-]+/ssebench/case/[\w.-]+:[\w.-]+", grade["image"]), grade["image"]
    bundle = _container(job, "ssegrade-bundle")
    assert bundle["command"] == ["cp", "-a", "/bundle/.", "/opt/ssegrade/"]
    assert _mounts(bundle)["ssegrade"] == {"name": "ssegrade", "mountPath": "/opt/ssegrade"}
    assert _mounts(grade)["ssegrade"] == {
        "name": "ssegrade",
        "mountPath": "/opt/ssegrade",
        "readOnly": True,
    }


def test_the_command_is_an_evaluate_that_ssegrade_accepts(job: dict[str, Any]) -> None:
    command = _container(job, "grade")["command"]
    assert command[:2] == ["/opt/ssegrade/ssegrade", "evaluate"]
    options = dict(zip(command[2::2], command[3::2], strict=True))
    assert options == {
        "--task": "/ssebench",
        "--patch": "/in/patch.diff",
        "--repo": "/src/kvconf",
        "--results": "/out/run",
        "--timeout": "3600",
    }
    evaluate = cli.get_command(click.Context(cli), "evaluate")
    assert evaluate is not None
    context = evaluate.make_context("evaluate", command[2:], resilient_parsing=True)
    assert context.params["timeout"] == 3600
    assert job["spec"]["activeDeadlineSeconds"] > int(options["--timeout"])


def test_the_volumes_hold_what_the_grading_reads_and_writes(job: dict[str, Any]) -> None:
    volumes = {volume["name"]: volume for volume in _pod(job)["volumes"]}
    assert set(volumes) == {"ssegrade", "patch", "results", "tmp"}
    assert "sizeLimit" in volumes["ssegrade"]["emptyDir"]
    assert quantity(volumes["tmp"]["emptyDir"]["sizeLimit"]) >= 2**30
    assert set(volumes["patch"]) == {"name", "configMap"}
    assert set(volumes["results"]["persistentVolumeClaim"]) == {"claimName"}
    mounts = _mounts(_container(job, "grade"))
    # A ConfigMap volume's files are links, which ssegrade never follows: the key by subPath.
    assert mounts["patch"]["mountPath"] == "/in/patch.diff"
    assert (mounts["patch"]["subPath"], mounts["patch"]["readOnly"]) == ("patch.diff", True)
    assert mounts["results"]["mountPath"] == "/out"
    assert mounts["results"]["subPath"] == "kvconf-007/run-1"
    assert not mounts["results"].get("readOnly", False)
    assert mounts["tmp"]["mountPath"] == "/tmp"


def test_container_containment_adds_no_capability(job: dict[str, Any]) -> None:
    pod = _pod(job)
    context = _container(job, "grade")["securityContext"]
    assert context == {
        "runAsUser": 0,
        "runAsNonRoot": False,
        "privileged": False,
        "capabilities": {"add": []},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["hostPID"] is False
    assert pod["shareProcessNamespace"] is False
    assert pod["automountServiceAccountToken"] is False
    assert not {"hostNetwork", "hostIPC", "securityContext"} & set(pod)
    comments = " ".join(
        line.split("#", 1)[1] for line in MANIFEST.read_text().splitlines() if "#" in line
    )
    for full in ("SYS_ADMIN", "NET_ADMIN", "appArmorProfile: {type: Unconfined}", "seccomp"):
        assert full in comments, f"the comments say what full containment needs: {full}"


@pytest.mark.parametrize("name", ["ssegrade-bundle", "grade"])
def test_each_container_is_bounded(job: dict[str, Any], name: str) -> None:
    resources = _container(job, name)["resources"]
    assert set(resources) == {"requests", "limits"}
    kinds = {"cpu", "memory"} | ({"ephemeral-storage"} if name == "grade" else set())
    assert set(resources["requests"]) == set(resources["limits"]) == kinds
    for kind in kinds:
        assert 0 < quantity(resources["requests"][kind]) <= quantity(resources["limits"][kind])
