"""Profile rules: conformance of every registered rule, third-party rules through entry points, the
verdict precedence, and the one finding shape (a profile finding is a check result)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest
from paths import TESTS

import tpudoctor.profile
from tpudoctor.families import RegistryError
from tpudoctor.families import load_rules as load_family
from tpudoctor.findings import FindingKind, Severity, Status
from tpudoctor.profile.host_result import BreakdownFigures, HostResult, StepFigures
from tpudoctor.profile.rule import Example, ProfileRule, evaluate_rule
from tpudoctor.profile.verdict import decide
from tpudoctor.schema import load_schema
from tpudoctor.testing import profile_rule_conformance_problems


def load_rules(*args, **kwargs):
    return load_family("profile-rules", *args, **kwargs)

FIXTURES = TESTS / "fixtures" / "profiles"
BUILTIN_IDS = {"no-step-markers", "input-bound", "device-idle", "host-overhead", "recompilation",
               "compilation-in-window", "host-offload", "host-callback", "outside-compilation", "host-transfers",
               "eager-execution", "step-time-variance", "device-bound", "insufficient-evidence", "collectives",
               "straggler", "straggler-cost", "micro-benchmark"}


def check_result_validator():
    """The check report schema's ``result`` definition: the one finding shape."""
    schema = load_schema("check_report")
    return jsonschema.Draft202012Validator({"$ref": "#/$defs/result", "$defs": schema["$defs"]})


def test_builtin_rules_are_registered_through_the_entry_point():
    from importlib import metadata

    groups = {ep.value for ep in metadata.entry_points(group="tpudoctor")}  # the one group; old ones are aliases
    assert "tpudoctor.profile.rules" in groups
    assert set(load_rules(plugins=False)) == BUILTIN_IDS


def test_every_builtin_rule_states_the_evidence_it_needs():
    from tpudoctor.profile.rule import EVIDENCE_KINDS

    for rule in load_rules(plugins=False).values():
        assert rule.needs and set(rule.needs) <= set(EVIDENCE_KINDS), rule.id
    doc = tpudoctor.profile.analyze(FIXTURES / "jax_compute_bound").to_dict()
    assert all(entry["needs"] for entry in doc["rules"])
    assert doc["evidence_minimum"]["steps"] == 5


def test_conformance_catches_unknown_evidence_names():
    class NeedsMagic(ProfileRule):
        """Needs something no capture has."""

        id = "needs-magic"
        title = "magic"
        needs = ("steps", "crystal-ball")
        docs = "https://example.invalid"

    assert any("unknown evidence ['crystal-ball']" in p for p in profile_rule_conformance_problems(NeedsMagic))


def test_every_registered_rule_conforms():
    rules = load_rules()
    problems = [p for cls in rules.values() for p in profile_rule_conformance_problems(cls)]
    assert problems == []


def test_conformance_catches_a_rule_that_cannot_fire_and_a_wrong_example():
    class NeverFires(ProfileRule):
        """Never fires."""

        id = "never-fires"
        title = "never"
        docs = "https://example.invalid"
        examples = (Example("claims a warning", HostResult("h"), Status.WARN),)

        def evaluate(self, host):
            return self.passed("fine")

    problems = profile_rule_conformance_problems(NeverFires)
    assert any("PASS example" in p for p in problems)
    assert any("expected WARN, got PASS" in p for p in problems)


def test_a_crashing_rule_is_an_error_result_not_a_crash():
    class Broken(ProfileRule):
        """Divides by zero."""

        id = "broken"
        title = "broken"

        def evaluate(self, host):
            return 1 / 0

    result = evaluate_rule(Broken, HostResult("h0"))
    assert result.status is Status.ERROR and "ZeroDivisionError" in result.message
    assert result.kind is FindingKind.PROFILE and result.scope.hosts == ("h0",)


def test_duplicate_and_malformed_rule_ids_are_refused():
    class Twin(ProfileRule):
        """Same id as a built-in."""

        id = "input-bound"

    class Shouty(ProfileRule):
        """Check-style id."""

        id = "PROFILE-001"

    with pytest.raises(RegistryError, match="duplicate profile rule id input-bound"):
        load_rules([("test", [Twin])], plugins=False)
    with pytest.raises(RegistryError, match="invalid id"):
        load_rules([("test", [Shouty])], plugins=False)


def _host(**percent) -> HostResult:
    return HostResult("h", steps=StepFigures("host-step-annotations", 10),
                      breakdown=BreakdownFigures("host-loop-timeline", percent=percent))


@pytest.mark.parametrize("percent,verdict", [
    ({"compute": 70.0, "input": 25.0}, "device-bound"),
    ({"compute": 20.0, "input": 45.0}, "input-bound"),
    ({"compute": 10.0, "idle": 60.0}, "host-bound"),
    ({"compute": 0.0, "input": 10.0, "idle": 12.0}, "unknown"),  # nothing reaches 20 %
    ({"compute": 0.0, "idle": 12.0, "host_callback": 10.0}, "host-bound"),  # callbacks and other host time add
])
def test_verdict_follows_the_documented_precedence(percent, verdict):
    rules = load_rules(plugins=False)
    host = _host(**percent)
    assert decide([evaluate_rule(r, host) for r in rules.values()], rules)[0] == verdict


def test_no_steps_is_unknown_whatever_else_the_rules_say():
    rules = load_rules(plugins=False)
    host = HostResult("h", steps=StepFigures("none", 0, reason="no markers"),
                      breakdown=BreakdownFigures("none", percent={"input": 90.0}))
    verdict, reason = decide([evaluate_rule(r, host) for r in rules.values()], rules)
    assert verdict == "unknown" and "cannot tell" in reason


