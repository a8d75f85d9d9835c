"""llama.cpp's conversion tools, for turning a trained model or adapter back into GGUF:
`convert_hf_to_gguf.py`, `convert_lora_to_gguf.py`, the `conversion` package both
import, and `gguf-py`. They ship inside the llama-cpp-python source package (its
vendored llama.cpp), of the version installed here, so that what they write is what
the in-process model runner reads; the set-up keeps only the built wheel.

`simroute tune --prepare` downloads that source package once (`pip download
--no-binary llama-cpp-python --no-deps`, through pip's own index settings) into the
cache, extracts the tools (~2 MB) and drops the rest; run again, it does nothing.
Training never fetches anything: it asks `ready()` and says to run `--prepare` when
it is not. Measured on a busy 2-core machine: 14 s to download (77 MB) and 3 s to extract."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PACKAGE = "llama-cpp-python"
VENDORED = PurePosixPath("vendor/llama.cpp")
SCRIPTS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py")
TREES = ("conversion", "gguf-py")
MARKER = "prepared.json"  # written last: its presence means the folder is whole


class PrepareError(RuntimeError):
    """The conversion tools could not be fetched or extracted (said to the user as is)."""


def cache_folder() -> Path:
    """simroute's cache (`SIMROUTE_CACHE`, as scripts/cache-paths.sh reads it), its `tune` folder."""
    return Path(os.environ.get("SIMROUTE_CACHE") or "~/.cache/simroute").expanduser() / "tune"


def installed_version() -> str:
    """The llama-cpp-python version installed here (the locked one, as the set-up installs it)."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise PrepareError(f"{PACKAGE} is not installed (the in-process model runner's extra: simroute[gguf])") from exc


@dataclass(frozen=True, slots=True)
class ConversionTools:
    folder: Path

    @property
    def convert_hf(self) -> Path:
        return self.folder / "convert_hf_to_gguf.py"

    @property
    def convert_lora(self) -> Path:
        return self.folder / "convert_lora_to_gguf.py"

    @property
    def gguf_py(self) -> Path:
        """The folder to put on PYTHONPATH for the scripts' `import gguf` (the same llama.cpp's)."""
        return self.folder / "gguf-py"

    def ready(self) -> bool:
        return (self.folder / MARKER).is_file()


def tools_for(version: str, cache: Path) -> ConversionTools:
    return ConversionTools(cache / f"{PACKAGE}-{version}")


def prepare(
    version: str, cache: Path, *, download: Callable[[str, Path], Path] | None = None
) -> tuple[ConversionTools, bool]:
    """The conversion tools of llama-cpp-python `version` under `cache`, and whether they
    were fetched now (False: already there, nothing done)."""
    tools = tools_for(version, cache)
    if tools.ready():
        return tools, False
    cache.mkdir(parents=True, exist_ok=True)
    # The scratch sits beside the result: the last step is a rename within one file system.
    with tempfile.TemporaryDirectory(prefix=".prepare-", dir=cache) as scratch:
        sdist = (download or download_sdist)(version, Path(scratch) / "download")
        staged = Path(scratch) / "tools"
        extract(sdist, staged)
        (staged / MARKER).write_text(
            json.dumps(
                {"package": PACKAGE, "version": version, "sdist": sdist.name, "sha256": _sha256(sdist)}, indent=2
            )
            + "\n",
            encoding="utf-8",
        )
        shutil.rmtree(tools.folder, ignore_errors=True)  # a half-extracted folder of an interrupted run
        staged.rename(tools.folder)
    return tools, True


def download_sdist(version: str, dest: Path) -> Path:
    """The source package of llama-cpp-python `version`, downloaded by pip into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    # `--no-binary PACKAGE`, not `:all:`: pip prepares a source package's metadata, and with
    # `:all:` it would compile that build's own dependencies (cmake, ninja) from source too.
    command = [sys.executable, "-m", "pip", "download", "--no-binary", PACKAGE, "--no-deps", "--quiet"]
    done = subprocess.run([*command, "--dest", str(dest), f"{PACKAGE}=={version}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise PrepareError(f"pip could not download {PACKAGE}=={version}'s source package: {done.stderr.strip()}")
    found = sorted(dest.glob("*.tar.gz"))
    if len(found) != 1:
        raise PrepareError(f"pip downloaded {[p.name for p in dest.iterdir()]}, not one source package")
    return found[0]


def extract(sdist: Path, dest: Path) -> None:
    """The conversion tools from the source package `sdist` into `dest`, flattened: only
    the scripts and trees named above, regular files and folders only (tarfile's `data`
    filter refuses links out of `dest`, absolute paths and devices)."""
    wanted: list[tuple[tarfile.TarInfo, PurePosixPath]] = []
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            parts = PurePosixPath(member.name).parts
            inside = PurePosixPath(*parts[1:])  # below the package's top folder (llama_cpp_python-V/)
            if not inside.is_relative_to(VENDORED) or not (member.isfile() or member.isdir()):
                continue
            relative = inside.relative_to(VENDORED)
            if relative.parts and (str(relative) in SCRIPTS or relative.parts[0] in TREES):
                wanted.append((member, relative))
        found = {str(r) for _, r in wanted} | {r.parts[0] for _, r in wanted}
        missing = [name for name in (*SCRIPTS, *TREES) if name not in found]
        if missing:
            raise PrepareError(f"{sdist.name} has no {', '.join(missing)} under {VENDORED}")
        dest.mkdir(parents=True, exist_ok=True)
        for member, relative in wanted:
            archive.extract(member.replace(name=str(relative)), dest, filter="data")


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
