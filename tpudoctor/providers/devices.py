"""TPU chips on this machine: the PCI bus, the device nodes, who holds them, the libtpu lock.

Roots are configurable so tests can build a fake v4 or v6e machine in a temporary folder:
``TPUDOCTOR_SYSFS_ROOT`` (default /sys), ``TPUDOCTOR_PROC_ROOT`` (/proc), ``TPUDOCTOR_DEV_ROOT``
(/dev) and ``TPUDOCTOR_LIBTPU_LOCKFILE`` (/tmp/libtpu_lockfile).
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpudoctor.context import RunContext
from tpudoctor.facts import Facts
from tpudoctor.provider import FactProvider
from tpudoctor.tpu_types import GOOGLE_PCI_VENDOR, generation_for_pci

_DEVICE_TARGET = re.compile(r"^/dev/(accel\d+|vfio/\d+)$")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def scan_pci(sysfs_root: Path) -> list[dict[str, Any]]:
    chips = []
    devices = sysfs_root / "bus" / "pci" / "devices"
    for dev in sorted(devices.glob("*")) if devices.is_dir() else []:
        if (_read(dev / "vendor") or "").lower() != GOOGLE_PCI_VENDOR:
            continue
        device_id = (_read(dev / "device") or "").lower()
        subsystem = (_read(dev / "subsystem_device") or "").lower() or None
        group = dev / "iommu_group"
        chips.append({
            "pci_address": dev.name,
            "device_id": device_id,
            "subsystem_device_id": subsystem,
            "generation": generation_for_pci(device_id, subsystem),
            "iommu_group": os.path.basename(os.readlink(group)) if group.is_symlink() else None,
        })
    return chips


def scan_device_files(dev_root: Path) -> list[str]:
    found = sorted(str(p) for p in dev_root.glob("accel[0-9]*"))
    vfio = dev_root / "vfio"
    if vfio.is_dir():
        found += sorted(str(p) for p in vfio.iterdir() if p.name.isdigit())
    return found


def scan_holders(proc_root: Path, dev_root: Path, lockfile: Path) -> tuple[list[dict[str, Any]], int]:
    """Processes with a TPU device or the libtpu lockfile open: ([{pid, cmdline, files}], unreadable)."""
    holders: list[dict[str, Any]] = []
    unreadable = 0
    own_pid = os.getpid() if str(proc_root) == "/proc" else None
    for pid_dir in proc_root.glob("[0-9]*"):
        if not pid_dir.name.isdigit() or int(pid_dir.name) == own_pid:
            continue
        try:
            fds = list((pid_dir / "fd").iterdir())
        except OSError:
            unreadable += 1
            continue
        files = set()
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if str(dev_root) != "/dev" and target.startswith(str(dev_root)):
                target = "/dev" + target[len(str(dev_root)):]
            if _DEVICE_TARGET.match(target) or target == str(lockfile):
                files.add(target)
        if files:
            raw = (pid_dir / "cmdline").read_bytes() if (pid_dir / "cmdline").exists() else b""
            cmdline = " ".join(p.decode(errors="replace") for p in raw.split(b"\0") if p)
            holders.append({"pid": int(pid_dir.name), "cmdline": cmdline or f"[{_read(pid_dir / 'comm') or '?'}]",
                            "files": sorted(files)})
    holders.sort(key=lambda h: h["pid"])
    return holders, unreadable


class LocalDevicesProvider(FactProvider):
    name = "local_devices"
    provides = ("host.tpu_devices",)
    timeout_s = 10.0

    def gather(self, ctx: RunContext, facts: Facts) -> Mapping[str, Any]:
        sysfs_root = Path(os.environ.get("TPUDOCTOR_SYSFS_ROOT", "/sys"))
        proc_root = Path(os.environ.get("TPUDOCTOR_PROC_ROOT", "/proc"))
        dev_root = Path(os.environ.get("TPUDOCTOR_DEV_ROOT", "/dev"))
        lockfile = Path(os.environ.get("TPUDOCTOR_LIBTPU_LOCKFILE", "/tmp/libtpu_lockfile"))
        chips = scan_pci(sysfs_root)
        gens = collections.Counter(c["generation"] for c in chips if c["generation"])
        holders, unreadable = scan_holders(proc_root, dev_root, lockfile) if chips else ([], 0)
        return {"host.tpu_devices": {
            "chips": chips,
            "chip_count": len(chips),
            "generation": gens.most_common(1)[0][0] if gens else None,
            "device_files": scan_device_files(dev_root) if chips else [],
            "holders": holders,
            "unreadable_processes": unreadable,
            "lockfile": {"path": str(lockfile), "exists": lockfile.exists()},
            "sysfs_root": str(sysfs_root),
            "proc_root": str(proc_root),
        }}
