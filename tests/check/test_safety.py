"""Safety through the real CLI and the loopback fakes: no bucket writes unless asked, no secrets in any
output, --redact hides identities, -o never follows a symlink and writes safe permissions."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tpudoctor.cli import main
from tpudoctor.gcp.session import LOGGING_ENDPOINT_ENV
from tpudoctor.testing.fake_logging import FakeLoggingServer
from tpudoctor.testing.fake_tpu_api import make_node
from tpudoctor.tfrecord import encode_records

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]

PROJECT, BUCKET = "acme-prod-123", "acme-train-data"
SA = f"trainer@{PROJECT}.iam.gserviceaccount.com"
TOKEN = "ya29.a0AfH6SMBxSECRETsecretSECRETsecret0123456789"
FORMATS = ("text", "json", "markdown", "html", "junit")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def _args(*extra: str) -> list[str]:
    return ["check", "--project", PROJECT, "--zone", "us-central2-b", "--tpu", "my-tpu",
            "--data", f"gs://{BUCKET}/train", "--checkpoint-dir", f"gs://{BUCKET}/ckpt", "--step", "1", "--step", "2",
            "--api-timeout", "2s", *extra]


def _seed(api, gcs, *, workers: int = 1):
    api.add_node(make_node(PROJECT, "us-central2-b", "my-tpu", service_account=SA, workers=workers))
    gcs.create_bucket(BUCKET, location="US-CENTRAL2")
    gcs.upload(BUCKET, "train/part-0.tfrecord", encode_records([b"x" * 64]))
    gcs.upload(BUCKET, "ckpt/checkpoint", b"model_checkpoint_path: 'ckpt-1'")


def _writes(gcs) -> list[str]:
    return [r for r in gcs.requests if r.split()[0] in WRITE_METHODS]


def test_full_check_never_writes_to_the_bucket_without_write_probe(fake_tpu_api, fake_gcs, capsys):
    _seed(fake_tpu_api, fake_gcs)
    before = sorted(fake_gcs.object_names(BUCKET))
    fake_gcs.requests.clear()
    main(_args("--format", "json"))
    doc = json.loads(capsys.readouterr().out)
    assert fake_gcs.requests, "the run must have read the bucket (else this test proves nothing)"
    assert _writes(fake_gcs) == []
    assert sorted(fake_gcs.object_names(BUCKET)) == before
    probe = {r["id"]: r for r in doc["results"]}["GCS-007"]
    assert probe["status"] == "SKIP" and "--write-probe" in probe["skip_reason"]


def test_write_probe_creates_and_deletes_exactly_one_object_per_bucket(fake_tpu_api, fake_gcs, capsys):
    _seed(fake_tpu_api, fake_gcs)
    before = sorted(fake_gcs.object_names(BUCKET))
    fake_gcs.requests.clear()
    main(_args("--format", "json", "--write-probe"))
    doc = json.loads(capsys.readouterr().out)
    writes = _writes(fake_gcs)
    assert [w.split()[0] for w in writes] == ["POST", "DELETE"], writes
    assert f"/b/{BUCKET}/o" in writes[0] and f"/b/{BUCKET}/o/" in writes[1]
    assert sorted(fake_gcs.object_names(BUCKET)) == before  # the probe object is gone again
    assert {r["id"]: r["status"] for r in doc["results"]}["GCS-007"] == "PASS"


@pytest.mark.parametrize("fmt", FORMATS)
def test_tokens_in_api_errors_never_reach_output_or_stderr(fake_tpu_api, fake_gcs, monkeypatch, capsys, tmp_path,
                                                           fmt):
    _seed(fake_tpu_api, fake_gcs)
    leak = f"Request had invalid authentication credentials. Authorization: Bearer {TOKEN} (access_token={TOKEN})"
    fake_tpu_api.fail(401, times=99, message=leak)
    fake_gcs.fail(500, times=99)
    with FakeLoggingServer() as logs:
        logs.fail_with = (403, leak)
        monkeypatch.setenv(LOGGING_ENDPOINT_ENV, logs.endpoint)
        out_file = tmp_path / f"report.{fmt}"
        main([*_args("--format", fmt, "-o", str(out_file)), "--step", "4"])
        main([*_args("--format", fmt, "-v"), "--step", "4"])
    captured = capsys.readouterr()
    written = out_file.read_text()
    for text in (captured.out, captured.err, written):
        assert "ya29." not in text and "SECRETsecret" not in text
    assert "access-token" in captured.out or "<token>" in captured.out or "<secret>" in captured.out


@pytest.mark.parametrize("fmt", FORMATS)
def test_redact_removes_projects_accounts_ips_and_buckets(fake_tpu_api, fake_gcs, capsys, fmt):
    _seed(fake_tpu_api, fake_gcs, workers=4)
    fake_gcs.deny(BUCKET, "storage.objects.list")  # a FAIL whose fix names the bucket and the account
    main(_args("--format", fmt))
    plain = capsys.readouterr().out
    assert BUCKET in plain and PROJECT in plain  # the unredacted report does carry them
    main(_args("--format", fmt, "--redact"))
    shared = capsys.readouterr().out
    for secret in (PROJECT, BUCKET, SA, "trainer@", "10.130.0."):
        assert secret not in shared, f"{secret} survived --redact in {fmt}"
    if fmt in ("json", "text", "markdown"):  # Markdown writes a placeholder's <> as entities, so it is not a tag
        shown = __import__("html").unescape(shared) if fmt == "markdown" else shared
        assert "<bucket-1>" in shown and "<project-1>" in shown


def test_output_never_follows_a_symlink(fake_tpu_api, fake_gcs, tmp_path, capsys):
    _seed(fake_tpu_api, fake_gcs)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "report.json"
    link.symlink_to(victim)
    rc = main(_args("--format", "json", "-o", str(link)))
    assert rc == 2
    assert victim.read_text() == "precious" and link.is_symlink()
    assert "symbolic link" in capsys.readouterr().err


def test_dangling_symlink_is_refused_too(fake_tpu_api, fake_gcs, tmp_path, capsys):
    _seed(fake_tpu_api, fake_gcs)
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "would-be-created")
    assert main(_args("--format", "json", "-o", str(link))) == 2
    assert not (tmp_path / "would-be-created").exists()


def test_report_files_are_never_group_or_world_writable(fake_tpu_api, fake_gcs, tmp_path, capsys):
    _seed(fake_tpu_api, fake_gcs)
    old = os.umask(0)  # the most permissive umask a CI runner could have
    try:
        path = tmp_path / "out" / "report.json"
        main(_args("--format", "json", "-o", str(path)))
    finally:
        os.umask(old)
    mode = stat.S_IMODE(path.stat().st_mode)
    assert not mode & (stat.S_IWGRP | stat.S_IWOTH), oct(mode)
    assert not stat.S_IMODE(path.parent.stat().st_mode) & stat.S_IWOTH
    assert json.loads(path.read_text())["schema_version"]
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".report.json.")]  # no temp file left


def test_output_to_dev_null_is_written_not_refused(fake_tpu_api, fake_gcs, capsys):
    _seed(fake_tpu_api, fake_gcs)
    assert main(_args("--format", "json", "-o", os.devnull)) == 0
    captured = capsys.readouterr()
    assert "refusing" not in captured.err and captured.out == ""


def test_output_to_dev_stdout_reaches_standard_output(tmp_path):
    import subprocess
    import sys

    script = "from tpudoctor.output import write_text; write_text('/dev/stdout', '{\"ok\": 1}')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ok": 1}


def test_output_to_a_named_pipe_is_written_in_place(tmp_path):
    import threading

    from tpudoctor.output import write_text

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    try:
        write_text(fifo, "report")
    finally:
        reader.join(5)
        if reader.is_alive():  # write_text refused: the reader waits for a writer, so open one to release it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert got == ["report\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_to_a_device_is_still_refused(tmp_path):
    from tpudoctor.errors import UsageError
    from tpudoctor.output import write_text

    link = tmp_path / "report.json"
    link.symlink_to(os.devnull)
    with pytest.raises(UsageError, match="symbolic link"):
        write_text(link, "x")
