"""gpusizer.policies.fork: a forked child's value or exception comes back to the parent as if called here."""

from __future__ import annotations

import os

import pytest

from gpusizer.base import errors
from gpusizer.policies import fork


def test_the_value_comes_back_from_another_process():
    child = fork.Child(lambda: {"pid": os.getpid(), "findings": [("p", "mandatory", "r", "m")]})
    got = child.result()
    assert got["pid"] not in (os.getpid(), None) and got["findings"] == [("p", "mandatory", "r", "m")]


def test_a_spec_error_comes_back_with_its_field():
    def bad():
        raise errors.SpecError("inference.batch_size: must be >= 1", "inference.batch_size")

    with pytest.raises(errors.SpecError) as info:
        fork.Child(bad).result()
    assert info.value.field == "inference.batch_size" and "must be >= 1" in str(info.value)


def test_an_unpicklable_result_is_reported_not_lost():
    with pytest.raises(RuntimeError, match="function"):
        fork.Child(lambda: lambda: None).result()


def test_the_child_leaves_without_running_the_parents_exit_handlers(tmp_path):
    import atexit

    marker = tmp_path / "ran"
    atexit.register(marker.touch)
    try:
        assert fork.Child(lambda: 42).result() == 42
        assert not marker.exists()
    finally:
        atexit.unregister(marker.touch)


class _TwoArgs(Exception):
    def __init__(self, message, decision):
        super().__init__(message)
        self.decision = decision


def test_an_exception_that_cannot_be_rebuilt_here_still_says_what_it_was():
    # gpusizer.components.workload.InfeasibleWorkloadError(message, decision) pickles in the child but not back.
    def bad():
        raise _TwoArgs("no offer fits chat", object())

    with pytest.raises(RuntimeError, match="_TwoArgs: no offer fits chat"):
        fork.Child(bad).result()


def test_pulumis_config_errors_come_back_as_run_errors_with_their_message():
    """ConfigMissingError(key, secret) pickles in the child but not back: its base, RunError, carries it."""
    import pulumi
    from pulumi.config import ConfigMissingError

    def missing():
        raise ConfigMissingError("gpusizer:workloads", False)

    with pytest.raises(pulumi.RunError, match="Missing required configuration variable 'gpusizer:workloads'") as caught:
        fork.Child(missing).result()
    assert type(caught.value) is pulumi.RunError
