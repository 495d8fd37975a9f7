"""Paths in an image job's image (SPEC §14, Engines): absolute, SSEBench's layout by default.

Pure core, read by the job model (`ssegrade.batch._jobs.Job`).
"""

from __future__ import annotations

__all__ = ["IMAGE_TASK", "image_job_problem", "in_image"]

IMAGE_TASK = "/ssebench"
"""Where SSEBench's case images hold the task folder: an image job's default `task`."""


def in_image(value: str, what: str) -> str:
    """`value`, when it can name a path in an image: absolute, no `..`, no NUL.

    >>> in_image("/src/x", "repo")
    '/src/x'
    >>> in_image("src/x", "repo")
    Traceback (most recent call last):
    ValueError: repo: in an image job, an absolute path in the image ('src/x')
    """
    if not value.startswith("/") or "\0" in value or any(p == ".." for p in value.split("/")):
        raise ValueError(f"{what}: in an image job, an absolute path in the image ({value!r})")
    return value


def image_job_problem(
    image: str | None, task: str, repo: str | None, build: str | None, network: str | None
) -> None:
    """`ValueError` naming the key at fault when a job line's image keys do not hold
    together: `build` and `script_network` without `image`, an image reference with a blank
    or control character, a `task` or `repo` that is not an absolute path in the image.

    >>> image_job_problem(None, "t", None, "ctx", None)
    Traceback (most recent call last):
    ValueError: build: for image jobs only (give `image`)
    """
    if image is None:
        for key, value in (("build", build), ("script_network", network)):
            if value is not None:
                raise ValueError(f"{key}: for image jobs only (give `image`)")
        return
    if any(ord(char) < 0x21 or char == "\x7f" for char in image):
        raise ValueError(f"image: {image!r} is not an image reference")
    in_image(task, "task")
    if repo is not None:
        in_image(repo, "repo")
