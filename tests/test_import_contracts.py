"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: import-linter's ``lint-imports``
runs with the suite.

import-linter reads packages from disk and cannot follow setuptools' ``package-dir`` (checks/,
reports/ and reference_models/ install as tpudoctor.checks, tpudoctor.reports and
tpudoctor.reference_models), so the tree is laid out as installed in a temporary folder first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / ("lint-imports.exe" if os.name == "nt" else "lint-imports")


def installed_layout(target: Path) -> Path:
    """tpudoctor/ with the package-dir folders in place, Python files only."""
    mapping = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-dir"]
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "tpudoctor", target / "tpudoctor", ignore=ignore)
    for package, folder in mapping.items():
        shutil.copytree(REPO / folder, target / Path(*package.split(".")), ignore=ignore)
    return target


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    # run from the staged tree: lint-imports puts its working directory first on sys.path
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(PYPROJECT)], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)


pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason=f"import-linter is not installed ({LINT_IMPORTS} "
                                                                  "is missing; pip install -e '.[test]')")


def test_layering_contracts_hold(tmp_path):
    done = lint_imports(installed_layout(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in output, output


def test_a_profile_module_importing_a_renderer_breaks_a_contract(tmp_path):
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "profile" / "upward.py").write_text("from tpudoctor.reports import profile_json\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "tpudoctor.profile.upward -> tpudoctor.reports.profile_json" in output, output


def test_a_circle_between_profile_modules_breaks_a_contract(tmp_path):
    root = installed_layout(tmp_path)
    # the executor runs what the pipeline gives it; importing the pipeline back would be a circle
    with open(root / "tpudoctor" / "profile" / "executor.py", "a") as executor:
        executor.write("\n\ndef _circle():\n    from tpudoctor.profile import pipeline  # noqa: F401\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "No cycles are allowed in tpudoctor.profile" in output and ".executor -> .pipeline" in output, output


def test_google_clients_outside_gcp_and_adapters_in_checks_or_renderers_break_contracts(tmp_path):
    """A command building a storage client, a check reaching for the adapters, a renderer reading files:
    each is named by its contract."""
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "commands" / "own_client.py").write_text("from google.cloud import storage\n")
    (root / "tpudoctor" / "checks" / "node" / "adapter.py").write_text("from tpudoctor.gcp import errors\n")
    (root / "tpudoctor" / "reports" / "reads_files.py").write_text("from tpudoctor import locations\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    for line in ("tpudoctor.commands.own_client -> google", "tpudoctor.checks.node.adapter -> tpudoctor.gcp.errors",
                 "tpudoctor.reports.reads_files -> tpudoctor.locations"):
        assert line in output, output
    assert "3 broken" in output, output


def test_pod_and_command_circles_an_engine_importing_the_pod_and_a_renderer_importing_the_merge_break(tmp_path):
    """The circles the pod once had (merge <-> slice checks, check <-> pod_check), the engine reaching up
    for the worker environment, a renderer reading the merge: each is named by its contract."""
    root = installed_layout(tmp_path)
    with open(root / "tpudoctor" / "pod" / "outcomes.py", "a") as outcomes:
        outcomes.write("\n\ndef _circle():\n    from tpudoctor.pod import merge  # noqa: F401\n")
    with open(root / "tpudoctor" / "commands" / "pod_check.py", "a") as pod_check:
        pod_check.write("\n\ndef _circle():\n    from tpudoctor.commands import check_cmd  # noqa: F401\n")
    with open(root / "tpudoctor" / "runner.py", "a") as runner:
        runner.write("\n\ndef _upward():\n    from tpudoctor.pod import fanout  # noqa: F401\n")
    (root / "tpudoctor" / "reports" / "folds.py").write_text("from tpudoctor.pod import merge\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "No cycles are allowed in tpudoctor.pod" in output and ".outcomes -> .merge" in output, output
    assert "No cycles are allowed in tpudoctor.commands" in output and ".pod_check -> .check_cmd" in output, output
    for line in ("tpudoctor.runner -> tpudoctor.pod.fanout", "tpudoctor.reports.folds -> tpudoctor.pod.merge"):
        assert line in output, output


CIRCLES = """
import sys
import grimp

graph = grimp.build_graph("tpudoctor", exclude_type_checking_imports=True)
sys.setrecursionlimit(20000)
index, low, stack, on, found = {}, {}, [], set(), []
def visit(v):  # Tarjan: strongly connected components of more than one module are circles
    index[v] = low[v] = len(index); stack.append(v); on.add(v)
    for w in graph.find_modules_directly_imported_by(v):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop(); on.discard(w); part.append(w)
            if w == v:
                break
        if len(part) > 1:
            found.append(sorted(part))
for module in sorted(graph.modules):
    if module not in index:
        visit(module)
print(found)
"""


def test_no_module_imports_itself_back_anywhere_in_the_package(tmp_path):
    """Every import, lazy ones inside functions too (annotations only excluded): no circle of modules anywhere,
    across packages as well as inside them (settings once imported the CLI for a helper, the signature catalog
    and its parsers imported each other)."""
    root = installed_layout(tmp_path)
    done = subprocess.run([sys.executable, "-c", CIRCLES], capture_output=True, text=True, cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(root)), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_captures_importing_its_users_or_a_second_proto_decoder_outside_captures_break_contracts(tmp_path):
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "captures" / "upward.py").write_text("from tpudoctor.memory import timeline\n")
    (root / "tpudoctor" / "memory" / "own_decoder.py").write_text("from google.protobuf import descriptor_pool\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "tpudoctor.captures.upward -> tpudoctor.memory.timeline" in output, output
    assert "tpudoctor.memory.own_decoder -> google" in output, output
