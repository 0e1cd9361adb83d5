"""Signatures match the forms a failure takes in real logs, and a crash nobody knows is never a PASS."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tpudoctor.checks.logs._examples import scan_with
from tpudoctor.checks.logs.user_log_files import UserLogFilesDiagnosis
from tpudoctor.facts import Facts
from tpudoctor.findings import Status
from tpudoctor.logdiag import cause_of, diagnose_text, explain_with_node, load_catalog
from tpudoctor.logdiag.parsers import GRPC_STATUS_NAMES, grpc_status, hbm_allocations

NOISE = "2024-05-01 10:00:00,001 INFO trainer.py:40] step 100 loss=2.3012\n"

SOCKET_CLOSED_FORMS = {
    "exception type": "tensorflow.python.framework.errors_impl.UnavailableError: Socket closed\n",
    "status name": "E0501 10:00:01.000000 42 rpc.cc:9] UNAVAILABLE: Socket closed\n",
    "grpc json": (
        'Additional GRPC error information from remote target /job:worker/replica:0/task:0:\n'
        ':{"created":"@1609120565.251970000","description":"Error received from peer ipv4:10.1.2.3:8470",'
        '"file":"external/com_github_grpc_grpc/src/core/lib/surface/call.cc","file_line":1056,'
        '"grpc_message":"Socket closed","grpc_status":14}\n'
    ),
}


@pytest.mark.parametrize("form", sorted(SOCKET_CLOSED_FORMS))
def test_every_form_of_socket_closed_is_the_lost_connection(form):
    found = diagnose_text(NOISE + SOCKET_CLOSED_FORMS[form] + NOISE)
    assert [d.id for d in found] == ["socket-closed"]
    assert found[0].status is Status.FAIL
    explained = explain_with_node(found, {"state": "PREEMPTED", "health": None, "symptoms": []})
    assert explained[0].title == "TPU node was preempted"
    assert explained[0].evidence["log_signature"] == "socket-closed"


def test_grpc_json_gives_the_status_code_its_name():
    found = diagnose_text(SOCKET_CLOSED_FORMS["grpc json"])
    assert found[0].evidence["grpc_status_code"] == 14
    assert found[0].evidence["grpc_status_name"] == "UNAVAILABLE"
    assert found[0].evidence["peer"] == "10.1.2.3:8470"
    assert {4: "DEADLINE_EXCEEDED", 8: "RESOURCE_EXHAUSTED", 14: "UNAVAILABLE"}.items() <= GRPC_STATUS_NAMES.items()
    assert grpc_status('{"grpc_status":8}', 0) == {"grpc_status_code": 8, "grpc_status_name": "RESOURCE_EXHAUSTED"}


UNKNOWN_CRASHES = {
    "standard traceback": (
        "Traceback (most recent call last):\n"
        '  File "/home/me/data.py", line 91, in collate\n'
        "    ids = example['input_ids']\n"
        "KeyError: 'input_ids'\n",
        "KeyError", "'input_ids'"),
    "ipython traceback": (
        "---------------------------------------------------------------------------\n"
        "ValueError                                Traceback (most recent call last)\n"
        "<ipython-input-7-1f0c> in <module>()\n"
        "---> 63     raise ValueError(msg)\n"
        "\n"
        "ValueError: rank mismatch: labels (2) vs logits (3)\n",
        "ValueError", "rank mismatch: labels (2) vs logits (3)"),
    "bare exception line": (
        "tensorflow.python.framework.errors_impl.FailedPreconditionError: Could not find variable dense/kernel\n",
        "tensorflow.python.framework.errors_impl.FailedPreconditionError", "Could not find variable dense/kernel"),
    "glog F line": (
        "F0120 12:29:23.305308   34355 fusion_emitter.cc:6694] Check failed: IsFusible(user, target_)\n",
        "Check failed", "IsFusible(user, target_)"),
    "signal stack dump": (
        "*** SIGSEGV (@0x0), see go/stacktraces#s15 received by PID 16710 (TID 16710) on cpu 32; stack trace: ***\n"
        "PC: @     0x7f98b808cb51  (unknown)  GOMP_parallel\n",
        "SIGSEGV", "SIGSEGV"),
    "non-zero exit": ("Exception in device=TPU:3: process exited with code 1\n", "fatal", "exited with code 1"),
    "module-qualified exception not named Error": (
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly\n",
        "concurrent.futures.process.BrokenProcessPool", "A process in the process pool was terminated abruptly"),
}


@pytest.mark.parametrize("kind", sorted(UNKNOWN_CRASHES))
def test_an_unknown_crash_is_a_warning_that_quotes_it(kind):
    text, failure_type, message = UNKNOWN_CRASHES[kind]
    found = diagnose_text(NOISE * 3 + text + NOISE, source="train.log")
    assert [d.id for d in found] == ["unrecognised-failure"]
    top = found[0]
    assert top.status is Status.WARN
    assert top.evidence["failure_type"] == failure_type
    assert message in top.evidence["failure_message"]
    assert message in cause_of(top)  # the exception is quoted in what the user reads
    assert top.evidence["location"].startswith("train.log:") and top.evidence["first_line_no"] >= 4


@pytest.mark.parametrize("kind", sorted(UNKNOWN_CRASHES))
def test_the_log_check_says_warn_not_pass_over_an_unknown_crash(kind):
    text = UNKNOWN_CRASHES[kind][0]
    result = UserLogFilesDiagnosis().evaluate(Facts({"logs.user_files": scan_with(*text.splitlines())}))
    assert result.status is Status.WARN
    assert "Unrecognised failure" in result.message and "train.log:" in result.message


def test_a_job_wrapper_message_is_quoted_with_the_line_after_it():
    text = ("RuntimeError: Failed precondition: From /job:tpu_worker/replica:0/task:0:\n"
            "2 root error(s) found.\n  (0) Failed precondition: Expected comparison type FLOAT or TOTALORDER.\n")
    (found,) = diagnose_text(text)
    assert found.evidence["failure_message"] == (
        "Failed precondition: From /job:tpu_worker/replica:0/task:0: (0) Failed precondition: "
        "Expected comparison type FLOAT or TOTALORDER.")


def test_the_last_python_frame_is_where_it_was_raised():
    (found,) = diagnose_text(UNKNOWN_CRASHES["standard traceback"][0])
    assert found.evidence["raised_at"] == "/home/me/data.py:91"


def test_an_unknown_crash_after_a_known_root_cause_is_not_listed():
    text = ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. "
            "Used 9.08G of 7.48G hbm. Exceeded hbm capacity by 1.60G.\n" + NOISE + "KeyError: 'x'\n")
    assert [d.id for d in diagnose_text(text)] == ["hbm-oom"]


def test_an_unknown_crash_comes_before_plain_warnings():
    text = ("W0501 10:00:01.000000 42 cloud_tpu_init.py:80] Transparent hugepages are not enabled.\n"
            + NOISE + "ZeroDivisionError: division by zero\n")
    assert [d.id for d in diagnose_text(text)] == ["unrecognised-failure", "hugepages-disabled"]


@pytest.mark.parametrize("line", [
    "2020-06-17 16:46:34.480694: W tensorflow/core/kernels/data/generator_dataset_op.cc:103] Error occurred when "
    "finalizing GeneratorDataset iterator: Cancelled: Operation was cancelled",
    "I0808 20:59:00.964296 1398 xla_bridge.py:328] Unable to initialize backend 'tpu': module 'jaxlib.xla_extension' "
    "has no attribute 'get_tpu_client'",
    "2023-02-20 10:11:42.117120: I tensorflow/core/framework/local_rendezvous.cc:404] Local rendezvous is aborting "
    "with status: OUT_OF_RANGE: End of sequence",
    "WARNING:tensorflow:Callbacks method `on_train_batch_end` is slow compared to the batch time",
])
def test_healthy_noise_is_no_finding(line):
    assert diagnose_text(NOISE + line + "\n" + NOISE) == []


def test_case_insensitive_patterns_pass_the_prefilter_in_a_big_batch():
    lines = [NOISE] * 5000 + ["E0501 10:00:01.000000 42 rpc.cc:9] unavailable: socket CLOSED\n"] + [NOISE] * 10
    assert [d.id for d in diagnose_text("".join(lines))] == ["socket-closed"]


OOM_REPORT = textwrap.dedent("""\
    RuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 41.74G of 16.00G hbm. Exceeded hbm capacity by 25.74G.

    Total hbm usage >= 41.74G:
        reserved        528.00M
        program          41.22G
        arguments       unknown size

      Largest program allocations in hbm:

      1. Size: 32.00G
         Operator: op_type="FloorMod" op_name="slicewise_79/cic_update/FloorMod" source_file="/src/model.py" source_line=212
         Shape: s32[8388608,8,4]{2,1,0:T(8,128)}
         Unpadded size: 1.00G
         Extra memory due to padding: 31.00G (32.0x expansion)
         XLA label: %copy.40488 = s32[8388608,8,4]{2,1,0:T(8,128)} copy(%get-tuple-element.32429)
         Allocation type: HLO temp
         ==========================

      2. Size: 1.00G
         Shape: f32[1024,262144]{1,0:T(8,128)}
         Unpadded size: 1.00G
         Allocation type: HLO temp
         ==========================
    """)


def test_the_oom_diagnosis_lists_the_largest_allocations_and_the_excess():
    (top,) = diagnose_text(OOM_REPORT)
    assert top.id == "hbm-oom-compile"
    ev = top.evidence
    assert ev["hbm_used_bytes"] == round(41.74 * 2**30) and ev["hbm_capacity_bytes"] == 16 * 2**30
    assert ev["hbm_excess_bytes"] == round(25.74 * 2**30) and ev["hbm_program_bytes"] == round(41.22 * 2**30)
    first, second = ev["largest_allocations"]
    assert first == {
        "rank": 1, "size_bytes": 32 * 2**30, "shape": "s32[8388608,8,4]{2,1,0:T(8,128)}",
        "unpadded_size_bytes": 2**30, "padding_bytes": 31 * 2**30, "padding_expansion": 32.0,
        "op_type": "FloorMod", "op_name": "slicewise_79/cic_update/FloorMod", "source": "/src/model.py:212",
        "xla_label": "%copy.40488 = s32[8388608,8,4]{2,1,0:T(8,128)} copy(%get-tuple-element.32429)",
        "allocation_type": "HLO temp",
    }
    assert second["rank"] == 2 and second["size_bytes"] == 2**30 and "op_name" not in second
    assert top.to_dict()["evidence"]["largest_allocations"][0]["size_bytes"] == 32 * 2**30


def test_no_allocation_list_means_no_allocation_evidence():
    assert hbm_allocations("Ran out of memory in memory space hbm.", 0) == {}


def test_every_fallback_and_parser_in_the_catalog_is_wired():
    catalog = load_catalog()
    assert [s.id for s in catalog.signatures if s.fallback] == ["unrecognised-failure"]
    assert not catalog.get("unrecognised-failure").fatal


def test_importing_the_log_checks_diagnoses_nothing():
    """`check` and `list-checks` import every check; building examples must wait until they are asked for."""
    code = textwrap.dedent("""
        import tpudoctor.logdiag.diagnose as diagnose
        def boom(*a, **k):
            raise AssertionError("diagnosed at import")
        diagnose.Diagnoser.feed_lines = boom
        import tpudoctor.checks.logs.user_log_files, tpudoctor.checks.logs.libtpu_logs
        import tpudoctor.checks.logs.cloud_logging, tpudoctor.checks.logs.tpu_idle
        from tpudoctor.families import load_registry
        load_registry().check_classes()
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


