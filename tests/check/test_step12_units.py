"""Pure parts of steps 1 and 2: error mapping, retries, URI parsing, TFRecord framing, TPU types,
and the conformance of every step 1/2 check."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as gexc

from tpudoctor.cloud_knowledge.uri import listing_prefix, parse_path
from tpudoctor.families import load_registry
from tpudoctor.findings import Step
from tpudoctor.gcp.errors import ApiCallFailed, call_with_retries, failure_from_exception
from tpudoctor.gcp.metadata import parse_tpu_env
from tpudoctor.testing import conformance_problems
from tpudoctor.tfrecord import encode_records, masked_crc32c, scan_framing
from tpudoctor.tpu_types import generation_for_pci, is_tpu_api_unsupported, parse_accelerator_type


def test_error_mapping():
    denied = gexc.Forbidden("Permission 'tpu.nodes.get' denied on 'projects/p/locations/z/nodes/n'")
    assert failure_from_exception(denied).permission == "tpu.nodes.get"
    assert failure_from_exception(denied).role == "roles/tpu.viewer"
    assert failure_from_exception(gexc.Forbidden("nope"), permission="storage.objects.list").permission == "storage.objects.list"
    assert failure_from_exception(gexc.NotFound("x")).kind == "not_found"
    assert failure_from_exception(gexc.TooManyRequests("x")).kind == "rate_limited"
    assert failure_from_exception(gexc.ServiceUnavailable("x")).kind == "server_error"
    assert failure_from_exception(requests.ReadTimeout("read timed out")).kind == "timeout"
    refused = failure_from_exception(requests.ConnectionError("[Errno 111] Connection refused"))
    assert refused.kind == "unreachable" and "connection refused" in refused.message


def test_retries_are_bounded_and_only_for_429_and_5xx():
    calls, sleeps = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise gexc.TooManyRequests("slow down")
        return "ok"

    assert call_with_retries(flaky, sleep=sleeps.append) == "ok"
    assert sleeps == [0.25, 0.5]
    calls.clear()

    def forbidden():
        calls.append(1)
        raise gexc.Forbidden("no")

    with pytest.raises(ApiCallFailed) as info:
        call_with_retries(forbidden, sleep=sleeps.append)
    assert len(calls) == 1 and info.value.failure.kind == "permission_denied"

    def down():
        raise gexc.InternalServerError("boom")

    with pytest.raises(ApiCallFailed) as info:
        call_with_retries(down, attempts=3, sleep=lambda s: None)
    assert info.value.failure.attempts == 3 and info.value.failure.http_status == 500


@pytest.mark.parametrize("raw,role,code,suggestion", [
    ("gs://bucket/train", "data", None, None),
    ("gs:/bucket/train", "data", "malformed_scheme", "gs://bucket/train"),
    ("gs:bucket/train", "data", "malformed_scheme", "gs://bucket/train"),
    ("GS://bucket/train", "data", "scheme_case", "gs://bucket/train"),
    ("gs://MyBucket/train", "data", "bucket_case", "gs://mybucket/train"),
    ("gs://b/train", "data", "bucket_name", None),
    ("gs://bucket//train", "data", "double_slash", "gs://bucket/train"),
    ("https://storage.googleapis.com/bucket/train", "data", "http_url", "gs://bucket/train"),
    ("https://console.cloud.google.com/storage/browser/bucket/train", "data", "http_url", "gs://bucket/train"),
    ("s3://bucket/train", "data", "unsupported_scheme", None),
    ("/home/me/ckpt", "checkpoint", "local_writable", "gs://BUCKET/checkpoints"),
    ("/home/me/data", "data", None, None),
])
def test_uri_mistakes(raw, role, code, suggestion):
    problems = parse_path(raw, role)["problems"]
    if code is None:
        assert problems == []
    else:
        assert problems[0]["code"] == code and problems[0]["suggestion"] == suggestion


def test_listing_prefix_stops_at_the_first_glob():
    assert listing_prefix("train/part-*.tfrecord") == "train/part-"
    assert listing_prefix("train") == "train"


def test_tfrecord_framing():
    data = encode_records([b"first", b"second" * 100])
    assert scan_framing(data, at_eof=True).records_checked == 2
    cut = scan_framing(data[:40])
    assert cut.verdict == "valid" and cut.truncated_record  # a head read, not a broken file
    assert scan_framing(data[:40], at_eof=True).verdict == "corrupt"
    flipped = bytearray(data)
    flipped[14] ^= 0xFF
    assert scan_framing(bytes(flipped)).problem == "record 1: data checksum mismatch (5 bytes)"
    assert masked_crc32c(b"") == 0xA282EAD8  # crc32c("") is 0; the mask adds the delta


@pytest.mark.slow
def test_tfrecord_framing_matches_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    path = tmp_path / "x.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in (b"abc", b"x" * 1000, b""):
            writer.write(record)
    assert path.read_bytes() == encode_records([b"abc", b"x" * 1000, b""])


def test_tpu_types():
    assert parse_accelerator_type("v4-8").total_chips == 4
    assert parse_accelerator_type("v6e-8").chips_per_host == 8
    assert parse_accelerator_type("v5litepod-16").hosts == 4
    assert parse_accelerator_type("v5p-16").total_chips == 8
    assert parse_accelerator_type("bogus") is None
    assert generation_for_pci("0x0027", "0x004e") == "v2" and generation_for_pci("0x006f") == "v6e"
    assert is_tpu_api_unsupported("tpu7x-8") and is_tpu_api_unsupported("v7x-16")
    assert not is_tpu_api_unsupported("v6e-8")


def test_parse_tpu_env():
    env = parse_tpu_env("ACCELERATOR_TYPE: 'v5litepod-8'\nCHIPS_PER_HOST_BOUNDS: '2,4,1'\nTOPOLOGY: \"2x4\"\n")
    assert env == {"ACCELERATOR_TYPE": "v5litepod-8", "CHIPS_PER_HOST_BOUNDS": "2,4,1", "TOPOLOGY": "2x4"}


def test_every_step_1_and_2_check_conforms():
    registry = load_registry(plugins=False)
    ours = [c for c in registry.check_classes() if c.step in (Step.NODE, Step.GCS)]
    assert len(ours) >= 14
    for cls in ours:
        assert conformance_problems(cls, set(registry.providers)) == [], cls.id


def test_service_account_key_is_the_reported_identity(tmp_path, monkeypatch):
    """ADC from a key file: the identity is the key's service account, with no network call."""
    import json

    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
    from tpudoctor.gcp.session import Endpoints, Session

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path = tmp_path / "key.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "p", "private_key_id": "1", "private_key": pem,
        "client_email": "trainer@p.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    identity = Session(Endpoints.from_environ(), on_google_cloud=False).identity_for(None)
    assert identity.principal == "trainer@p.iam.gserviceaccount.com"
    assert identity.iam_member == "serviceAccount:trainer@p.iam.gserviceaccount.com"
    assert str(path) in identity.source


def test_no_adc_off_google_cloud_fails_fast_without_probing(tmp_path, monkeypatch):
    from tpudoctor.gcp.session import Endpoints, Session

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    session = Session(Endpoints.from_environ(), on_google_cloud=False)
    with pytest.raises(ApiCallFailed) as info:
        session.identity_for("https://tpu.googleapis.com")
    assert info.value.failure.kind == "no_credentials"
    identity = session.identity_for("http://127.0.0.1:1")
    assert identity.kind == "anonymous"
