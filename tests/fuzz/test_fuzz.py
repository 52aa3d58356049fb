"""Issue #12, the fast fuzz suite: every target of fuzz_targets.py for a bounded, derandomized run
(hypothesis, no database: the same inputs on every machine). A failure prints the input bytes;
`python bench/fuzz_campaign.py --replay FILE --targets NAME` replays a saved reproducer."""
from __future__ import annotations

import pytest
from fuzz_targets import TARGETS
from hypothesis import HealthCheck, given, settings

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
           HealthCheck.function_scoped_fixture]


@pytest.mark.parametrize("name", list(TARGETS))
def test_target_only_fails_with_its_documented_error(name):
    target = TARGETS[name]

    @settings(max_examples=target.examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=SLOW_OK)
    @given(target.strategy())
    def run(data: bytes) -> None:
        target.run(data)

    run()


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_seed_is_accepted_quietly(name):
    """The valid inputs the mutator starts from pass the property too (and the harness works)."""
    target = TARGETS[name]
    seeds = target.seeds()
    assert seeds
    for seed in seeds:
        target.run(seed)
