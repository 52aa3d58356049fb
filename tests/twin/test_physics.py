"""The closed-form room physics against the per-tick recurrence it solves."""
import pytest

from twin.physics import ABOVE, BELOW, COEFFICIENTS, Term, Trajectory


def recurrence(x, terms, ticks):
    """The model as written: x[n+1] = x[n] + sum of active k * (target - x[n])."""
    out = [x]
    for _ in range(ticks):
        x = x + sum(t.k * (t.target - x) for t in terms if t.active_at(x))
        out.append(x)
    return out


def test_closed_form_matches_the_recurrence():
    terms = (Term("ambient", 5e-6, 30.0), Term("ac", 6.7e-5, 24.0, ABOVE), Term("heater", 2e-5, 18.0, BELOW))
    trajectory = Trajectory(27.0, 100, terms)
    assert trajectory.active == (True, True, False)
    expected = recurrence(27.0, terms, 5000)
    for n in (0, 1, 7, 600, 4999, 5000):
        assert trajectory.value(100 + n) == pytest.approx(expected[n], abs=1e-9)
    assert trajectory.value(100) == 27.0  # the anchor itself is exact
    assert trajectory.flip_tick is None   # x* is above 24 and 18: nothing switches


def test_flip_tick_is_the_first_crossing_found_by_scanning():
    # Heating towards 23 from 22 while a 30 °C outside pulls up: the heater's condition
    # (x < 23) ends at the first tick the value reaches 23.
    terms = (Term("ambient", 5e-6, 30.0), Term("heater", 1e-4, 23.0, BELOW))
    trajectory = Trajectory(22.0, 0, terms)
    first = next(n for n in range(1, 200_000) if not trajectory.value(n) < 23.0)
    assert trajectory.flip_tick == first
    # After the switch the room only drifts up: the heater never comes back on.
    after = Trajectory(trajectory.value(first), first, terms)
    assert after.active == (True, False) and after.flip_tick is None


def test_switching_on_later_and_state_round_trip():
    terms = (Term("ambient", 5e-6, 30.0), Term("ac", 6.7e-5, 24.0, ABOVE))
    trajectory = Trajectory(23.0, 50, terms)
    assert trajectory.active == (True, False) and trajectory.flip_tick > 50
    assert trajectory.value(trajectory.flip_tick - 1) <= 24.0 < trajectory.value(trajectory.flip_tick)
    copy = Trajectory.from_state(trajectory.state())
    assert copy.state() == trajectory.state() and copy.flip_tick == trajectory.flip_tick
    assert copy.value(123456) == trajectory.value(123456)


def test_coefficients_are_plausible():
    # an AC at full fan, 5 °C above setpoint: about 1 °C in the first 5 minutes (3000 ticks)
    k = COEFFICIENTS["ac_k_full_fan"]
    assert 0.8 < k * 5 * 3000 < 1.2
    with pytest.raises(ValueError, match="coefficients"):
        Trajectory(20.0, 0, (Term("x", 1.5, 20.0),))
