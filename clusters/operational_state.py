"""Operational State and RVC Operational State cluster servers (Matter 1.3, clusters 1.14 / 7.4).

A run is a *cycle*: named phases with durations in seconds (PhaseList is the names). Time is
anchor based: a run keeps the tick it started and the ticks spent paused, so CurrentPhase and
CountdownTime are derived from the clock in `get()`. Phase changes and the end of the cycle are
discrete events: `next_event_tick()` announces them and `advance_to()` applies them in order,
each at its own tick, so stepping tick by tick and fast-forwarding give identical state.

The RVC variant shares the machinery and adds the trip back to the dock: GoHome (or the end of a
cycle) starts a second timed leg in SeekingCharger that ends Docked. GoHome in the middle of a
cycle suspends the cycle while the robot heads home (Pause and GoHome again work on the way);
docking ends it, and RVC Run Mode returns to Idle (the test plan's TC_RVCOPSTATE_2_5).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer
from clusters.status import MatterError, Status

OpState = Clusters.OperationalState
RvcOpState = Clusters.RvcOperationalState

MAX_PHASES = 32        # PhaseList: max 32 entries
MAX_PHASE_NAME = 64    # each entry: max 64 characters


class _Leg:
    """A timed stretch of work that can be paused: start tick plus paused ticks, plus the work
    ticks skipped over (`skipped`: counted as done without being done, e.g. a skipped area)."""

    def __init__(self, start: int, paused_ticks: int = 0, paused_at: int | None = None, skipped: int = 0):
        self.start = start
        self.paused_ticks = paused_ticks
        self.paused_at = paused_at
        self.skipped = skipped

    @property
    def origin(self) -> int:
        """The tick the work time counts from (start, moved by pauses and skips)."""
        return self.start + self.paused_ticks - self.skipped

    def elapsed(self, tick: int) -> int:
        """Ticks of work done by `tick` (pauses excluded, skipped work included)."""
        return tick - self.start - self.paused_for(tick) + self.skipped

    def paused_for(self, tick: int) -> int:
        return self.paused_ticks + (tick - self.paused_at if self.paused_at is not None else 0)

    def pause(self, tick: int) -> None:
        if self.paused_at is None:
            self.paused_at = tick

    def resume(self, tick: int) -> None:
        if self.paused_at is not None:
            self.paused_ticks += tick - self.paused_at
            self.paused_at = None

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "paused_ticks": self.paused_ticks, "paused_at": self.paused_at,
                "skipped": self.skipped}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> _Leg | None:
        return None if data is None else cls(data["start"], data["paused_ticks"], data["paused_at"],
                                             data.get("skipped", 0))


def normalize_cycle(phases: Iterable[Any] | None) -> list[tuple[str, int]]:
    """Validate a cycle given as [(name, seconds), ...] (or [[name, seconds], ...] from JSON)."""
    out: list[tuple[str, int]] = []
    for i, item in enumerate(phases or ()):
        try:
            name, seconds = item
        except (TypeError, ValueError):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"cycle[{i}]={item!r} is not a (phase name, seconds) pair") from None
        if not isinstance(name, str) or not 0 < len(name) <= MAX_PHASE_NAME:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"cycle[{i}] phase name {name!r} must be a string of 1..{MAX_PHASE_NAME} characters")
        if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"cycle[{i}] ({name}) duration {seconds!r} must be a positive whole number of seconds")
        out.append((name, seconds))
    if len(out) > MAX_PHASES:
        raise MatterError(Status.CONSTRAINT_ERROR, f"a cycle has at most {MAX_PHASES} phases, got {len(out)}")
    return out


class OperationalStateServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = OpState
    revision = 2
    attributes = ("PhaseList", "CurrentPhase", "CountdownTime", "OperationalStateList",
                  "OperationalState", "OperationalError")
    commands = ("Pause", "Stop", "Start", "Resume")
    notes = ("A run is a cycle of timed phases; CountdownTime counts down only while Running.",
             "Start while Running, Stop while Stopped, Pause while Paused and Resume while Running "
             "answer NoError and change nothing; Pause/Resume while Stopped or in Error answer "
             "CommandInvalidInState; Start while in Error answers UnableToStartOrResume.")

    #: Operational states this server can be in (OperationalStateList), spec ids.
    states: tuple[int, ...] = (0, 1, 2, 3)  # Stopped, Running, Paused, Error

    def __init__(self, cycle: Iterable[Any] | None = None, **initial: Any):
        for name in ("PhaseList", "CurrentPhase", "CountdownTime", "OperationalStateList"):
            if name in initial:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{self.cluster.__name__}.{name} follows from the cycle and the run; "
                                  "pass cycle=[(phase, seconds), ...] instead")
        super().__init__(**initial)
        if self._values["OperationalState"] in (self.E.kRunning, self.E.kPaused):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.name} cannot be created mid-run; create it stopped and invoke Start")
        self._cycle = normalize_cycle(cycle)
        self._run: _Leg | None = None  # the cycle in progress
        self.last_worked = 0
        self._values["PhaseList"] = [n for n, _ in self._cycle] or NullValue
        self._values["CurrentPhase"] = self._idle_phase()

    @property
    def E(self):  # the cluster's OperationalStateEnum
        return self.cluster.Enums.OperationalStateEnum

    def defaults(self) -> dict[str, Any]:
        return {
            "PhaseList": NullValue,
            "CurrentPhase": NullValue,
            "CountdownTime": NullValue,
            "OperationalStateList": [self.cluster.Structs.OperationalStateStruct(operationalStateID=s)
                                     for s in self.states],
            "OperationalState": self.E.kStopped,
            "OperationalError": self._error_struct(0),
        }

    # ---- the cycle -----------------------------------------------------------------
    @property
    def cycle(self) -> list[tuple[str, int]]:
        return list(self._cycle)

    @property
    def in_operation(self) -> bool:
        """True while a cycle is under way (running, paused, in error, or suspended)."""
        return self._run is not None

    def run_elapsed(self) -> int | None:
        """Ticks of work the cycle under way has done (pauses excluded); None without one."""
        return self._run.elapsed(self.now) if self._run is not None else None

    def run_origin(self) -> int | None:
        """While the cycle runs (not paused or suspended), the tick its work time counts from."""
        run = self._run
        if run is None or run.paused_at is not None:
            return None
        return run.origin

    def skip_work(self, ticks: int) -> None:
        """Count `ticks` more of the cycle under way as done without doing them (a vacuum skips
        an area): later phases and the end come that much sooner. Events now due fire now."""
        run = self._run
        if run is None or ticks <= 0:
            return
        run.skipped += min(ticks, self.cycle_ticks() - run.elapsed(self.now))
        self._store_derived()
        self.advance_to(self.now)

    def cycle_ticks(self) -> int:
        """The whole cycle's work time in ticks."""
        return sum(seconds for _, seconds in self._cycle) * TICKS_PER_SECOND

    def set_cycle(self, phases: Iterable[Any] | None) -> None:
        """Replace the cycle (a mode change does this). Only allowed while no run is under way."""
        cycle = normalize_cycle(phases)
        if self.in_operation:
            raise MatterError(Status.INVALID_IN_STATE,
                              f"{self.name}: the cycle cannot change while an operation is under way; stop it first")
        self._cycle = cycle
        self.set("PhaseList", [n for n, _ in cycle] or NullValue)
        self.set("CurrentPhase", self._idle_phase())

    def extend_last_phase(self, seconds: int) -> None:
        """The cycle's last phase takes `seconds` more, even mid-run (a microwave's
        AddMoreTime): the run's anchor is unchanged, so the new end follows from it."""
        self.changing()
        name, length = self._cycle[-1]
        self._cycle[-1] = (name, length + seconds)
        if self._run is not None:
            self.set("CountdownTime", self.get("CountdownTime"))

    def _boundaries(self) -> list[int]:
        """Tick offsets (running time) at which each phase ends."""
        out, total = [], 0
        for _, seconds in self._cycle:
            total += seconds * TICKS_PER_SECOND
            out.append(total)
        return out

    def _phase_at(self, elapsed: int) -> int:
        for i, end in enumerate(self._boundaries()):
            if elapsed < end:
                return i
        return max(len(self._cycle) - 1, 0)

    # ---- derived attributes --------------------------------------------------------
    derived = frozenset({"CurrentPhase", "CountdownTime"})

    def get(self, name: str) -> Any:
        if self._run is not None and self._cycle:
            elapsed = self._run.elapsed(self.now)
            if name == "CurrentPhase":
                return self._phase_at(elapsed)
            if name == "CountdownTime":
                remaining = self._boundaries()[-1] - elapsed
                return max(0, -(-remaining // TICKS_PER_SECOND))  # whole seconds, rounded up
        return super().get(name)

    def _store_derived(self) -> None:
        """Store the derived values at a discrete change (listeners and DataVersion see it)."""
        if self._run is not None and self._cycle:
            self.set("CurrentPhase", self.get("CurrentPhase"))
            self.set("CountdownTime", self.get("CountdownTime"))
        else:
            self.set("CurrentPhase", self._idle_phase())
            self.set("CountdownTime", NullValue)

    def _idle_phase(self) -> Any:
        """CurrentPhase without a run: null only when PhaseList is null or empty (spec
        1.14.5.2, TC-OPSTATE-2.1); else the first phase, the one a Start begins with."""
        return 0 if self._cycle else NullValue

    # ---- responses -----------------------------------------------------------------
    def _error_struct(self, error_id: int, label: str | None = None, details: str | None = None):
        return self.cluster.Structs.ErrorStateStruct(errorStateID=int(error_id), errorStateLabel=label,
                                                     errorStateDetails=details)

    def _response(self, error_id: int = 0, details: str | None = None):
        return self.cluster.Commands.OperationalCommandResponse(
            commandResponseState=self._error_struct(error_id, None, details))

    def _invalid(self, command: str):
        state = self.E(self._values["OperationalState"]).name[1:]
        return self._response(OpState.Enums.ErrorStateEnum.kCommandInvalidInState,
                              f"{command} is not valid while {state}")

    # ---- commands ------------------------------------------------------------------
    def Start(self, request: Any = None):
        state = self._values["OperationalState"]
        if state == self.E.kRunning:
            return self._response()
        if state == self.E.kError:
            return self._response(OpState.Enums.ErrorStateEnum.kUnableToStartOrResume,
                                  "the device is in an error state; Stop clears it")
        if state == self.E.kPaused:
            return self.Resume(request)
        self._begin_run()
        return self._response()

    def Stop(self, request: Any = None):
        if self._values["OperationalState"] == self.E.kStopped and self._run is None:
            return self._response()
        self._end_run(self.now)
        return self._response()

    def Pause(self, request: Any = None):
        state = self._values["OperationalState"]
        if state == self.E.kPaused:
            return self._response()
        if state not in self._pausable_states():
            return self._invalid("Pause")
        self._active_leg().pause(self.now)
        self.set("OperationalState", self.E.kPaused)
        self._store_derived()
        return self._response()

    def Resume(self, request: Any = None):
        state = self._values["OperationalState"]
        if state == self.E.kRunning:
            return self._response()
        if state != self.E.kPaused:
            return self._invalid("Resume")
        self._resume_active_leg()
        return self._response()

    def _pausable_states(self) -> tuple[int, ...]:
        return (self.E.kRunning,)

    def _active_leg(self) -> _Leg:
        assert self._run is not None
        return self._run

    def _resume_active_leg(self) -> None:
        self._run.resume(self.now)
        self.set("OperationalState", self.E.kRunning)
        self._store_derived()

    # ---- simulation hooks (faults raised by the device model, not by clients) -------------
    def set_error(self, error_id: int, label: str | None = None, details: str | None = None) -> None:
        """Enter the Error state: the run (if any) is held, and the OperationalError event fires."""
        valid = {int(m) for m in self.cluster.Enums.ErrorStateEnum if m.name != "kUnknownEnumValue"}
        if int(error_id) not in valid - {0} and not 0x80 <= int(error_id) <= 0xBF:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.name}: error id {error_id} is not an ErrorStateEnum value other than "
                              f"NoError, nor manufacturer specific (0x80..0xBF); accepted: {sorted(valid - {0})}")
        error = self._error_struct(error_id, label, details)
        if self._run is not None:
            self._active_leg().pause(self.now)
        self.set("OperationalError", error)
        self.set("OperationalState", self.E.kError)
        self._store_derived()
        self.emit_event(self.cluster.Events.OperationalError(errorState=error))

    def clear_error(self) -> None:
        """The fault went away on its own: back to Paused if a run is held, else Stopped."""
        if self._values["OperationalState"] != self.E.kError:
            return
        self.set("OperationalError", self._error_struct(0))
        self.set("OperationalState", self.E.kPaused if self._run is not None else self.E.kStopped)
        self._store_derived()

    # ---- run lifecycle -------------------------------------------------------------
    def _begin_run(self) -> None:
        self._run = _Leg(self.now)
        self.set("OperationalState", self.E.kRunning)
        self._store_derived()

    def _end_run(self, tick: int, idle_state: int | None = None) -> None:
        """End the operation at `tick`: OperationCompletion, then the idle state."""
        error_id = self._values["OperationalError"].errorStateID
        if self._run is not None:
            run = self._run
            self._run = None
            #: work ticks of the run that just ended, for listeners of the state change below
            self.last_worked = run.elapsed(tick)
            self.emit_event(self.cluster.Events.OperationCompletion(
                completionErrorCode=error_id,
                totalOperationalTime=(tick - run.start) // TICKS_PER_SECOND,
                pausedTime=run.paused_for(tick) // TICKS_PER_SECOND))
        self.set("OperationalError", self._error_struct(0))
        self.set("OperationalState", self.E.kStopped if idle_state is None else idle_state)
        self._store_derived()

    # ---- time ----------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        run = self._run
        if run is None or run.paused_at is not None or not self._cycle:
            return None
        # The end of the phase stored at the last discrete change: events come one at a time,
        # in order, even if the clock has already run past them.
        stored = self._values["CurrentPhase"]
        index = stored if stored is not NullValue else 0
        return run.origin + self._boundaries()[index]

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            self._fire(due)

    def _fire(self, due: int) -> None:
        stored = self._values["CurrentPhase"]
        index = stored if stored is not NullValue else 0
        if index + 1 < len(self._cycle):
            self.set("CurrentPhase", index + 1)
            self.set("CountdownTime", (self._boundaries()[-1] - self._boundaries()[index]) // TICKS_PER_SECOND)
        else:
            self._complete(due)

    def _complete(self, tick: int) -> None:
        self._end_run(tick)

    # ---- persistence ---------------------------------------------------------------
    def private_state(self) -> dict[str, Any]:
        return {"cycle": [list(p) for p in self._cycle],
                "run": self._run.to_json() if self._run else None}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._cycle = normalize_cycle(state.get("cycle"))
        self._run = _Leg.from_json(state.get("run"))


class RvcOperationalStateServer(OperationalStateServer):
    """RVC Operational State: no Start/Stop (RVC Run Mode drives the run), plus GoHome.

    `start_run()` / `stop_run()` are called by the RVC Run Mode server on a mode change.
    """
    cluster = RvcOpState
    revision = 2
    commands = ("Pause", "Resume", "GoHome")
    notes = ("Runs are started and stopped through RVC Run Mode (Idle vs Cleaning/Mapping).",
             "At the end of a cycle, or on GoHome, the robot seeks its charger and then is Docked. "
             "GoHome mid-cycle ends the cycle once docked, and RVC Run Mode returns to Idle.")
    states = (0, 1, 2, 3, 0x40, 0x41, 0x42)  # + SeekingCharger, Charging, Docked

    def __init__(self, cycle: Iterable[Any] | None = None, home_seconds: int = 60, **initial: Any):
        initial.setdefault("OperationalState", int(RvcOpState.Enums.OperationalStateEnum.kDocked))
        super().__init__(cycle=cycle, **initial)
        if isinstance(home_seconds, bool) or not isinstance(home_seconds, int) or home_seconds <= 0:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"home_seconds={home_seconds!r} must be a positive whole number of seconds")
        self.home_seconds = home_seconds
        self._home: _Leg | None = None  # the trip back to the dock

    def _pausable_states(self) -> tuple[int, ...]:
        return (self.E.kRunning, self.E.kSeekingCharger)

    def _active_leg(self) -> _Leg:
        return self._home if self._home is not None else self._run

    def _resume_active_leg(self) -> None:
        if self._home is not None:
            self._home.resume(self.now)
            self.set("OperationalState", self.E.kSeekingCharger)
            self._store_derived()
        else:
            super()._resume_active_leg()

    def Resume(self, request: Any = None):
        state = self._values["OperationalState"]
        if state in (self.E.kDocked, self.E.kCharging):
            if self._run is None:
                return self._response(RvcOpState.Enums.ErrorStateEnum.kUnableToStartOrResume,
                                      "there is no interrupted cleaning run to resume; use RVC Run Mode")
            self._resume_active_leg()
            return self._response()
        return super().Resume(request)

    def GoHome(self, request: Any = None):
        state = self._values["OperationalState"]
        if state == self.E.kSeekingCharger:
            return self._response()
        if state in (self.E.kDocked, self.E.kCharging, self.E.kError):
            return self._invalid("GoHome")
        if state == self.E.kPaused and self._home is not None:  # paused on the way home
            self._resume_active_leg()
            return self._response()
        if self._run is not None:
            self._run.pause(self.now)  # suspend the cycle
        self._begin_home(self.now)
        return self._response()

    # ---- called by RVC Run Mode ------------------------------------------------------
    def start_run(self, cycle: Iterable[Any] | None = None) -> None:
        """Begin cleaning (RVC Run Mode left Idle). Raises MatterError if not possible now."""
        if self._values["OperationalState"] == self.E.kError:
            raise MatterError(Status.INVALID_IN_STATE, f"{self.name} is in an error state",
                              cluster_status=self._values["OperationalError"].errorStateID)
        if self._run is not None:
            raise MatterError(Status.INVALID_IN_STATE, f"{self.name}: a run is already under way")
        if cycle is not None:
            self.set_cycle(cycle)
        self._home = None
        self._begin_run()

    def stop_run(self) -> None:
        """Stop where it is (RVC Run Mode went to Idle); a robot on its dock stays Docked."""
        state = self._values["OperationalState"]
        docked = state in (self.E.kDocked, self.E.kCharging)
        if self._run is not None or self._home is not None or state != self.E.kStopped and not docked:
            self._home = None
            self._end_run(self.now, idle_state=state if docked else None)

    # ---- the trip home ---------------------------------------------------------------
    def _begin_home(self, tick: int) -> None:
        self._home = _Leg(tick)
        self.set("OperationalState", self.E.kSeekingCharger)
        self._store_derived()

    def _complete(self, tick: int) -> None:
        self._end_run(tick)
        self._begin_home(tick)

    def next_event_tick(self) -> int | None:
        home = self._home
        if home is not None:
            if home.paused_at is not None:
                return None
            return home.start + home.paused_ticks + self.home_seconds * TICKS_PER_SECOND
        return super().next_event_tick()

    def _fire(self, due: int) -> None:
        if self._home is None:
            super()._fire(due)
            return
        self._home = None
        if self._run is not None:
            # Docked after GoHome: the cleaning run it interrupted is over (OperationCompletion),
            # so RVC Run Mode goes back to Idle (TC_RVCOPSTATE_2_5, as the SDK's RVC app does).
            self._end_run(due, idle_state=self.E.kDocked)
        else:
            self.set("OperationalState", self.E.kDocked)
            self._store_derived()

    def private_state(self) -> dict[str, Any]:
        return {**super().private_state(), "home": self._home.to_json() if self._home else None}

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self._home = _Leg.from_json(state.get("home"))
