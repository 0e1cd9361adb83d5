"""One extension model: every family (checks, profile, hang, hang report and goodput rules) is a ``Family`` of
the one plugin registry, its members derive from the one ``Rule[Input]`` base, and one conformance test runs
every member's examples. A plugin in the shared ``tpudoctor`` group is found by each family whose base its
classes have; the old per-family groups still work."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from paths import REPO

from tpudoctor.families import FAMILIES as TABLE
from tpudoctor.families import families, load_rules
from tpudoctor.findings import Status
from tpudoctor.plugins import Family, Rules
from tpudoctor.rule import Rule

FAMILIES = families()


def _members(family: Family) -> Rules:
    if family.name == "checks":
        from tpudoctor.families import load_registry

        return load_registry(plugins=False).checks
    return family.load(plugins=False)


def _conformance(family: Family):
    module, _, name = family.conformance.partition(":")
    return getattr(importlib.import_module(module), name)


def test_every_family_is_listed_once_in_the_one_table():
    assert [f.name for f in FAMILIES] == list(TABLE) == ["checks", "profile-rules", "hang-rules", "hang-report-rules",
                                                         "goodput-rules", "diag-rules", "memory-rules"]
    assert {f.name for f in FAMILIES} >= {"checks", "profile-rules", "hang-rules", "hang-report-rules", "goodput-rules"}
    assert len({f.alias_group for f in FAMILIES}) == len(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_member_of_every_family_derives_from_the_one_rule_base_and_conforms(family):
    members = _members(family)
    assert isinstance(members, Rules) and members.family is family and len(members) >= 5
    check = _conformance(family)
    problems = []
    for rule_id, cls in members.items():
        assert issubclass(cls, Rule), f"{rule_id} is not a tpudoctor.rule.Rule"
        assert family.id_pattern.match(rule_id), rule_id
        assert cls.examples, f"{rule_id} has no examples"
        problems += check(cls)
    assert problems == []


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_rule_whose_example_is_wrong_does_not_conform(family):
    """The conformance test can fail: a member whose first example claims the wrong status (or match) is named."""
    cls = next(iter(_members(family).values()))
    example = cls.examples[0]
    import dataclasses

    if example.matches is not None:
        wrong = dataclasses.replace(example, matches=not example.matches)
    else:
        wrong = dataclasses.replace(example, status=Status.ERROR if example.status is not Status.ERROR else Status.PASS)
    liar = type(cls.__name__, (cls,), {"examples": (wrong,), "__doc__": cls.__doc__})
    assert any(example.name in p for p in _conformance(family)(liar))


def test_the_hang_report_findings_are_registered_rules_in_id_order():
    from tpudoctor.hang.report_rule import evaluate_rules, example_capture, example_report

    rules = load_rules("hang-report-rules", plugins=False)
    assert list(rules) == [f"HANG-00{n}" for n in range(1, 7)]
    report = example_report(captures=[example_capture(), example_capture(7, failure="exited", detail="gone")])
    assert [f.id for f in evaluate_rules(report, rules)] == ["HANG-001", "HANG-002", "HANG-004", "HANG-005"]


PLUGIN = '''
from tpudoctor.findings import Status
from tpudoctor.goodput.rule import Example, GoodputRule
from tpudoctor.hang.report_rule import HangReportRule, Example, example_report


class AcmeQuota(GoodputRule):
    """Acme's quota bucket."""
    id = "acme-quota"
    title = "Acme quota"
    examples = (Example("any", {}, Status.PASS),)

    def evaluate(self, goodput):
        return self.passed("fine")


class AcmeHang(HangReportRule):
    """Acme's hang note."""
    id = "ACME-001"
    title = "Acme hang note"
    examples = (Example("any", example_report(), Status.PASS),)

    def evaluate(self, report):
        return self.finding(Status.PASS, "fine")
'''


def _install(tmp_path, monkeypatch, group: str, module: str) -> None:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\nacme = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_one_entry_point_in_the_shared_group_gives_each_family_its_own_classes(tmp_path, monkeypatch):
    from functools import partial

    goodput_rules = partial(load_rules, "goodput-rules")
    report_rules = partial(load_rules, "hang-report-rules")
    profile_rules = partial(load_rules, "profile-rules")

    _install(tmp_path, monkeypatch, "tpudoctor", "acme_shared_plugin")
    try:
        assert goodput_rules()["acme-quota"].source == "acme_shared_plugin:acme"
        assert "ACME-001" in report_rules() and "acme-quota" not in report_rules()
        assert not any(k.startswith("acme") or k.startswith("plugin-") for k in profile_rules())
        assert "acme-quota" not in goodput_rules(disabled={"acme"})
    finally:
        sys.modules.pop("acme_shared_plugin", None)


def test_the_old_group_of_a_family_is_still_read(tmp_path, monkeypatch):
    group = TABLE["goodput-rules"].alias_group
    assert group == "tpudoctor.goodput_rules"
    _install(tmp_path, monkeypatch, group, "acme_old_group_plugin")
    try:
        assert "acme-quota" in load_rules("goodput-rules")
    finally:
        sys.modules.pop("acme_old_group_plugin", None)


def test_no_second_registry_finds_plugins_or_declares_a_family_outside_the_table():
    """Only tpudoctor.plugins reads entry points or walks packages for classes; no module declares a family of its
    own (``Family(...)`` is called in ``tpudoctor.families``' table only)."""
    import ast

    root = REPO
    readers, declared = [], set()
    for path in [*root.glob("tpudoctor/**/*.py"), *root.glob("checks/**/*.py"), *root.glob("reports/**/*.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name in ("entry_points", "walk_packages") and rel != "tpudoctor/plugins.py" \
                        and not rel.startswith("tpudoctor/testing/"):
                    readers.append(f"{rel}:{node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Family":
                declared.add(rel.removesuffix(".py").replace("/", "."))
    assert readers == []
    assert declared == {"tpudoctor.families"}


def test_a_hang_report_plugin_that_failed_to_load_is_an_error_entry_with_a_check_style_id():
    from tpudoctor.findings import FindingKind, Status
    from tpudoctor.hang.report_rule import RULE_ID_PATTERN, example_report
    family = TABLE["hang-report-rules"]
    from tpudoctor.plugins import PluginProblem

    problem = PluginProblem(name="acme", source="acme-tpudoctor-plugins:acme", group="tpudoctor",
                            what="hang report rule", error="ImportError: no module named acme_rules")
    rule = family.placeholder_for(problem)
    assert RULE_ID_PATTERN.match(rule.id) and rule.id == family.placeholder_for(problem).id  # stable per plugin
    finding = rule().evaluate(example_report())
    assert finding.status is Status.ERROR and finding.kind is FindingKind.HANG and "acme" in finding.message


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_family_gives_its_examples_as_the_one_example_type(family):
    """One ``Example`` (``tpudoctor.rule.Example``) for every family: an input and what the rule must say of it."""
    from tpudoctor.rule import Example

    for rule_id, cls in _members(family).items():
        assert cls.examples and all(type(e) is Example for e in cls.examples), rule_id
        assert all((e.status is None) != (e.matches is None) for e in cls.examples), rule_id
