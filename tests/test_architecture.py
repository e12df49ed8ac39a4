"""The three floors: engine (no Django) < Django apps < Celery task module. Imports go down only."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DJANGO_SIDE = {
    "django",
    "config",
    "core",
    "accounts",
    "waitlist",
    "corpora",
    "runs",
    "serving",
    "devstack",
    "storages",
    "celery",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)  # and "config.tasks" for `from config import tasks`
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


ENGINE_FILES = sorted((REPO / "engine").rglob("*.py"))


@pytest.mark.parametrize("path", ENGINE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_engine_never_imports_django_or_the_platform(path):
    offending = {m for m in imported_modules(path) if m.split(".")[0] in DJANGO_SIDE}
    assert not offending, f"{path.relative_to(REPO)} imports {sorted(offending)}"


def test_the_task_module_is_the_top_floor_and_nothing_imports_it():
    """Celery finds `config.tasks` by name (config.celery); the web side sends tasks by name
    (core.queues), so no module of the platform or the engine imports it."""
    assert (REPO / "platform" / "config" / "tasks.py").exists()
    for path in [*(REPO / "platform").rglob("*.py"), *ENGINE_FILES]:
        assert "config.tasks" not in imported_modules(path), path.relative_to(REPO)


def test_platform_is_a_source_root_not_a_package_shadowing_the_standard_module():
    assert not (REPO / "platform" / "__init__.py").exists()
    import platform

    assert hasattr(platform, "python_version")


def test_the_code_is_ruff_clean_and_formatted():
    import subprocess
    import sys

    for command in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command], cwd=REPO, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_no_test_module_imports_another():
    """What tests share lives in tests/helpers/ (imported as tests.helpers.…) and in
    conftest.py files: a test module imported by another runs its fixtures and module state
    twice, and ties each file to the other's layout and sys.path."""
    tests = REPO / "tests"
    test_modules = {p.stem for p in tests.rglob("test_*.py")}
    offending = {
        str(path.relative_to(REPO)): sorted(imported)
        for path in sorted(tests.rglob("*.py"))
        if (
            imported := {
                m
                for m in imported_modules(path)
                if any(part in test_modules or part.startswith("test_") for part in m.split("."))
            }
        )
    }
    assert not offending, offending


def module_name(path: Path) -> str:
    """`corpora.services` for platform/corpora/services.py, `engine.search` for
    engine/search/__init__.py."""
    root = REPO / "platform" if path.is_relative_to(REPO / "platform") else REPO
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circles_among_the_platforms_and_the_engines_modules():
    """Every import counts, a function's own too: a function-local import that closes a
    circle still ties the two modules' designs together (and hides the circle from Python
    until that function runs)."""
    import graphlib

    paths = [*(REPO / "platform").rglob("*.py"), *ENGINE_FILES]
    modules = {module_name(p): p for p in paths if "migrations" not in p.parts}

    def known(name: str) -> str:
        while name and name not in modules:  # "engine.search.index.SearchIndex" → its module
            name = name.rpartition(".")[0]
        return name

    graph = {
        name: {
            dep
            for dep in map(known, imported_modules(path))
            if dep and dep != name and not name.startswith(f"{dep}.")  # not its own package
        }
        for name, path in modules.items()
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as circle:
        raise AssertionError(f"an import circle: {' -> '.join(circle.args[1])}") from None
