"""Build a fake TPU VM's /sys, /proc and /dev in a folder, for the local-devices provider.

>>> env = build_fake_tpu_host(tmp_path, "v4", chips=4, holders=[(4242, ["python3", "train.py"], [0])])
>>> monkeypatch.setenv(...)  # for each item of env
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tpudoctor.tpu_types import GOOGLE_PCI_VENDOR, PCI_DEVICE_IDS, generation


def _pci_ids(gen: str) -> tuple[str, str]:
    for (device, subsystem), name in PCI_DEVICE_IDS.items():
        if name == gen:
            return device, subsystem or "0x0000"
    raise ValueError(f"no PCI id known for {gen!r}")


def build_fake_tpu_host(
    root: Path,
    gen: str = "v4",
    *,
    chips: int = 4,
    holders: Sequence[tuple[int, Sequence[str], Sequence[int]]] = (),
    lockfile: bool = False,
    lockfile_holders: Sequence[int] = (),
) -> dict[str, str]:
    """Write the fake machine; return the environment variables that point tpudoctor at it.

    ``holders``: (pid, argv, chip indexes it has open). ``lockfile_holders``: pids of those that
    also hold /tmp/libtpu_lockfile open.
    """
    root = Path(root)
    sysfs, proc, dev = root / "sys", root / "proc", root / "dev"
    device_id, subsystem = _pci_ids(gen)
    known = generation(gen)
    if known is None:
        raise ValueError(f"no TPU generation {gen!r}")
    accel = known.device_node == "accel"
    pci = sysfs / "bus" / "pci" / "devices"
    pci.mkdir(parents=True, exist_ok=True)
    (sysfs / "kernel" / "iommu_groups").mkdir(parents=True, exist_ok=True)
    dev.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(chips):
        d = pci / f"0000:00:{4 + i:02x}.0"
        d.mkdir()
        (d / "vendor").write_text(GOOGLE_PCI_VENDOR + "\n")
        (d / "device").write_text(device_id + "\n")
        (d / "subsystem_device").write_text(subsystem + "\n")
        group = sysfs / "kernel" / "iommu_groups" / str(10 + i)
        group.mkdir()
        os.symlink(group, d / "iommu_group")
        if accel:
            path = dev / f"accel{i}"
            path.write_text("")
            paths.append(f"/dev/accel{i}")
        else:
            (dev / "vfio").mkdir(exist_ok=True)
            (dev / "vfio" / str(10 + i)).write_text("")
            paths.append(f"/dev/vfio/{10 + i}")
    # A harmless PCI device that is not a TPU, so the vendor filter is exercised.
    other = pci / "0000:00:01.0"
    other.mkdir()
    (other / "vendor").write_text("0x8086\n")
    (other / "device").write_text("0x7000\n")
    lock_path = root / "tmp" / "libtpu_lockfile"
    if lockfile or lockfile_holders:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_path.write_text("")
    for pid, argv, chip_indexes in holders:
        fd_dir = proc / str(pid) / "fd"
        fd_dir.mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        for n, index in enumerate(chip_indexes):
            os.symlink(paths[index], fd_dir / str(10 + n))
        if pid in lockfile_holders:
            os.symlink(str(lock_path), fd_dir / "9")
        os.symlink("/dev/null", fd_dir / "0")
    # A process that holds nothing of interest.
    (proc / "1" / "fd").mkdir(parents=True)
    (proc / "1" / "cmdline").write_bytes(b"/sbin/init\0")
    return {
        "TPUDOCTOR_SYSFS_ROOT": str(sysfs),
        "TPUDOCTOR_PROC_ROOT": str(proc),
        "TPUDOCTOR_DEV_ROOT": str(dev),
        "TPUDOCTOR_LIBTPU_LOCKFILE": str(lock_path),
    }
