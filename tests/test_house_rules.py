"""The house rules, as tests: no import cycle anywhere in the package (imports inside functions count too),
the pure layers (learners, formats, selection) never import Beam, even through another module, no module
of the package takes another module's private names (``from x import _name`` or ``x._name``), fault
injection stays in the tests (``tests/faults``), out of the package's code paths, nothing outside ``tests/``
imports from it (the package, benchmarks and tools stand without the tests), and every engine's entry
(``polybeam/engines/specs.py``) is whole: its module gives what the entry says."""

from __future__ import annotations

import ast
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import polybeam
from polybeam.engines import running
from polybeam.engines.specs import ARTIFACTS, ENGINE_SPECS, PROGRAM_TITLES
from polybeam.engines.tools import INSTALL_HINTS
from polybeam.pipelines.runners import engine_of

PACKAGE = pathlib.Path(polybeam.__file__).parent
ROOT = PACKAGE.parent
MODULES = sorted(PACKAGE.rglob("*.py"))
# Layers that are pure numpy/numba/scipy/pyarrow: usable without Beam, in a worker or a notebook.
PURE_LAYERS = ("learners", "formats", "selection")


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path) -> list[tuple[str, str | None, int]]:
    """``(module, name or None, line)`` of every import in the file, at any depth (functions included)."""
    found = []
    package = module_name(path).rpartition(".")[0] if path.is_relative_to(PACKAGE.parent) else ""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's own package up
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found += [(base, alias.name, node.lineno) for alias in node.names]
    return found


def package_graph() -> dict[str, set[str]]:
    """Which of the package's modules each module imports (``from polybeam.pipelines import jobs`` names the
    module ``jobs``)."""
    modules = {module_name(path): path for path in MODULES}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for module, imported, _ in imports(path):
            target = f"{module}.{imported}" if imported and f"{module}.{imported}" in modules else module
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    source = tmp_path / "m.py"
    source.write_text("import os\n\ndef f():\n    from polybeam.pipelines import jobs\n    from . import cli\n")
    assert ("polybeam.pipelines", "jobs", 4) in imports(source)


def test_the_package_has_no_import_cycle():
    graph = package_graph()
    assert "polybeam.pipelines.job_parts" in graph["polybeam.pipelines.jobs"]  # (the graph sees imports at all)
    assert "polybeam.learners.arrays" in graph["polybeam.sklearn"]
    assert cycle(graph) is None, " -> ".join(cycle(graph))


def test_the_pure_layers_never_import_beam():
    # Every module of the pure layers imported in a fresh interpreter: neither Beam nor the package's Beam
    # layers (transforms, pipelines) may come with them, directly or through another module.
    modules = [module_name(path) for path in MODULES if path.relative_to(PACKAGE).parts[0] in PURE_LAYERS]
    assert "polybeam.learners.linear" in modules and "polybeam.selection" in modules
    code = "import sys\n" + "".join(f"import {module}\n" for module in modules)
    code += "print(sorted({m.split('.')[0] if m.startswith('apache_beam') else m for m in sys.modules "
    code += "if m.startswith(('apache_beam', 'polybeam.transforms', 'polybeam.pipelines', 'sklearn'))}))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


def private_imports(path: pathlib.Path) -> list[str]:
    """``module._name`` for every private name of another polybeam module the file imports or reads."""
    found = [
        f"{module}.{name} (line {line})"
        for module, name, line in imports(path)
        if module.startswith("polybeam") and name and name.startswith("_") and not name.startswith("__")
    ]
    # Modules bound to a name (import polybeam.x as y, from polybeam import x): reading y._name.
    aliases = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            aliases.update({alias.asname: alias.name for alias in node.names if alias.asname})
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("polybeam"):
            aliases.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr} (line {node.lineno})")
    return found


