"""Shared atheris plumbing: a target returns normally or raises a documented error; anything else is a crash."""

from __future__ import annotations

import sys

import atheris

from tpudoctor.errors import InputError, UsageError


def run(target) -> None:
    def one_input(data: bytes) -> None:
        try:
            target(data)
        except (InputError, UsageError) as exc:
            assert exc.message  # a documented error always says what is wrong
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
