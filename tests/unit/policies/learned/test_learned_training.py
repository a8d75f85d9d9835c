"""Training on shadow records with a known signal: labels, AUC, the threshold for
the target fidelity on held-aside records, and the derived scorer."""

from __future__ import annotations

import numpy as np
import pytest
from kit.learned import generate
from sklearn.metrics import roc_auc_score

from policies.learned.curve import fidelity_at
from policies.learned.features import call_features
from policies.learned.labels import labels_from_rows
from policies.learned.scorer import LinearScorer
from policies.learned.training import TrainingSettings, route_labels, train

TARGET = 0.9


@pytest.fixture(scope="module")
def split():
    labels = labels_from_rows(generate(900), max_divergence=0.2)
    cut = int(len(labels) * 0.7)  # train on the past, judge on what came after
    return labels[:cut], labels[cut:]


@pytest.fixture(scope="module")
def trained(split):
    return train(split[0], TrainingSettings(target_fidelity=TARGET, cv_folds=3))


def test_labels_for_both_routes():
    labels = labels_from_rows(generate(300), max_divergence=0.2)
    sim = route_labels(labels, "sim")
    replay = route_labels(labels, "replay")
    assert len(sim) == 300
    by_tool = {
        tool: [label.acceptable for label in replay if label.facts.tool == tool] for tool in ("get_motto", "get_visits")
    }
    # The constant answer replays faithfully; the counter never does.
    assert by_tool["get_motto"] and all(by_tool["get_motto"])
    assert by_tool["get_visits"] and not any(by_tool["get_visits"])
    # status and structure kinds are never acceptable, whatever the score.
    assert not any(label.acceptable for label in sim if label.kind in ("status", "structure"))


@pytest.mark.parametrize("route", ["sim", "replay"])
def test_auc_and_threshold_on_held_aside_records(split, trained, route):
    held = route_labels(split[1], route)
    report = trained.reports[route]
    assert report.trained and report.auc >= 0.85, report.to_json()
    scorer = LinearScorer.from_classifier(trained.classifiers[route])
    probabilities = [scorer.probability(call_features(label.facts)) for label in held]
    y = [label.acceptable for label in held]
    assert roc_auc_score(y, probabilities) >= 0.85
    share, fidelity = fidelity_at(trained.thresholds[route], probabilities, [label.divergence for label in held])
    assert fidelity >= TARGET, (share, fidelity)
    assert share > 0.2  # it does send calls to the cheaper route


def test_derived_scorer_agrees_with_predict_proba(split, trained):
    for route in ("sim", "replay"):
        held = route_labels(split[1], route)
        X = [call_features(label.facts) for label in held]
        classifier = trained.classifiers[route]
        expected = classifier.predict_proba(X)[:, 1]
        scorer = LinearScorer.from_classifier(classifier)
        got = np.array([scorer.probability(x) for x in X])
        assert np.max(np.abs(got - expected)) <= 1e-6


def test_a_route_with_one_class_uses_the_per_tool_estimate():
    rows = [r for r in generate(300) if r["tool"] == "get_motto"]
    result = train(labels_from_rows(rows), TrainingSettings(cv_folds=3))
    assert not result.reports["replay"].trained
    assert "all" in result.reports["replay"].why_not and "acceptable" in result.reports["replay"].why_not
    assert "replay" not in result.classifiers


def test_the_policys_probabilities_are_predict_probas_for_new_and_repeated_calls(split, trained):
    """The decision path scores a call's static features once per call (kept) and its
    moving ones (step, statistics) each time: still predict_proba, within 1e-6."""
    from calls import Call, Session
    from policies.learned import LearnedModel, LearnedPolicy, LearnedSettings, RouteModel
    from policies.learned.features import CallFacts
    from policies.safety.verdict import SafetyVerdict

    model = LearnedModel(
        {
            route: RouteModel(LinearScorer.from_classifier(c), trained.thresholds[route])
            for route, c in trained.classifiers.items()
        },
        digest="t",
    )
    policy = LearnedPolicy(LearnedSettings(min_labels=0, explore_rate=0.0), model=model)
    safe = SafetyVerdict("safe", "a read", analysed=True)
    calls = [
        Call("mcp", "srv", "get_weather", {"city": "Oslo"}, "s"),
        Call("mcp", "srv", "get_weather", {"city": {"name": "Rome"}}, "s"),
    ]
    compared = 0
    for step in (1, 7, 7, 300):  # a repeated call hits the kept static score
        for call in calls:
            session = Session("s")
            session.steps = step
            facts = CallFacts(call.channel, call.server, call.tool, call.arguments, "safe", step, None)
            [features] = [call_features(facts)]
            for candidate in policy.assess(call, session, safe).candidates:
                if candidate.probability is None:
                    continue
                expected = trained.classifiers[candidate.route].predict_proba([features])[0, 1]
                assert abs(candidate.probability - expected) <= 1e-6
                compared += 1
    assert compared == 8  # the sim route of both calls at four steps


def test_the_decision_path_agrees_with_predict_proba_with_its_cache(split, trained):
    """The policy scores a call as a cached static part plus the step and statistics:
    still predict_proba's P(acceptable), on a first call, a repeated (cached) one, and
    after a model swap (the cache follows the model)."""
    from calls import Call, Session
    from policies.learned import LearnedModel, LearnedPolicy, LearnedSettings, RouteModel
    from policies.learned.features import tool_key
    from policies.learned.state import LearnedState
    from policies.safety.verdict import SafetyClass, SafetyVerdict

    def model_of(classifiers, digest):
        return LearnedModel(
            {r: RouteModel(LinearScorer.from_classifier(c), 0.5) for r, c in classifiers.items()}, digest=digest
        )

    safe = SafetyVerdict(SafetyClass.SAFE, "read-only")
    policy = LearnedPolicy(
        LearnedSettings(min_labels=0, explore_rate=0.0, replay_min_sessions=0),
        replay_key_of=lambda call: "recorded",
        model=model_of(trained.classifiers, "a"),
    )
    other = train(split[0][: len(split[0]) // 2], TrainingSettings(target_fidelity=TARGET, cv_folds=3))
    for classifiers, digest in ((trained.classifiers, "a"), (other.classifiers, "b")):
        policy.model = model_of(classifiers, digest)
        held = [label for label in split[1] if label.facts.safety == "safe"][:60]
        assert len(held) >= 30
        expected = {
            route: classifiers[route].predict_proba([call_features(label.facts) for label in held])[:, 1]
            for route in ("sim", "replay")
        }
        for i, label in enumerate(held):
            facts = label.facts
            policy.state = LearnedState(
                stats={tool_key(facts.channel, facts.server, facts.tool): facts.stats},
                recorded_keys=frozenset({"recorded"}),
            )
            session = Session("s", steps=facts.step)
            for _ in range(2):  # the second time from the cache
                candidates = {
                    c.route: c.probability
                    for c in policy.assess(
                        Call(facts.channel, facts.server, facts.tool, dict(facts.arguments), "s"), session, safe
                    ).candidates
                }
                for route in ("sim", "replay"):
                    assert abs(candidates[route] - expected[route][i]) <= 1e-6, (digest, route, i)
