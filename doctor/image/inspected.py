"""What reading an image returns, whichever reader did it (the local engine's export,
fwdoctor.image.local_engine, or a saved archive, fwdoctor.image.archive): the in-memory
tree with the image's ENV and config, and the one error type both raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from fwdoctor.image.host import ImageHost
from fwdoctor.image.tree import ImageTree


class ImageError(RuntimeError):
    """The image cannot be inspected; the message says why in one line."""


@dataclass(frozen=True)
class Inspected:
    """An image read into memory: what `check --image` / `--image-archive` judge."""

    tree: ImageTree
    env: dict[str, str]  # the image's ENV (Config.Env)
    skipped: tuple[str, ...] = ()  # members refused, with the reason
    config: dict[str, Any] = field(default_factory=dict)  # User, Entrypoint, Cmd, WorkingDir...

    def host(self, env: Mapping[str, str] | None = None) -> ImageHost:
        """A Host over the image; `env` (an --env-file) overrides the image's ENV."""
        return ImageHost.of_tree(self.tree, {**self.env, **(env or {})})


def parse_env(items: Iterable[str]) -> dict[str, str]:
    """Docker's ["KEY=VALUE", ...] as a mapping (a bare KEY means empty)."""
    env: dict[str, str] = {}
    for item in items:
        key, _, value = str(item).partition("=")
        if key:
            env[key] = value
    return env