def test_the_private_name_finder_sees_both_spellings(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "from polybeam.pipelines import jobs\nfrom polybeam.pipelines.jobs import _read, run\n"
        "jobs._counts(1)\njobs.run_train\n"
    )
    assert private_imports(source) == [
        "polybeam.pipelines.jobs._read (line 2)",
        "polybeam.pipelines.jobs._counts (line 3)",
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_imports_a_private_name(path):
    assert private_imports(path) == []


# What fault injection is called: it lives in tests/faults, whose hooks wrap the production classes from outside.
# (Whole words: ``default_step`` is no ``fault_step``.)
FAULT_WORDS = re.compile(r"\b(POLYBEAM_FAULT\w*|FaultSwitch|fault_step|InjectedFault|tests\.faults)\b")


def test_the_fault_word_finder_sees_the_hooks_of_old_and_nothing_else():
    hooks = 'fault_step = "evaluate"\nself._faults = FaultSwitch("train")  # off unless POLYBEAM_FAULT_DIR\n'
    assert FAULT_WORDS.findall(hooks) == ["fault_step", "FaultSwitch", "POLYBEAM_FAULT_DIR"]
    assert FAULT_WORDS.findall('default_step: str = "adaptive"  # faults of the input') == []


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_carries_fault_injection(path):
    assert FAULT_WORDS.findall(path.read_text()) == []


# Folders of the checkout that hold no code of the project's own (scratch, builds, environments).
NOT_SOURCE = {"tests", "build", "dist", "out", "node_modules", "__pycache__"}


def files_outside_tests(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The checkout's Python files outside ``tests/`` (hidden folders, builds and scratch left out)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [
            name
            for name in subfolders
            if name not in NOT_SOURCE and not name.startswith(".") and not name.endswith(".egg-info")
        ]
        found += [pathlib.Path(folder, name) for name in files if name.endswith(".py")]
    return sorted(found)


def imports_of_tests(path: pathlib.Path) -> list[str]:
    """Where the file imports from ``tests`` (``import tests.x``, ``from tests.x import y``, or by name with
    ``importlib.import_module("tests.x")``), as ``module (line N)``."""
    found = [
        f"{module}{'.' + name if name and not module else ''} (line {line})"
        for module, name, line in imports(path)
        if module == "tests" or module.startswith("tests.") or (not module and name == "tests")
    ]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and re.match(r"tests(\.|$)", str(node.args[0].value))
        ):
            found.append(f"{node.args[0].value} (line {node.lineno})")
    return found


def test_the_tests_import_finder_sees_every_spelling(tmp_path):
    source = tmp_path / "bench.py"
    source.write_text(
        "import importlib\nfrom tests.engines import running\nimport tests.portable.services as s\n"
        "def f():\n    from tests.engines.runs import TRAINS\n    importlib.import_module('tests.portable.data')\n"
        "from polybeam.engines import running as r\nfrom testsuite import x\n"
    )
    assert imports_of_tests(source) == [
        "tests.engines (line 2)",
        "tests.portable.services (line 3)",
        "tests.engines.runs (line 5)",
        "tests.portable.data (line 6)",
    ]
    assert pathlib.Path(__file__) not in files_outside_tests()
    assert ROOT / "benchmarks" / "bench_engines.py" in files_outside_tests()


def test_nothing_outside_the_tests_imports_from_them():
    """The package, the benchmarks and the checkout's tools run without ``tests/`` (what starts an engine is
    the package's: ``polybeam.engines.running``)."""
    found = {str(path.relative_to(ROOT)): where for path in files_outside_tests() if (where := imports_of_tests(path))}
    assert found == {}


# What every engine's module gives (polybeam/engines/specs.py says what each does).
ENGINE_MODULES_GIVE = ("fetch", "fetched", "polybeam_options", "versions", "serve", "served_options")


@pytest.mark.parametrize("name", list(ENGINE_SPECS))
def test_every_engine_entry_is_whole(name):
    spec = ENGINE_SPECS[name]
    assert spec.name == name and engine_of(f"{spec.title}Runner") == name  # Beam's runner named after it
    module = spec.load()
    missing = [function for function in ENGINE_MODULES_GIVE if not callable(getattr(module, function, None))]
    assert missing == [], f"{spec.module} lacks {missing}"
    inspect.signature(module.serve).bind(ROOT, spec.default_master)  # as running.start calls them
    inspect.signature(module.served_options).bind(spec.default_master, 2)
    assert callable(getattr(module, "standalone", None)) == spec.cluster  # a cluster setup iff it can start one
    assert set(spec.needs) <= INSTALL_HINTS.keys() & PROGRAM_TITLES.keys()  # each says how to get it
    assert spec.artifact in ARTIFACTS
    if spec.artifact == "job server":  # Beam runs it with java
        assert "java" in spec.needs
    assert spec.artifact_option in PipelineOptions([f"--{spec.artifact_option}=x"]).get_all_options()
    assert spec.jobs_at_once is None or spec.jobs_at_once >= 1
    assert set(spec.setups) <= running.SETUPS.keys()
    # The engines page's table has its row.
    assert f"| `{name}` |" in (ROOT / "docs" / "engines.md").read_text()
