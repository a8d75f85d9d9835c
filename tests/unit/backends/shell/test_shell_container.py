"""Which sandboxes the reaper removes, and that a failed removal does not stop it
(the engine is faked: this is the selection and error handling alone; the real
engine is in tests/integration/test_shell_lifecycle.py)."""

from __future__ import annotations

import os
import socket
import subprocess

from docker.errors import APIError

from backends.shell.container import OWNER_LABEL, create_options, reap_orphans
from records.owners import owner_is_alive, owner_judge, this_process_owner
from router.config import ShellConfig


class FakeContainer:
    def __init__(self, name: str, labels: dict[str, str], *, fails: Exception | None = None) -> None:
        self.name, self.labels, self.fails = name, labels, fails
        self.removed = False

    def remove(self, *, force: bool) -> None:
        assert force
        if self.fails is not None:
            raise self.fails
        self.removed = True


class FakeEngine:
    def __init__(self, containers: list[FakeContainer]) -> None:
        self.all = containers
        self.containers = self
        self.filters: dict | None = None

    def list(self, *, all: bool, filters: dict) -> list[FakeContainer]:
        self.filters = filters
        wanted = filters["label"]
        return [c for c in self.all if wanted in c.labels]


def gone_owner() -> str:
    process = subprocess.Popen(["true"])
    identity = f"{socket.gethostname()}:{process.pid}:1"
    process.wait()
    return identity


def test_owner_is_alive_judges_only_identities_of_this_host():
    assert owner_is_alive(this_process_owner())
    assert not owner_is_alive(gone_owner())
    mine = this_process_owner()
    host, pid, start = mine.split(":")
    assert not owner_is_alive(f"{host}:{pid}:{int(start) + 1}")  # same pid, another process (pid reused)
    assert owner_is_alive(f"another-host:{os.getpid()}:1")  # not ours to judge
    for unreadable in ("", "1", "simroute", "a:b:c", f"{host}:{pid}"):
        assert owner_is_alive(unreadable), unreadable


def test_with_replica_leases_another_hosts_owner_is_alive_only_while_its_lease_runs():
    leased, unleased = "another-host:12:34", "a-third-host:12:34"
    judge = owner_judge(frozenset({leased}))
    assert judge(leased) and not judge(unleased)
    assert judge(this_process_owner()) and not judge(gone_owner())  # this host's: still judged by /proc
    assert judge("simroute")  # not an identity simroute writes: not ours to judge


def test_reaper_removes_only_simroute_sandboxes_of_gone_owners():
    orphan = FakeContainer("orphan", {OWNER_LABEL: gone_owner()})
    live = FakeContainer("live", {OWNER_LABEL: this_process_owner()})
    elsewhere = FakeContainer("elsewhere", {OWNER_LABEL: "another-host:12:34"})
    # From the sandbox image, started by someone else (an old image labelled itself).
    foreign = FakeContainer("foreign", {"org.simroute.sandbox": "1"})
    engine = FakeEngine([orphan, live, elsewhere, foreign])
    removed, failed = reap_orphans(engine)
    assert removed == ["orphan"] and failed == []
    assert engine.filters == {"label": OWNER_LABEL}
    assert [c.name for c in engine.all if c.removed] == ["orphan"]


def test_a_removal_that_fails_is_reported_and_the_others_go_on():
    stuck = FakeContainer(
        "stuck", {OWNER_LABEL: gone_owner()}, fails=APIError("driver failed to remove root filesystem")
    )
    others = [FakeContainer(f"orphan-{n}", {OWNER_LABEL: gone_owner()}) for n in range(3)]
    removed, failed = reap_orphans(FakeEngine([stuck, *others]))
    assert sorted(removed) == ["orphan-0", "orphan-1", "orphan-2"] and all(c.removed for c in others)
    assert failed == ["stuck: driver failed to remove root filesystem"]


def test_the_owner_label_is_set_at_run():
    assert create_options(ShellConfig(), owner="host:1:2")["labels"] == {OWNER_LABEL: "host:1:2"}