def test_examples_are_still_built_when_asked_for():
    examples = UserLogFilesDiagnosis.examples
    assert {e.status for e in examples} >= {Status.PASS, Status.FAIL, Status.WARN}
    assert UserLogFilesDiagnosis.examples is examples  # built once


def test_the_coordinator_port_from_an_earlier_line_joins_the_firewall_diagnosis():
    text = ("I0314 02:11:40.229933  30212 distributed.py:91] Connecting to JAX distributed service on "
            "10.164.0.21:8482\n" + NOISE * 3 +
            "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n"
            "RPC: /tensorflow.CoordinationService/RegisterTask\n")
    (top,) = diagnose_text(text)
    assert top.id == "coordinator-unreachable"
    assert top.evidence["coordinator_port"] == 8482 and top.evidence["coordinator_address"] == "10.164.0.21:8482"
    assert any("--allow tcp:8482" in c for c in top.remediation.commands)
    # without the earlier line the finding stands, the command shows what to fill in
    (bare,) = diagnose_text(text.split("\n", 1)[1])
    assert "coordinator_port" not in bare.evidence
    assert any("tcp:<COORDINATOR_PORT>" in c for c in bare.remediation.commands)


def test_a_signature_naming_an_unknown_context_value_is_a_catalog_error():
    from tpudoctor.logdiag import CatalogError
    from tpudoctor.logdiag.catalog import parse_catalog

    text = '''version = 1
[[signature]]
id = "x"
title = "X"
layer = "runtime"
any = ["boom"]
context = ["nope"]
cause = "c"
fix = { text = "t" }
docs = "https://example.com"
severity = "high"
fatal = true
'''
    with pytest.raises(CatalogError, match="unknown context"):
        parse_catalog(text)
    fixed = text.replace('context = ["nope"]', 'context = ["addr"]') + (
        '[[context]]\nname = "addr"\nregex = "connected to ([0-9.:]+)"\ntype = "str"\n')
    catalog = parse_catalog(fixed)
    assert [c.name for c in catalog.contexts] == ["addr"] and catalog.contexts[0].keyword == "connected to "


