"""The conversion tools extracted from a llama-cpp-python source package: only the
scripts, the `conversion` package and `gguf-py` of its vendored llama.cpp, flattened
into the cache; once there, preparing again downloads nothing. The source package here
is a small tar built in the test with the real one's layout (the real download, ~77 MB,
is not a unit test's)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from router.tune.prepare import PrepareError, extract, prepare

TOP = "llama_cpp_python-0.3.36"
VENDOR = f"{TOP}/vendor/llama.cpp"
MEMBERS = {
    f"{VENDOR}/convert_hf_to_gguf.py": "from conversion import ModelBase\n",
    f"{VENDOR}/convert_lora_to_gguf.py": "import gguf\n",
    f"{VENDOR}/conversion/__init__.py": "ModelBase = object\n",
    f"{VENDOR}/conversion/llama.py": "",
    f"{VENDOR}/gguf-py/gguf/__init__.py": "",
    f"{VENDOR}/gguf-py/pyproject.toml": '[project]\nname = "gguf"\n',
    f"{VENDOR}/src/llama-adapter.cpp": "// not a conversion tool\n",
    f"{VENDOR}/convert_llama_ggml_to_gguf.py": "",
    f"{TOP}/llama_cpp/llama.py": "",
    f"{TOP}/pyproject.toml": "",
}


def source_package(folder: Path, members: dict[str, str] = MEMBERS, *, link: bool = False) -> Path:
    path = folder / f"{TOP}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link:  # a link out of the destination, inside a tree that is extracted
            info = tarfile.TarInfo(f"{VENDOR}/gguf-py/escape")
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(info)
    return path


def test_only_the_conversion_tools_are_extracted_flattened(tmp_path):
    extract(source_package(tmp_path), tmp_path / "tools")
    found = sorted(str(p.relative_to(tmp_path / "tools")) for p in (tmp_path / "tools").rglob("*") if p.is_file())
    assert found == [
        "conversion/__init__.py",
        "conversion/llama.py",
        "convert_hf_to_gguf.py",
        "convert_lora_to_gguf.py",
        "gguf-py/gguf/__init__.py",
        "gguf-py/pyproject.toml",
    ]
    assert (tmp_path / "tools" / "convert_hf_to_gguf.py").read_text() == "from conversion import ModelBase\n"


def test_a_source_package_without_a_tool_is_refused_naming_it(tmp_path):
    members = {name: text for name, text in MEMBERS.items() if "convert_lora" not in name}
    with pytest.raises(PrepareError, match="no convert_lora_to_gguf.py under vendor/llama.cpp"):
        extract(source_package(tmp_path, members), tmp_path / "tools")


def test_a_link_is_never_extracted(tmp_path):
    extract(source_package(tmp_path, link=True), tmp_path / "tools")
    assert not (tmp_path / "tools" / "gguf-py" / "escape").is_symlink()
    assert (tmp_path / "tools" / "gguf-py" / "gguf" / "__init__.py").is_file()


def test_preparing_twice_downloads_once(tmp_path):
    downloads = []

    def download(version: str, dest: Path) -> Path:
        downloads.append(version)
        dest.mkdir(parents=True)
        return source_package(dest)

    tools, fetched = prepare("0.3.36", tmp_path / "cache", download=download)
    assert fetched and tools.ready() and tools.convert_lora.is_file() and (tools.gguf_py / "gguf").is_dir()
    assert tools.folder == tmp_path / "cache" / "llama-cpp-python-0.3.36"
    marker = json.loads((tools.folder / "prepared.json").read_text())
    assert marker["version"] == "0.3.36" and marker["sdist"] == f"{TOP}.tar.gz" and len(marker["sha256"]) == 64
    again, fetched_again = prepare("0.3.36", tmp_path / "cache", download=download)
    assert again == tools and not fetched_again and downloads == ["0.3.36"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["llama-cpp-python-0.3.36"]  # no scratch left


def test_an_interrupted_extraction_leaves_nothing_that_looks_ready(tmp_path):
    def broken(version: str, dest: Path) -> Path:
        dest.mkdir(parents=True)
        members = {name: text for name, text in MEMBERS.items() if "gguf-py" not in name}
        return source_package(dest, members)

    with pytest.raises(PrepareError):
        prepare("0.3.36", tmp_path / "cache", download=broken)
    assert list((tmp_path / "cache").iterdir()) == []