class _Communication(ProfileRule):
    """Waits inside collectives (a plug-in bottleneck, as cross-host analysis will add)."""

    id = "collective-wait"
    title = "Collectives do not wait"
    bottleneck = "communication-bound"
    scores_verdict = True
    docs = "https://example.invalid/collectives"

    def evaluate(self, host):
        share = float(host.tables.get("collectives", [{}])[0].get("wait_percent", 0.0))
        if share < 20:
            return self.passed("little waiting", evidence={"share_of_step_percent": share})
        return self.fired(Severity.HIGH, f"{share:.0f}% of step time waits in collectives", "waits",
                          evidence={"share_of_step_percent": share}, fixes=["Find the straggler"])


def test_a_new_bottleneck_plugs_into_the_verdict_through_a_rule():
    rules = {**load_rules(plugins=False), _Communication.id: _Communication}
    host = _host(compute=30.0)
    host.tables["collectives"] = [{"wait_percent": 55.0}]
    assert decide([evaluate_rule(r, host) for r in rules.values()], rules)[0] == "communication-bound"


@pytest.mark.parametrize("case", ["tf_input_bound", "jax_host_callback", "jax_recompiling", "tf_eager"])
def test_every_profile_finding_has_the_check_result_shape_with_its_scope(case):
    doc = tpudoctor.profile.analyze(str(FIXTURES / case)).to_dict()
    validator = check_result_validator()
    assert doc["findings"]
    for finding in doc["findings"]:
        errors = [e.message for e in validator.iter_errors(finding)]
        assert errors == [], (finding["id"], errors)
        assert finding["kind"] == "profile" and finding["status"] in ("WARN", "FAIL")
        assert finding["scope"] == {"workers": [], "hosts": ["localhost"], "chips": []}


def test_multi_host_scope_names_every_host_where_a_rule_fires(tmp_path):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    for host, case in (("worker-0", "jax_recompiling"), ("worker-1", "jax_recompiling"), ("worker-2", "jax_steady")):
        (run / f"{host}.xplane.pb").write_bytes((FIXTURES / case / "localhost.xplane.pb").read_bytes())
    report = tpudoctor.profile.analyze(str(tmp_path))
    recompiling = next(f for f in report.findings if f.id == "recompilation")
    assert recompiling.scope.hosts == ("worker-0", "worker-1")
    doc = report.to_dict()
    assert {h["host"]: "recompilation" in h["findings"] for h in doc["hosts"]} == {
        "worker-0": True, "worker-1": True, "worker-2": False}


def write_rule_plugin(root: Path) -> Path:
    """An installed-looking distribution with a profile rule: a module plus dist-info with the entry point."""
    (root / "acme_profile_rules.py").write_text(textwrap.dedent('''
        from tpudoctor.findings import Severity, Status
        from tpudoctor.profile.host_result import HostResult, StepFigures
        from tpudoctor.profile.rule import ProfileRule, Example

        class FewSteps(ProfileRule):
            """Acme wants at least 20 steps in every capture."""
            id = "acme-few-steps"
            title = "Enough steps for Acme's dashboards"
            docs = "https://acme.example/profiling"
            MIN_STEPS = 20
            examples = (Example("many", HostResult("h", steps=StepFigures("device-steps-line", 50)), Status.PASS),
                        Example("few", HostResult("h", steps=StepFigures("device-steps-line", 5)), Status.WARN))

            def evaluate(self, host):
                if host.steps.count >= self.MIN_STEPS:
                    return self.passed(f"{host.steps.count} steps")
                return self.fired(Severity.MEDIUM, f"Only {host.steps.count} steps captured",
                                  f"Acme's dashboards need {self.MIN_STEPS} steps; this capture has {host.steps.count}.",
                                  evidence={"steps": host.steps.count, "min_steps": self.MIN_STEPS},
                                  fixes=["Capture for longer"], commands=["tpudoctor profile capture --duration 10s ..."])
    '''))
    dist = root / "acme_profile_rules-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-profile-rules\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[tpudoctor.profile_rules]\nacme = acme_profile_rules\n")
    return root


def test_third_party_rule_from_dist_info_runs_and_appears_in_the_report(tmp_path):
    import os

    plugin = write_rule_plugin(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(plugin))
    done = subprocess.run([sys.executable, "-m", "tpudoctor", "profile", "analyze", str(FIXTURES / "jax_compute_bound"),
                           "--format", "json"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    finding = next(f for f in doc["findings"] if f["id"] == "acme-few-steps")
    assert finding["status"] == "WARN" and finding["evidence"] == {"steps": 8, "min_steps": 20}
    assert finding["remediation"]["commands"] == ["tpudoctor profile capture --duration 10s ..."]
    assert finding["scope"]["hosts"] == ["localhost"]
    assert {"id": "acme-few-steps", "source": "acme-profile-rules:acme", "needs": []} in doc["rules"]
    assert check_result_validator().is_valid(finding)
    text = subprocess.run([sys.executable, "-m", "tpudoctor", "profile", "analyze", str(FIXTURES / "jax_compute_bound")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert re.search(r"acme-few-steps .*Only 8 steps captured", text.stdout), text.stdout
    # and the plugin passes the same conformance test as the built-ins
    sys.path.insert(0, str(plugin))
    try:
        import acme_profile_rules

        assert profile_rule_conformance_problems(acme_profile_rules.FewSteps) == []
    finally:
        sys.path.remove(str(plugin))
        sys.modules.pop("acme_profile_rules", None)
