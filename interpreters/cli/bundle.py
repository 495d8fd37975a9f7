"""The `ssegrade bundle` command: build the read-only folder that runs ssegrade in a task image
without Python (`interpreters.engine.bundle`), and print its path."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["bundle"]


@click.command()
@click.option(
    "--into",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder that keeps bundles, one per host and version (made if missing).",
)
def bundle(into: Path) -> None:
    """Build this ssegrade's bundle under INTO, unless there already, and print its path.

    The bundle holds this interpreter (relocated), its standard library, ssegrade and its
    dependencies, and an `ssegrade` wrapper. Mount it read-only into a task container and run
    the wrapper there: the image needs no Python. Building needs patchelf and pip (with PyPI).

    \b
    Example:
        ssegrade bundle --into /var/cache/ssegrade
        podman run --rm -v /var/cache/ssegrade/ssegrade-0.1.0-py311-0123456789ab:/opt/ssegrade:ro \\
            IMAGE /opt/ssegrade/ssegrade evaluate --task /ssebench --patch /in/patch.diff ...
    """
    from interpreters.engine.bundle import BundleError, build  # noqa: PLC0415 - when it runs

    try:
        made = build(into)
    except (BundleError, OSError) as exc:
        raise click.ClickException(f"the bundle cannot be built: {exc}") from None
    click.echo(str(made))