def test_buffer_style_allocation_lists_are_read_too():
    text = textwrap.dedent("""\
        Buffer 11:
                Size: 96.00MiB
                Operator: op_name="pjit(train_step)/jit(main)/dot_general" source_file="/data/t5x/layers.py" source_line=652
                XLA Label: custom-call
                Shape: bf16[128,6,256,256]
                ==========================

        Buffer 12:
                Size: 48.00MiB
                XLA Label: fusion
                Shape: f32[128,256,384]
        """)
    first, second = hbm_allocations(text, 0)["largest_allocations"]
    assert first == {"rank": 11, "size_bytes": 96 * 2**20, "shape": "bf16[128,6,256,256]",
                     "op_name": "pjit(train_step)/jit(main)/dot_general", "source": "/data/t5x/layers.py:652",
                     "xla_label": "custom-call"}
    assert second["rank"] == 12 and second["size_bytes"] == 48 * 2**20


def test_the_older_pallas_libtpu_age_wording_is_the_old_libtpu():
    # jax's Pallas lowering before the "(at least 0.0.NN)" wording: the libtpu age and its build line.
    text = (NOISE + "RuntimeError: Pallas TPU requires a libtpu version that's at most a month old. "
            "Found version string:\nPJRT C API\nTFRT TPU v5 lite\nBuilt on Jun 12 2025 16:39:57 (1749771597) "
            "cl/769337304\n")
    (found,) = diagnose_text(text)
    assert found.id == "pallas-libtpu-old" and found.status is Status.FAIL
    assert found.evidence["libtpu_built_on"] == "Jun 12 2025"


