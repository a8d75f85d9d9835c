"""`router/errors.py` is the map of the router's errors: every exception class the
router defines is on it (a new one is added to the map with where it is raised and
where it is caught)."""

import ast
from pathlib import Path

import router.errors

ROUTER = Path(router.errors.__file__).parent


def defined_exceptions() -> set[str]:
    """`module.Name` of every class in router/ whose bases name an Error or Exception."""
    found = set()
    for path in ROUTER.rglob("*.py"):
        module = ".".join(path.relative_to(ROUTER.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base) for base in node.bases]
                if any(base.endswith(("Error", "Exception")) for base in bases):
                    found.add(f"{module}.{node.name}")
    return found


def test_every_router_exception_is_on_the_map():
    text = router.errors.__doc__ or ""
    missing = sorted(name for name in defined_exceptions() if name.rsplit(".", 1)[1] not in text)
    assert not missing, f"router/errors.py does not map: {missing}"
    assert len(defined_exceptions()) >= 20  # the walk found the router's classes
