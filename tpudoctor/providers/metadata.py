"""The GCE metadata server's view of this VM: is it a TPU VM, which slice, which worker."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, GatherError, Unavailable
from tpudoctor.gcp.metadata import (
    DMI_PRODUCT_NAME,
    MetadataNoAnswer,
    MetadataServerBroken,
    MetadataUnavailable,
    dmi_says_not_google,
    read_tpu_vm,
)
from tpudoctor.provider import FactProvider

NOT_ON_GCE = "not running on a Google Cloud VM (no metadata server)"


class MetadataProvider(FactProvider):
    name = "metadata"
    provides = ("metadata.tpu_vm",)
    timeout_s = 15.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        cloud = ctx.cloud
        host, overridden = cloud.endpoints.metadata_host, cloud.endpoints.metadata_overridden
        sysfs_root = cloud.endpoints.sysfs_root
        if not overridden and dmi_says_not_google(sysfs_root):
            return {"metadata.tpu_vm": Unavailable(f"{NOT_ON_GCE}: the firmware names another vendor")}
        try:
            vm = read_tpu_vm(cloud.metadata)
        except MetadataServerBroken as exc:
            return {"metadata.tpu_vm": GatherError(self.name, f"the metadata server is broken: {exc}")}
        except MetadataNoAnswer as exc:
            if overridden or _dmi_says_google(sysfs_root):  # a server must be there, so silence is a fault
                return {"metadata.tpu_vm": GatherError(self.name, f"the metadata server did not answer: {exc}")}
            return {"metadata.tpu_vm": Unavailable(f"{NOT_ON_GCE}: {exc}")}
        except MetadataUnavailable as exc:
            return {"metadata.tpu_vm": Unavailable(f"{NOT_ON_GCE}: {exc}")}
        vm["metadata_host"] = host
        return {"metadata.tpu_vm": vm}


def _dmi_says_google(sysfs_root: str) -> bool:
    try:
        return "google" in (Path(sysfs_root) / DMI_PRODUCT_NAME).read_text(errors="replace").lower()
    except OSError:
        return False
