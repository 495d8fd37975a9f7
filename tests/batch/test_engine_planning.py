"""Image jobs placed before anything runs (`interpreters.engine.planning`): the digest holds
the image ID, the grading repo comes from the job, the image's `SSE_REPO_PATH` or the task's
`source`; an image that cannot be had is a problem of its line. The engine is stood in for:
the images are said, the task folder copied from a folder of the host."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.engine.images import EngineFailed, Image, Images
from interpreters.engine.planning import plan_image_jobs
from ssegrade.batch import Job
from tests.support.realtask import make_task


@dataclass
class _Said(Images):
    """Images as an engine would say them; the task folder of every image is `task`."""

    task: Path = Path()
    ids: dict[str, Image | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """No engine, no staging root, no reaper: planning needs none."""

    def prepare(self, ref: str, base: Path, build: Path | None = None) -> Image | str:
        return self.ids[ref]

    def copy_out(self, image: Image, path: str, into: Path) -> Path:
        if path != "/ssebench":
            raise EngineFailed(f"podman cp: no such file {path}")
        shutil.copytree(self.task, into / "copy")
        return into / "copy"


def _images(tmp_path: Path, ids: dict[str, Image | str]) -> _Said:
    made = make_task(tmp_path / "t")
    return _Said("podman", "b1", program="/bin/false", task=made.task, ids=ids)


def test_the_digest_holds_the_image_id_and_the_repo_comes_from_the_image(tmp_path: Path) -> None:
    (tmp_path / "p.diff").write_bytes(b"")
    images = _images(tmp_path, {
        "a": Image("a", "1" * 64, {"SSE_REPO_PATH": "/src/shell"}),
        "b": Image("b", "2" * 64, {"SSE_REPO_PATH": "/src/shell"}),
        "c": Image("c", "1" * 64, {}),
    })  # fmt: skip
    jobs = [
        (1, Job.model_validate({"image": "a", "patch": "p.diff", "run_id": "r1"})),
        (2, Job.model_validate({"image": "b", "patch": "p.diff", "run_id": "r2"})),
        (
            3,
            Job.model_validate(
                {"image": "a", "patch": "p.diff", "run_id": "r3", "repo": "/elsewhere"}
            ),
        ),
        (4, Job.model_validate({"image": "c", "patch": "p.diff", "run_id": "r4"})),
    ]
    planned, problems = plan_image_jobs(jobs, tmp_path, tmp_path / "r", images)
    assert [p.line for p in problems] == [4]
    assert "no grading repo" in problems[0].message
    one, two, three = planned
    assert one.digest != two.digest  # another image, the same patch and paths
    assert one.digest != three.digest  # another repo in the same image
    assert (one.image, two.image) == ("1" * 64, "2" * 64)
    assert (str(one.repo), str(one.task_dir), str(three.repo)) == (
        "/src/shell", "/ssebench", "/elsewhere",
    )  # fmt: skip
    assert one.parts[0] == "shell-001"


def test_an_image_or_a_task_that_cannot_be_had_is_a_problem_of_its_line(tmp_path: Path) -> None:
    (tmp_path / "p.diff").write_bytes(b"")
    images = _images(tmp_path, {"gone": "image: podman pull gone: not found",
                                "a": Image("a", "1" * 64, {})})  # fmt: skip
    jobs = [
        (1, Job.model_validate({"image": "gone", "patch": "p.diff"})),
        (2, Job.model_validate({"image": "a", "patch": "p.diff", "task": "/elsewhere"})),
        (3, Job.model_validate({"image": "a", "patch": "missing.diff", "repo": "/src"})),
    ]
    planned, problems = plan_image_jobs(jobs, tmp_path, tmp_path / "r", images)
    assert planned == []
    said = {p.line: p.message for p in problems}
    assert said[1] == "image: podman pull gone: not found"
    assert said[2].startswith("task: /elsewhere cannot be read out of the image")
    assert said[3].startswith("patch: no such file")
