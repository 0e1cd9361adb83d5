"""Package discovery for the mapped layout (metadata lives in pyproject.toml).

``checks/``, ``reports/`` and ``reference_models/`` install as ``tpudoctor.checks`` and so on
(``[tool.setuptools.package-dir]``); a new sub-folder is picked up without editing a list.
"""

from setuptools import find_packages, setup

MAPPED = ("checks", "reports", "reference_models")

packages = find_packages(include=["tpudoctor", "tpudoctor.*"])
for top in MAPPED:
    packages += [f"tpudoctor.{name}" for name in find_packages(include=[top, f"{top}.*"])]

setup(packages=packages)
