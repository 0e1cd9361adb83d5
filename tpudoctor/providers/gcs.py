"""Cloud Storage facts for the user's data, checkpoint and log paths.

``gcs.paths`` is parsing only (no network). ``GcsRemoteProvider`` asks Cloud Storage about each
bucket once (metadata, ``test_iam_permissions``), lists data prefixes, reads the first bytes of
a few data files, and writes a probe object only when the user passed ``--write-probe``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from tpudoctor.cloud_knowledge.iam import READ_PERMISSIONS, WRITE_PERMISSIONS
from tpudoctor.cloud_knowledge.uri import WRITABLE_ROLES, has_glob, listing_prefix, parse_path
from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.gcp.errors import ApiCallFailed
from tpudoctor.gcp.storage import StorageApi
from tpudoctor.provider import FactProvider

NO_PATHS = ("no data, checkpoint or log paths were given (--data, --checkpoint-dir, --log-dir "
            "or the config file)")
NO_GS_PATHS = "none of the given paths is a gs:// URI"
LIST_LIMIT = 10_000
HEAD_FILES = 2
HEAD_BYTES = 1 << 20


def _all_paths(ctx: RunContext) -> list[dict[str, Any]]:
    o = ctx.options
    return ([parse_path(p, "data") for p in o.data_paths]
            + [parse_path(p, "checkpoint") for p in o.checkpoint_dirs]
            + [parse_path(p, "log") for p in o.log_dirs])


class GcsPathsProvider(FactProvider):
    name = "gcs_paths"
    provides = ("gcs.paths",)
    timeout_s = 1.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        paths = _all_paths(ctx)
        return {"gcs.paths": paths if paths else Unavailable(NO_PATHS)}


class GcsRemoteProvider(FactProvider):
    name = "gcs"
    provides = ("gcp.identity", "gcs.buckets", "gcs.objects", "gcs.record_heads", "gcs.write_probe")
    needs = ("gcs.paths",)
    timeout_s = 180.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        paths = facts.value("gcs.paths")
        if not paths:
            why = Unavailable(NO_PATHS)
            return {key: why for key in self.provides}
        usable = [p for p in paths if p["kind"] == "gs" and not any(x["level"] == "fail" for x in p["problems"])]
        probe_off = Unavailable("--write-probe was not given: tpudoctor never writes to your buckets unless asked")
        if not usable:
            why = Unavailable(NO_GS_PATHS if not any(p["kind"] == "gs" for p in paths)
                              else "no well-formed gs:// path to check (see GCS-001)")
            return {"gcp.identity": why, "gcs.buckets": why, "gcs.objects": why, "gcs.record_heads": why,
                    "gcs.write_probe": probe_off if not ctx.options.write_probe else why}

        try:
            api = ctx.cloud.storage
            identity = api.identity
        except ApiCallFailed as exc:
            failure = exc.failure.to_dict()
            buckets = {p["bucket"]: {"bucket": p["bucket"], "failure": failure} for p in usable}
            why = Unavailable(f"Cloud Storage cannot be reached without credentials: {exc.failure.message}")
            return {"gcp.identity": {"principal": None, "kind": "none", "source": exc.failure.message},
                    "gcs.buckets": buckets, "gcs.objects": why, "gcs.record_heads": why,
                    "gcs.write_probe": probe_off if not ctx.options.write_probe else why}

        buckets = {name: self._bucket(api, name, [p for p in usable if p["bucket"] == name])
                   for name in dict.fromkeys(p["bucket"] for p in usable)}
        objects: dict[str, Any] = {}
        heads: list[dict[str, Any]] = []
        for p in usable:
            if p["role"] != "data" or not buckets[p["bucket"]].get("exists"):
                continue
            objects[p["raw"]], files = self._list(api, p)
            for obj in files[:HEAD_FILES]:
                heads.append(self._head(api, p, obj))
        return {
            "gcp.identity": identity.to_dict(),
            "gcs.buckets": buckets,
            "gcs.objects": objects if objects else Unavailable("no gs:// data path (--data) in an existing bucket"),
            "gcs.record_heads": heads if heads else Unavailable("no data files were read (no gs:// data path with objects)"),
            "gcs.write_probe": self._write_probe(api, usable, buckets) if ctx.options.write_probe else probe_off,
        }

    @staticmethod
    def _bucket(api: StorageApi, name: str, paths: list[dict[str, Any]]) -> dict[str, Any]:
        roles = sorted({p["role"] for p in paths})
        wanted = READ_PERMISSIONS + (WRITE_PERMISSIONS if set(roles) & WRITABLE_ROLES else ())
        info: dict[str, Any] = {"bucket": name, "roles": roles, "paths": [p["raw"] for p in paths],
                                "exists": None, "failure": None, "permissions_wanted": list(wanted)}
        try:
            info.update(api.bucket_info(name))
            info["exists"] = True
        except ApiCallFailed as exc:
            info["failure"] = exc.failure.to_dict()
            if exc.failure.kind == "not_found":
                info["exists"] = False
                return info
        try:
            granted = api.granted_permissions(name, wanted)
            info["permissions_granted"] = sorted(granted)
            info["permissions_missing"] = [p for p in wanted if p not in granted]
            if info["exists"] is None:
                info["exists"] = True  # testPermissions answers 404 for a missing bucket
        except ApiCallFailed as exc:
            info["permissions_failure"] = exc.failure.to_dict()
            if exc.failure.kind == "not_found":
                info["exists"] = False
        return info

    @staticmethod
    def _list(api: StorageApi, path: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        prefix = path["prefix"] or ""
        literal = listing_prefix(prefix)
        result: dict[str, Any] = {"bucket": path["bucket"], "prefix": prefix, "failure": None}
        try:
            found, truncated = api.list_objects(path["bucket"], literal, limit=LIST_LIMIT)
        except ApiCallFailed as exc:
            result["failure"] = exc.failure.to_dict()
            return result, []
        if has_glob(prefix):
            found = [o for o in found if fnmatch.fnmatchcase(o["name"], prefix)]
        elif prefix and not prefix.endswith("/"):
            # gs://b/train means the object "train" or the folder "train/", not "train2/...".
            exact = [o for o in found if o["name"] == prefix or o["name"].startswith(prefix + "/")]
            found = exact or found
        files = [o for o in found if not o["name"].endswith("/") and o["size_bytes"] > 0]
        result.update({
            "object_count": len(found),
            "total_bytes": sum(o["size_bytes"] for o in found),
            "empty_object_count": sum(1 for o in found if o["size_bytes"] == 0 and not o["name"].endswith("/")),
            "truncated": truncated,
            "first_objects": [o["name"] for o in found[:5]],
        })
        return result, files

    @staticmethod
    def _head(api: StorageApi, path: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
        entry: dict[str, Any] = {"path": path["raw"], "uri": f"gs://{path['bucket']}/{obj['name']}",
                                 "size_bytes": obj["size_bytes"], "head": None, "failure": None}
        try:
            entry["head"] = api.read_head(path["bucket"], obj["name"], min(HEAD_BYTES, obj["size_bytes"]))
        except ApiCallFailed as exc:
            entry["failure"] = exc.failure.to_dict()
        return entry

    @staticmethod
    def _write_probe(api: StorageApi, usable: list[dict[str, Any]], buckets: dict[str, Any]) -> Any:
        writable = [p for p in usable if p["role"] in WRITABLE_ROLES and buckets[p["bucket"]].get("exists")]
        if not writable:
            return Unavailable("--write-probe needs a gs:// --checkpoint-dir or --log-dir in an existing bucket")
        results = []
        for p in writable:
            name = api.probe_object_name(p["prefix"] or "")
            step: dict[str, Any] = {"path": p["raw"], "object": f"gs://{p['bucket']}/{name}",
                                    "written": False, "deleted": False, "write_failure": None, "delete_failure": None}
            try:
                api.write_object(p["bucket"], name, b"tpudoctor write probe; safe to delete\n")
                step["written"] = True
                api.delete_object(p["bucket"], name)
                step["deleted"] = True
            except ApiCallFailed as exc:
                step["write_failure" if not step["written"] else "delete_failure"] = exc.failure.to_dict()
            results.append(step)
        return results
