"""A lab session as benchmark episodes (hardware/episodes.py), without hardware: which
episodes fit a bench and why the others are dropped, the lab file's one-line errors, and a
twin-only bench running episodes scored exactly as the benchmark scores them in process.
The hardware half (matter.js stand-ins) is in tests/hardware/test_lab_e2e.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from hardware.episodes import lab_episodes, run_episodes, select_episodes, why_unfit
from hardware.labfile import parse_lab
from hardware.recording import Recording
from scenarios.simuhome.evaluate import run_episode
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import DEFAULT_EPISODES, load_episodes
from twin.home import Home
from twin.schema import UserFileError

URL = "ws://127.0.0.1:5580/ws"
EPISODES = {e.id: e for e in load_episodes(DEFAULT_EPISODES)}


def lab_with(devices: list[dict] | None = None, sensors: list[dict] | None = None, **episodes):
    return parse_lab({"controller": {"url": URL}, "devices": devices or [], "sensors": sensors or [],
                      "session": {"episodes": {"ids": ["qt3-f-044"], **episodes}}}, "bench.yaml", Path("/tmp"))


def test_a_bound_device_must_exist_in_the_episode_home_with_the_type_its_product_plays():
    episode = EPISODES["qt3-f-044"]
    bound = lab_with([{"bind": "living_room_light", "node_id": 4}])
    assert why_unfit(bound, {"living_room_light": "dimmable_light"}, episode) is None
    reason = why_unfit(bound, {"living_room_light": "on_off_light"}, episode)
    assert reason == "its living_room_light is a dimmable_light; the real device bound to it plays a on_off_light"
    absent = lab_with([{"bind": "study_lamp", "node_id": 4}])
    assert why_unfit(absent, {"study_lamp": "dimmable_light"}, episode) == \
        "its home has no study_lamp for the real dimmable_light to play"


def test_added_devices_and_sensors_need_their_room_and_a_free_id():
    episode = EPISODES["qt3-f-044"]
    assert why_unfit(lab_with([{"id": "bench_plug", "room": "kitchen", "node_id": 5}]), {}, episode) is None
    assert "no room attic" in why_unfit(lab_with([{"id": "bench_plug", "room": "attic", "node_id": 5}]), {}, episode)
    assert "has a device kitchen_light" in why_unfit(
        lab_with([{"id": "kitchen_light", "room": "kitchen", "node_id": 5}]), {}, episode)
    sensor = [{"room": "attic", "state": "temperature", "node_id": 6}]
    assert why_unfit(lab_with(sensors=sensor), {}, episode) == "its home has no room attic for the temperature sensor"


def test_scheduling_episodes_are_dropped_with_their_reason_and_the_rest_kept_in_order():
    lab = lab_with([{"bind": "living_room_light", "node_id": 4}],
                   ids=["qt4-1-f-001", "qt3-f-044", "qt2-f-001", "qt3-f-044"])
    episodes = lab_episodes(lab)
    assert [e.id for e in episodes] == ["qt4-1-f-001", "qt3-f-044", "qt2-f-001"]   # a repeated id runs once
    kept, dropped = select_episodes(lab, episodes, Home.default())
    assert [e.id for e in kept] == ["qt3-f-044", "qt2-f-001"]
    assert dropped == [{"episode_id": "qt4-1-f-001", "reason": "QT4-1 schedules actions minutes ahead "
                                                               "in virtual time; a lab runs on the wall clock"}]


@pytest.mark.parametrize("episodes, field, words", [
    ({"ids": []}, "session.episodes.ids", "at least 1"),
    ({"ids": ["x"], "agent": "clever"}, "session.episodes.agent", "unknown agent"),
    ({"ids": ["x"], "judge": "strict"}, "session.episodes.judge", "unknown judge"),
])
def test_bad_episode_sections_are_one_line(episodes, field, words):
    with pytest.raises(UserFileError) as err:
        parse_lab({"controller": {"url": URL}, "session": {"episodes": episodes}}, "bench.yaml")
    assert str(err.value).startswith(f"bench.yaml: {field}") and words in str(err.value), str(err.value)
    with pytest.raises(UserFileError, match="only one of them"):
        parse_lab({"controller": {"url": URL}, "session": {"episodes": {"ids": ["x"]},
                                                           "script": [{"wait": 1}]}}, "bench.yaml")


def test_unknown_episode_ids_and_files_are_one_line(tmp_path):
    with pytest.raises(UserFileError, match=r"^bench.yaml: session.episodes.ids\[1\]: no episode 'qt9-x'"):
        lab_episodes(lab_with(ids=["qt3-f-044", "qt9-x"]))
    lab = parse_lab({"controller": {"url": URL}, "session": {"episodes": {"ids": ["a"], "file": "none.jsonl"}}},
                    "bench.yaml", tmp_path)
    with pytest.raises(UserFileError, match="^bench.yaml: session.episodes.file: .*cannot read"):
        lab_episodes(lab)


def test_a_twin_only_bench_scores_episodes_as_the_benchmark_does_and_records_them(tmp_path):
    ids = ["qt3-f-044", "qt3-f-016", "qt4-2-f-001"]
    lab = lab_with(ids=ids, settle=0)
    summary = run_episodes(lab, tmp_path / "s.sqlite")
    assert [d["episode_id"] for d in summary["dropped"]] == ["qt4-2-f-001"]
    in_process = {i: run_episode(EPISODES[i], ReferenceAgent(), RuleJudge()) for i in ids[:2]}
    for result in summary["results"]:
        expected = in_process[result["episode_id"]]
        assert result["success"] and result["failures"] == expected["failures"] == []
        assert [h["tool"] for h in result["history"]] == [h["tool"] for h in expected["history"]]
    rec = Recording(tmp_path / "s.sqlite")
    runs = rec.runs()
    assert len(runs) == 2   # one run per kept episode, each starting from its episode's home
    first = rec.rows("events", runs[0]["run"])
    assert [e["detail"] for e in first if e["kind"] == "episodes_dropped"] == [summary["dropped"]]
    scores = [e["detail"] for r in runs for e in rec.rows("events", r["run"]) if e["kind"] == "episode_score"]
    assert [s["episode_id"] for s in scores] == ids[:2] and all(s["success"] for s in scores)
    calls = rec.rows("calls", runs[0]["run"])
    assert [c["tool"] for c in calls] == [h["tool"] for h in summary["results"][0]["history"]]
    assert {c["source"] for c in calls} == {"agent"}
    rec.close()


def test_the_cli_lists_scores_and_dropped_episodes_and_exits_1_on_a_failure(tmp_path, capsys):
    from test_lab_session import twin, write
    data = {"controller": {"url": URL}, "session": {"episodes": {"ids": ["qt3-f-044", "qt4-1-f-001"], "settle": 0}}}
    code, out, _ = twin(["lab", "run", str(write(tmp_path, data, "ok.yaml"))], capsys)
    assert code == 0, out
    assert "qt3-f-044 (QT3-F): pass" in out and "qt4-1-f-001: dropped (QT4-1 schedules" in out
    assert "1/1 episodes passed, 1 dropped" in out
    data["session"]["episodes"]["agent"] = "null"   # answers without acting: the goal fails
    code, out, _ = twin(["lab", "run", str(write(tmp_path, data, "null.yaml"))], capsys)
    assert code == 1 and "qt3-f-044 (QT3-F): FAIL" in out and "0/1 episodes passed" in out
    code, _, err = twin(["lab", "run", str(tmp_path / "ok.yaml"), "--http", "8080"], capsys)
    assert code == 2 and "--http shows one session's home" in err and len(err.strip().splitlines()) == 1
