"""The layering contracts of pyproject.toml ([tool.importlinter]) hold: import-linter's ``lint-imports``
runs with the suite.

import-linter reads packages from disk and cannot follow setuptools' ``package-dir`` (checks/,
reports/ and reference_models/ install as tpudoctor.checks, tpudoctor.reports and
tpudoctor.reference_models), so the tree is laid out as installed in a temporary folder first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = REPO / "pyproject.toml"
# import-linter's own command, run by this interpreter (a venv's console script can be missing or empty)
LINT_IMPORTS = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                "sys.argv[0] = 'lint-imports'; lint_imports_command()"]


def installed_layout(target: Path) -> Path:
    """tpudoctor/ with the package-dir folders in place, Python files only."""
    mapping = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-dir"]
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "tpudoctor", target / "tpudoctor", ignore=ignore)
    for package, folder in mapping.items():
        shutil.copytree(REPO / folder, target / Path(*package.split(".")), ignore=ignore)
    return target


def lint_imports(root: Path, config: Path = PYPROJECT, *contracts: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    only = [arg for contract in contracts for arg in ("--contract", contract)]
    # run from the staged tree: lint-imports puts its working directory first on sys.path
    return subprocess.run([*LINT_IMPORTS, "--no-cache", *only, str(config)], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)


IMPORT_LINTER_MISSING = importlib.util.find_spec("importlinter") is None

pytestmark = pytest.mark.skipif(IMPORT_LINTER_MISSING, reason="import-linter is not installed (pip install -e '.[test]')")


def test_layering_contracts_hold(tmp_path):
    done = lint_imports(installed_layout(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in output, output


def test_a_profile_module_importing_a_renderer_breaks_a_contract(tmp_path):
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "profile" / "upward.py").write_text("from tpudoctor.reports import emit_text\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "tpudoctor.profile.upward -> tpudoctor.reports.emit_text" in output, output


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
    assert "4 broken" in output, output  # the renderer reading files reaches tpudoctor.gcp too (views-no-pod-no-gcp)


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

graph = grimp.build_graph("tpudoctor", exclude_type_checking_imports=False)
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


def circles(root: Path) -> list[list[str]]:
    done = subprocess.run([sys.executable, "-c", CIRCLES], capture_output=True, text=True, cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(root)), timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.replace("'", '"'))


def test_no_module_imports_itself_back_anywhere_in_the_package(tmp_path):
    """Every import, lazy ones inside functions and annotation-only ones too: no circle of modules anywhere,
    across packages as well as inside them (settings once imported the CLI for a helper, the signature catalog
    and its parsers imported each other, the profile report and its document read each other)."""
    assert circles(installed_layout(tmp_path)) == []


def test_an_annotation_only_import_back_is_a_circle(tmp_path):
    """The last circle was profile/report.py <-> profile/document.py: the document named the report under
    TYPE_CHECKING while the report called the document. Put that annotation back and the count finds it."""
    root = installed_layout(tmp_path)
    document = root / "tpudoctor" / "profile" / "document.py"
    document.write_text(document.read_text() + "\n\nif TYPE_CHECKING:\n    from tpudoctor.profile.report import "
                        "ProfileReport  # noqa: F401\n")
    assert circles(root) == [["tpudoctor.profile.document", "tpudoctor.profile.report"]]


def _counting_annotations(tmp_path: Path) -> Path:
    """pyproject's contracts with annotation-only imports counted too."""
    config = tmp_path / "annotations.toml"
    config.write_text(PYPROJECT.read_text().replace("exclude_type_checking_imports = true",
                                                    "exclude_type_checking_imports = false"))
    return config


def test_documents_never_import_the_pod_not_even_for_a_type(tmp_path):
    root = installed_layout(tmp_path / "tree")
    config = _counting_annotations(tmp_path)
    kept = lint_imports(root, config, "engine-documents-no-pod")
    assert kept.returncode == 0 and "1 kept, 0 broken" in kept.stdout, kept.stdout + kept.stderr
    documents = root / "tpudoctor" / "documents.py"
    documents.write_text(documents.read_text() + "\n\nif TYPE_CHECKING:\n    from tpudoctor.pod.merge import "
                         "MergedReport  # noqa: F401\n")
    broken = lint_imports(root, config, "engine-documents-no-pod")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "tpudoctor.documents -> tpudoctor.pod.merge" in broken.stdout, broken.stdout


def test_a_renderer_listing_workers_through_the_pod_breaks_a_contract(tmp_path):
    """Renderers once imported the pod's describe_workers; it lives with the finding model now."""
    root = installed_layout(tmp_path)
    view = root / "tpudoctor" / "reports" / "views" / "merged.py"
    view.write_text(view.read_text().replace("from tpudoctor.findings import describe_workers",
                                             "from tpudoctor.pod.worker_ids import describe_workers", 1))
    done = lint_imports(root, PYPROJECT, "views-no-pod-no-gcp")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tpudoctor.reports.views.merged -> tpudoctor.pod.worker_ids" in done.stdout, done.stdout


def test_captures_importing_its_users_or_a_second_proto_decoder_outside_captures_break_contracts(tmp_path):
    root = installed_layout(tmp_path)
    (root / "tpudoctor" / "captures" / "upward.py").write_text("from tpudoctor.memory import timeline\n")
    (root / "tpudoctor" / "memory" / "own_decoder.py").write_text("from google.protobuf import descriptor_pool\n")
    done = lint_imports(root)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "tpudoctor.captures.upward -> tpudoctor.memory.timeline" in output, output
    assert "tpudoctor.memory.own_decoder -> google" in output, output


def test_memory_reaching_into_profile_for_capture_files_breaks_a_contract(tmp_path):
    """memory once found a capture's host files through profile.sources; they live in captures now."""
    root = installed_layout(tmp_path)
    kept = lint_imports(root, PYPROJECT, "memory-no-profile")
    assert kept.returncode == 0 and "1 kept, 0 broken" in kept.stdout, kept.stdout + kept.stderr
    pipeline = root / "tpudoctor" / "memory" / "pipeline.py"
    pipeline.write_text(pipeline.read_text() + "\n\ndef _upward():\n    from tpudoctor.profile import capture  # noqa: "
                        "F401\n")
    broken = lint_imports(root, PYPROJECT, "memory-no-profile")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "tpudoctor.memory.pipeline -> tpudoctor.profile.capture" in broken.stdout, broken.stdout
