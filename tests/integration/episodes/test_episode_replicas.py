"""An episode survives its replica: opened and stepped on replica A, A killed with
SIGKILL, stepped on replica B of the same Redis store with the same history given to
the world model, the same seed and the same perturbation counters. An episode whose
real shell sandbox lived on A gets a clear error naming the lost sandbox on B, flagged
`infra_error`, and no fresh sandbox."""

from __future__ import annotations

import json

import pytest
from kit.episodes import text_of
from kit.launch import records_of, toolbox_server
from kit.model_stub import ModelStub
from kit.replicas import kill, two_replicas
from kit.sandboxes import owner_of, sandboxes

from router.cli.launch import stop

pytestmark = pytest.mark.integration

PLAN = {"rules": [{"name": "flaky-echo", "kind": "error", "probability": 0.4, "match": {"tool": "echo"}}]}
WORDS = ["alder", "birch", "cedar", "daphne", "elm", "fir", "ginkgo", "hazel"]


def faults_of(steps: list[dict]) -> list[int | None]:
    """Per step, the perturbation rule's call number when the step was perturbed."""
    return [
        (s["observation"]["result"].get("_meta", {}).get("simroute", {}).get("perturbation") or {}).get("n")
        for s in steps
    ]


def test_a_simulated_episode_goes_on_on_another_replica_after_its_own_is_killed(tmp_path, redis_server):
    with ModelStub('{"result": "simulated"}') as stub:
        world_model = {"engine": "openai", "url": stub.url, "model": "stub"}
        with two_replicas(
            tmp_path, redis_server.url, mcpServers={"toolbox": toolbox_server()}, world_model=world_model
        ) as (a, b):
            lister = a.open(options={"route": "real"})  # a real listing leaves the tools' snapshot for both
            a.step(lister, {"type": "list_tools"})
            a.http.delete(f"{a.url}/episodes/{lister}")

            options = {"route": "sim", "perturbation": PLAN}
            episode = a.open(seed=11, episode_id="moving", options=options)
            steps = [a.call(episode, "echo", text=word) for word in WORDS[:4]]
            assert all(s["info"]["provenance"] in ("sim", "none") for s in steps)
            kill(a)

            state = b.state("moving")  # taken over from the shared row
            assert state["seed"] == 11 and state["step_count"] == 4 and state["ended"] is None
            steps += [b.call("moving", "echo", text=word) for word in WORDS[4:]]
            assert [s["info"]["step"] for s in steps] == list(range(1, 9))
            simulated = [json.dumps(body["messages"]) for body in stub.bodies]
            last_prompt = simulated[-1]
            # Every earlier step's turn was given to the world model on B (its history, from the store):
            # the four from A included (examples of the same session are never shown, so this is history).
            assert all(word in last_prompt for word in WORDS[:7]), last_prompt[-3000:]
            assert b.state("moving")["step_count"] == 8

            # The same seed alone on B: the same faults at the same steps (the rule's call numbers went on).
            alone = b.open(seed=11, episode_id="alone", options=options)
            reference = [b.call(alone, "echo", text=word) for word in WORDS]
            assert faults_of(steps) == faults_of(reference)
            assert any(n is not None for n in faults_of(steps))
            assert b.http.delete(f"{b.url}/episodes/moving").status_code == 204
            assert b.http.get(f"{b.url}/episodes/moving").status_code == 404


