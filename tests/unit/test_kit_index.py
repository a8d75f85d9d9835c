"""The test kit's index (tests/kit/__init__.py) names every module of the kit."""

from pathlib import Path

import kit


def test_the_kit_index_names_every_module():
    folder = Path(kit.__file__).parent
    modules = sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__")
    listed = {line.split()[0] for line in (kit.__doc__ or "").splitlines() if line[:1].isalpha() and line.split()}
    assert [name for name in modules if name not in listed] == []