def test_a_coordinator_lookup_that_is_still_retrying_is_not_a_failure():
    retry = "Failed to recognize coordinator address jax-job-0-0.jax-svc on attempt 3, retrying...\n"
    assert [d.id for d in diagnose_text(NOISE + retry + "Coordinator IP address: 10.8.0.12\n")] == []
    final = ("Traceback (most recent call last):\n  File \"/app/train.py\", line 12, in <module>\n"
             "    jax.distributed.initialize()\n"
             "RuntimeError: Failed to recognize coordinator address jax-job-0-0.jax-svc\n")
    assert [d.id for d in diagnose_text(NOISE + retry + final)] == ["coordinator-address"]


def test_the_hugepages_warning_as_python_prints_it_is_a_warning():
    # jax raises it with warnings.warn, so it reaches the log as "<file>:<line>: UserWarning: ...".
    text = ("/usr/local/lib/python3.12/dist-packages/jax/_src/cloud_tpu_init.py:86: UserWarning: Transparent "
            "hugepages are not enabled. TPU runtime startup and shutdown time should be significantly improved on "
            "TPU v5e and newer.\n  warnings.warn(\n" + NOISE)
    assert [(d.id, d.status) for d in diagnose_text(text)] == [("hugepages-disabled", Status.WARN)]
