"""tpudoctor.gcp.Session (one per run: endpoints, credentials, identity, on Google Cloud, the clients) and
tpudoctor.locations (local or gs://: read, list, write), against the loopback fakes."""

from __future__ import annotations

import json

import pytest

from tpudoctor import locations, output
from tpudoctor.errors import InputError
from tpudoctor.gcp.errors import ApiCallFailed, ApiFailure, user_error
from tpudoctor.gcp.session import Endpoints, Session
from tpudoctor.testing.fake_metadata import FakeMetadataServer, tpu_vm_metadata
from tpudoctor.testing.fake_tpu_api import make_node

pytest_plugins = ["tpudoctor.testing.gcp_fixtures"]


def test_endpoints_are_read_once_from_the_environment_given():
    environ = {"TPUDOCTOR_TPU_ENDPOINT": "http://127.0.0.1:1", "STORAGE_EMULATOR_HOST": " http://127.0.0.1:2 ",
               "TPUDOCTOR_LOGGING_ENDPOINT": "http://127.0.0.1:3", "TPUDOCTOR_MONITORING_ENDPOINT": "127.0.0.1:4",
               "GCE_METADATA_HOST": "http://127.0.0.1:5/", "TPUDOCTOR_SYSFS_ROOT": "/fake/sys",
               "GOOGLE_APPLICATION_CREDENTIALS": "/keys/sa.json"}
    endpoints = Endpoints.from_environ(environ)
    assert endpoints == Endpoints(tpu="http://127.0.0.1:1", storage="http://127.0.0.1:2", logging="http://127.0.0.1:3",
                                  monitoring="127.0.0.1:4", metadata_host="127.0.0.1:5", metadata_overridden=True,
                                  adc_file="/keys/sa.json", sysfs_root="/fake/sys")
    plain = Endpoints.from_environ({"HOME": "/nonexistent"})
    assert (plain.tpu, plain.metadata_host, plain.metadata_overridden, plain.adc_file) == (
        None, "169.254.169.254", False, None)
    assert plain.tpu_url == "https://tpu.googleapis.com"


def test_a_local_endpoint_is_called_anonymously_and_each_client_is_built_once(fake_tpu_api):
    fake_tpu_api.add_node(make_node("p", "us-central2-b", "my-tpu"))
    session = Session.from_environment(timeout_s=5.0)
    api = session.tpu
    assert api is session.tpu  # built once
    assert api.identity.kind == "anonymous" and fake_tpu_api.url in api.identity.source
    assert api.get_node("p", "us-central2-b", "my-tpu")["state"] == "READY"


def test_without_credentials_off_google_cloud_every_client_says_so_at_once(gcp_env):
    session = Session.from_environment(timeout_s=5.0)
    for client in ("tpu", "storage", "logging"):
        with pytest.raises(ApiCallFailed) as info:
            getattr(session, client)
        assert info.value.failure.kind == "no_credentials"
        assert "this is not a Google Cloud VM" in info.value.failure.message
    assert session.on_google_cloud is False


def test_on_google_cloud_is_asked_of_the_metadata_server_once(gcp_env, monkeypatch):
    with FakeMetadataServer(tpu_vm_metadata("p", "us-central2-b", "my-tpu")) as server:
        monkeypatch.setenv("GCE_METADATA_HOST", server.host)
        session = Session.from_environment()
        assert session.on_google_cloud and session.with_timeout(1.0).on_google_cloud and session.on_google_cloud
        assert server.requests == ["/computeMetadata/v1/project/project-id"]


def test_firmware_of_another_vendor_means_off_google_cloud_without_asking(gcp_env, monkeypatch):
    (gcp_env / "sys" / "class" / "dmi" / "id").mkdir(parents=True)
    (gcp_env / "sys" / "class" / "dmi" / "id" / "product_name").write_text("KVM\n")
    monkeypatch.delenv("GCE_METADATA_HOST")
    assert Session.from_environment().on_google_cloud is False


def test_a_copy_with_another_timeout_shares_the_credentials(gcp_env):
    session = Session.from_environment(timeout_s=10.0)
    quick = session.with_timeout(1.0)
    assert quick.timeout_s == 1.0 and quick.endpoints is session.endpoints
    with pytest.raises(ApiCallFailed):
        session.identity_for("https://tpu.googleapis.com")
    assert "adc" in quick._shared  # resolved once for both
    assert session.with_timeout(10.0) is session