@pytest.mark.parametrize("ending", ["killed", "stopped"])
def test_an_episode_whose_sandbox_died_with_its_replica_gets_a_clear_infra_error(tmp_path, redis_server, ending):
    sections = {"shell": {"enabled": True, "pool_size": 0}}
    with two_replicas(tmp_path, redis_server.url, **sections) as (a, b):
        a_owner = owner_of(a.process.pid)
        episode = a.open(seed=3, episode_id="boxed", options={"route": "real", "channels": ["shell"]})
        first = a.call(episode, "shell_exec", command="echo kept > /workspace/mark && cat /workspace/mark")
        assert first["info"]["provenance"] == "real" and "kept" in text_of(first)
        assert len(sandboxes({a_owner})) == 1
        if ending == "killed":
            kill(a)
        else:  # SIGTERM: a clean stop removes the sandbox, and its claim stays
            assert stop(a.process, timeout_s=60) == 0

        lost = b.call("boxed", "shell_exec", command="cat /workspace/mark")
        text = text_of(lost)
        assert lost["observation"]["result"]["isError"] is True and lost["info"]["infra_error"] is True
        assert "shell sandbox" in text and a_owner in text and "lost" in text, text
        assert b.state("boxed")["infra_error"] is True
        assert sandboxes({owner_of(b.process.pid)}) == []  # no fresh sandbox was started in its place


def test_a_retried_step_with_the_same_idempotency_key_is_answered_once_across_replicas(tmp_path, redis_server):
    with ModelStub('{"result": "simulated"}') as stub:
        world_model = {"engine": "openai", "url": stub.url, "model": "stub"}
        with two_replicas(
            tmp_path, redis_server.url, mcpServers={"toolbox": toolbox_server()}, world_model=world_model
        ) as (a, b):
            lister = a.open(options={"route": "real"})
            a.step(lister, {"type": "list_tools"})
            episode = a.open(seed=2, episode_id="once", options={"route": "sim"})
            action = {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "only once"}}

            def step(replica, key: str, body: dict = action):
                return replica.http.post(
                    f"{replica.url}/episodes/{episode}/step", json=body, headers={"Idempotency-Key": key}
                )

            first = step(a, "key-1")
            assert first.status_code == 200, first.text
            simulated = len(stub.bodies)
            again = step(b, "key-1")  # the retry lands on the other replica
            assert again.status_code == 200 and again.json() == first.json()
            assert len(stub.bodies) == simulated  # not simulated again
            other = step(b, "key-1", {**action, "arguments": {"text": "something else"}})
            assert other.status_code == 422 and "another action" in other.text
            fresh = step(b, "key-2")
            assert fresh.status_code == 200 and fresh.json()["info"]["step"] == 2 and len(stub.bodies) == simulated + 1
            echoes = [
                r
                for r in records_of(b.log.parent / "simroute.yaml", "--session", f"episode-{episode}")
                if r["tool"] == "echo"
            ]
            assert len(echoes) == 2  # one record per step that ran


def test_a_call_running_on_a_killed_replica_is_marked_interrupted_by_a_live_one(tmp_path, redis_server):
    """Not only at a start: a live replica reaps what a dead one left while it runs."""
    import contextlib
    import threading
    import time

    import httpx2 as httpx

    sections = {"mcpServers": {"toolbox": toolbox_server()}, "sessions": {"replica_lease_s": 1}}
    with two_replicas(tmp_path, redis_server.url, **sections) as (a, b):
        episode = a.open(options={"route": "real"})
        config = b.log.parent / "simroute.yaml"

        def send() -> None:
            with contextlib.suppress(httpx.TransportError):  # its replica is killed before it answers
                a.http.post(f"{a.url}/episodes/{episode}/step", json=_sleep_action())

        sent = threading.Thread(target=send, daemon=True)
        sent.start()

        def sleep_records() -> list[dict]:
            return [r for r in records_of(config, "--session", f"episode-{episode}") if r["tool"] == "sleep"]

        deadline = time.monotonic() + 30
        while not sleep_records() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [r["status"] for r in sleep_records()] == ["started"]  # written ahead, still running on A
        kill(a)
        deadline = time.monotonic() + 15
        while sleep_records()[0]["status"] == "started" and time.monotonic() < deadline:
            time.sleep(0.3)
        [record] = sleep_records()
        assert record["status"] == "interrupted" and "its router stopped" in record["note"]
        assert b.process.poll() is None  # B found it running, not at a restart


def _sleep_action() -> dict:
    return {"type": "call_tool", "tool_name": "sleep", "arguments": {"seconds": 60}}
