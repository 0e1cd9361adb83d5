"""The GCE metadata server's view of this VM: is it a TPU VM, which slice, which worker."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts, Unavailable
from tpudoctor.gcp.metadata import (
    MetadataClient,
    MetadataUnavailable,
    dmi_says_not_google,
    metadata_host,
    read_tpu_vm,
)
from tpudoctor.provider import FactProvider

NOT_ON_GCE = "not running on a Google Cloud VM (no metadata server)"


class MetadataProvider(FactProvider):
    name = "metadata"
    provides = ("metadata.tpu_vm",)
    timeout_s = 15.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        host, overridden = metadata_host()
        sysfs_root = os.environ.get("TPUDOCTOR_SYSFS_ROOT", "/sys")
        if not overridden and dmi_says_not_google(sysfs_root):
            return {"metadata.tpu_vm": Unavailable(f"{NOT_ON_GCE}: the firmware names another vendor")}
        try:
            vm = read_tpu_vm(MetadataClient(host, timeout_s=min(0.8, ctx.options.api_timeout_s)))
        except MetadataUnavailable as exc:
            return {"metadata.tpu_vm": Unavailable(f"{NOT_ON_GCE}: {exc}")}
        vm["metadata_host"] = host
        return {"metadata.tpu_vm": vm}