@pytest.mark.parametrize("failure,kwargs,message,hint", [
    (ApiFailure("permission_denied", "denied", 403, "storage.objects.list"), {"bucket": "b"},
     "cannot list gs://b/x: permission denied: the caller lacks storage.objects.list (granted by "
     "roles/storage.objectViewer)",
     "grant it: gcloud storage buckets add-iam-policy-binding gs://b --member=serviceAccount:SERVICE_ACCOUNT_EMAIL "
     "--role=roles/storage.objectViewer"),
    (ApiFailure("permission_denied", "denied", 403), {"project": "p", "permission": "tpu.nodes.get"},
     "cannot list gs://b/x: permission denied: the caller lacks tpu.nodes.get (granted by roles/tpu.viewer)",
     "grant it: gcloud projects add-iam-policy-binding p --member=serviceAccount:SERVICE_ACCOUNT_EMAIL "
     "--role=roles/tpu.viewer"),
    (ApiFailure("no_credentials", "no ADC"), {"bucket": "b"},
     "cannot list gs://b/x: no Google Cloud credentials: no ADC",
     "gcloud auth application-default login or export GOOGLE_APPLICATION_CREDENTIALS="
     "/path/to/service-account-key.json"),
    (ApiFailure("not_found", "gone", 404), {"project": "p", "zone": "z"},
     "cannot list gs://b/x: not found (gone)",
     "check the name, project and zone (gcloud compute tpus tpu-vm list --zone z --project p)"),
    (ApiFailure("server_error", "boom", 503, attempts=3), {"bucket": "b", "alternative": "try later"},
     "cannot list gs://b/x: server error after 3 attempts: boom",
     "check the path, your network and that your credentials can read the bucket; or try later"),
])
def test_one_mapping_from_a_failure_to_a_message_and_its_fix(failure, kwargs, message, hint):
    error = user_error(failure, "cannot list gs://b/x", **kwargs)
    assert isinstance(error, InputError) and (error.message, error.hint) == (message, hint)


def test_the_grant_names_who_was_refused():
    from tpudoctor.gcp.credentials import Identity

    caller = Identity("trainer@p.iam.gserviceaccount.com", "service_account", "key")
    error = user_error(ApiFailure("permission_denied", "denied", 403, "storage.objects.get"), "cannot read gs://b/o",
                       identity=caller, bucket="b")
    assert "trainer@p.iam.gserviceaccount.com lacks storage.objects.get" in error.message
    assert "--member=serviceAccount:trainer@p.iam.gserviceaccount.com" in error.hint


# --- tpudoctor.locations ----------------------------------------------------------------------------

def test_a_bucket_prefix_reads_lists_and_writes_like_a_folder(fake_gcs, tmp_path):
    fake_gcs.create_bucket("bkt")
    fake_gcs.upload("bkt", "runs/a.json", b'{"n": 1}')
    fake_gcs.upload("bkt", "runs/deeper/c.json", b"{}")
    fake_gcs.upload("bkt", "runs/notes.txt", b"x")
    session = Session.from_environment(timeout_s=5.0)
    assert locations.list_level("gs://bkt/runs", session=session) == (["a.json", "notes.txt"], ["deeper"])
    found = locations.list_files("gs://bkt/runs/", suffix=".json", limit=10, session=session)
    assert [e.location for e in found] == ["gs://bkt/runs/a.json"] and found[0].size_bytes == 8
    assert found[0].updated_s and found[0].created is not None
    assert json.loads(locations.read_bytes("gs://bkt/runs/a.json", session=session)) == {"n": 1}
    output.write_text("gs://bkt/out/report.json", "{}\n", fmt="json", session=session)
    assert "out/report.json" in fake_gcs.object_names("bkt")
    assert locations.find_object("gs://bkt/out/report.json", session=session).size_bytes == 3
    assert locations.find_object("gs://bkt/out/missing.json", session=session) is None

    (tmp_path / "runs" / "deeper").mkdir(parents=True)
    (tmp_path / "runs" / "a.json").write_text('{"n": 1}')
    assert locations.list_level(str(tmp_path / "runs")) == (["a.json"], ["deeper"])
    assert [e.location for e in locations.list_files(str(tmp_path / "runs"), suffix=".json", limit=10)] == [
        str(tmp_path / "runs" / "a.json")]
    output.write_text(str(tmp_path / "out.txt"), "hi")
    assert locations.read_bytes(str(tmp_path / "out.txt")) == b"hi"


def test_a_bucket_that_refuses_is_one_clear_error(fake_gcs):
    fake_gcs.create_bucket("locked")
    fake_gcs.deny("locked", "storage.objects.list", "storage.objects.create")
    with pytest.raises(InputError) as listing:
        locations.list_files("gs://locked/ci", suffix=".json", limit=10)
    assert listing.value.message.startswith("cannot list gs://locked/ci: permission denied")
    assert "add-iam-policy-binding gs://locked" in listing.value.hint
    with pytest.raises(InputError) as writing:
        output.write_text("gs://locked/r.json", "{}")
    assert "storage.objects.create" in writing.value.message and "roles/storage.objectUser" in writing.value.message


def test_too_many_objects_and_a_missing_folder_are_input_errors(fake_gcs, tmp_path):
    fake_gcs.create_bucket("bkt")
    for i in range(3):
        fake_gcs.upload("bkt", f"p/{i}.json", b"{}")
    with pytest.raises(InputError, match="holds more than 2 objects"):
        locations.list_files("gs://bkt/p", suffix=".json", limit=2)
    with pytest.raises(InputError, match="history folder .* does not exist"):
        locations.list_files(str(tmp_path / "nope"), limit=2, what="history folder")
    with pytest.raises(InputError, match="cannot read"):
        locations.read_bytes(str(tmp_path / "nope.json"))
