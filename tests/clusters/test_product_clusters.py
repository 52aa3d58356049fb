"""Clusters and features real products carry (issue 15): per-type behaviour tests."""
import json

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.base import AccessContext, current_access
from clusters.basic_information import BasicInformationServer
from clusters.devices import create_device
from clusters.status import MatterError, Status

SM = Clusters.ScenesManagement


class Clock:
    tick = 0


def make(key, **options):
    device = create_device("d1", key, **options)
    clock = Clock()
    for server in device.servers():
        server.clock = clock
    return device, clock


def settle(device, clock, tick):
    """Visit each event tick up to `tick` in order, as a home does."""
    servers = list(device.servers())
    while True:
        due = [t for s in servers if (t := s.next_event_tick()) is not None and t <= tick]
        if not due:
            break
        clock.tick = min(due)
        for s in servers:
            s.advance_to(clock.tick)
    clock.tick = tick


def error_of(call, *args):
    with pytest.raises(MatterError) as err:
        call(*args)
    return err.value


def round_trip(device, key):
    """Snapshot every server to JSON and back into a fresh device of the same type."""
    copy, _ = make(key)
    for ep_id, ep in device.endpoints.items():
        for cid, server in ep.servers.items():
            copy.endpoints[ep_id].servers[cid].load_state(json.loads(json.dumps(server.state())))
    return copy


# ---- BasicInformation: what nearly every product shows on endpoint 0 ------------------------
def test_basic_information_product_attributes():
    device, _ = make("fan")
    info = device.endpoint(0).server("BasicInformation")
    assert info.read("ProductLabel") == "Fan"
    assert info.read("ProductURL").startswith("https://") and info.read("PartNumber").startswith("TW-")
    assert info.read("ManufacturingDate")[:8].isdigit() and info.read("LocalConfigDisabled") is False
    info.write("LocalConfigDisabled", True)
    assert info.read("LocalConfigDisabled") is True
    assert error_of(info.write, "ProductLabel", "x").status == Status.UNSUPPORTED_WRITE
    for bad in ("2026", "20261332", "2026013x"):
        error = error_of(lambda date=bad: BasicInformationServer(ManufacturingDate=date))
        assert error.status == Status.CONSTRAINT_ERROR
    assert BasicInformationServer(ManufacturingDate="20250228ABC").read("ManufacturingDate")
    assert error_of(lambda: BasicInformationServer(PartNumber="p" * 33)).status == Status.CONSTRAINT_ERROR


# ---- Groups ----------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["on_off_light", "dimmable_light", "window_covering"])
def test_groups_and_scenes_on_lights_and_coverings(key):
    device, _ = make(key)
    names = {s.name for s in device.endpoint(1).servers.values()}
    assert {"Groups", "ScenesManagement", "Identify"} <= names


@pytest.mark.parametrize("key", ["fan", "humidifier", "dehumidifier"])
def test_fan_device_types_have_their_mandatory_groups(key):
    device, _ = make(key)
    assert "Groups" in {s.name for s in device.endpoint(1).servers.values()}


def test_groups_membership_per_fabric():
    device, _ = make("on_off_light")
    groups = device.endpoint(1).server("Groups")
    assert groups.read("FeatureMap") == 1 and groups.read("NameSupport") == 0x80
    assert groups.invoke("AddGroup", {"groupID": 5, "groupName": "Kitchen"}).status == Status.SUCCESS
    assert groups.invoke("AddGroup", {"groupID": 0, "groupName": ""}).status == Status.CONSTRAINT_ERROR
    assert groups.invoke("AddGroup", {"groupID": 6, "groupName": "n" * 17}).status == Status.CONSTRAINT_ERROR
    view = groups.invoke("ViewGroup", {"groupID": 5})
    assert (view.status, view.groupName) == (Status.SUCCESS, "Kitchen")
    assert groups.invoke("ViewGroup", {"groupID": 9}).status == Status.NOT_FOUND
    membership = groups.invoke("GetGroupMembership", {"groupList": []})
    assert membership.groupList == [5] and membership.capacity == 7
    assert groups.invoke("GetGroupMembership", {"groupList": [4, 5]}).groupList == [5]
    # another fabric sees its own (empty) table
    token = current_access.set(AccessContext("case", 2, 0x1234))
    try:
        assert groups.invoke("GetGroupMembership", {"groupList": []}).groupList == []
        assert groups.invoke("RemoveGroup", {"groupID": 5}).status == Status.NOT_FOUND
    finally:
        current_access.reset(token)
    for g in range(10, 17):
        assert groups.invoke("AddGroup", {"groupID": g, "groupName": ""}).status == Status.SUCCESS
    assert groups.invoke("AddGroup", {"groupID": 99, "groupName": ""}).status == Status.RESOURCE_EXHAUSTED
    assert groups.invoke("RemoveGroup", {"groupID": 5}).status == Status.SUCCESS
    groups.invoke("RemoveAllGroups")
    assert groups.invoke("GetGroupMembership", {"groupList": []}).groupList == []


def test_add_group_if_identifying():
    device, _ = make("on_off_light")
    groups, identify = device.endpoint(1).server("Groups"), device.endpoint(1).server("Identify")
    groups.invoke("AddGroupIfIdentifying", {"groupID": 3, "groupName": "a"})
    assert groups.groups() == {}
    identify.invoke("Identify", {"identifyTime": 10})
    groups.invoke("AddGroupIfIdentifying", {"groupID": 3, "groupName": "a"})
    assert groups.groups() == {3: "a"}


# ---- Scenes ----------------------------------------------------------------------------------
def test_scene_store_and_recall_on_a_dimmable_light():
    device, clock = make("dimmable_light")
    ep = device.endpoint(1)
    scenes, onoff, level = ep.server("ScenesManagement"), ep.server("OnOff"), ep.server("LevelControl")
    assert scenes.read("SceneTableSize") >= 16 and scenes.read("FabricSceneInfo") == []
    onoff.invoke("On")
    level.invoke("MoveToLevel", {"level": 40, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0})
    assert scenes.invoke("StoreScene", {"groupID": 0, "sceneID": 1}).status == Status.SUCCESS
    info = scenes.read("FabricSceneInfo")[0]
    assert (info.sceneCount, info.currentScene, info.sceneValid, info.remainingCapacity) == (1, 1, True, 6)
    view = scenes.invoke("ViewScene", {"groupID": 0, "sceneID": 1})
    stored = {fs.clusterID: {p.attributeID: p for p in fs.attributeValueList} for fs in view.extensionFieldSets}
    assert stored[Clusters.OnOff.id][0].valueUnsigned8 == 1 and stored[Clusters.LevelControl.id][0].valueUnsigned8 == 40
    # a change away from the scene invalidates it
    onoff.invoke("Off")
    level.invoke("MoveToLevel", {"level": 200, "transitionTime": 0, "optionsMask": 1, "optionsOverride": 1})
    assert scenes.read("FabricSceneInfo")[0].sceneValid is False
    # recall with a 2 s transition: the level moves back over 20 ticks
    scenes.invoke("RecallScene", {"groupID": 0, "sceneID": 1, "transitionTime": 2000})
    assert onoff.read("OnOff") is True and scenes.read("FabricSceneInfo")[0].sceneValid is True
    clock.tick = 10
    assert 40 < level.read("CurrentLevel") < 200
    settle(device, clock, 20)
    assert level.read("CurrentLevel") == 40 and scenes.read("FabricSceneInfo")[0].sceneValid is True
    assert "LastConfiguredBy" not in scenes.attributes   # X since Matter 1.4
    assert error_of(scenes.invoke, "RecallScene", {"groupID": 0, "sceneID": 9}).status == Status.NOT_FOUND
    copy = round_trip(device, "dimmable_light")
    assert copy.endpoint(1).server("ScenesManagement").invoke(
        "GetSceneMembership", {"groupID": 0}).sceneList == [1]


def test_scene_stores_and_recalls_colour():
    """A colour light's scene holds its colour by its EnhancedColorMode (hue and saturation, then
    colour temperature); recall moves back over the transition; a colour change invalidates it."""
    device, clock = make("extended_color_light")
    ep = device.endpoint(1)
    scenes, color = ep.server("ScenesManagement"), ep.server("ColorControl")
    opts = {"optionsMask": 0, "optionsOverride": 0}
    ep.server("OnOff").invoke("On")
    color.invoke("EnhancedMoveToHueAndSaturation",
                 {"enhancedHue": 30000, "saturation": 200, "transitionTime": 0, **opts})
    assert scenes.invoke("StoreScene", {"groupID": 0, "sceneID": 1}).status == Status.SUCCESS
    color.invoke("MoveToColorTemperature", {"colorTemperatureMireds": 300, "transitionTime": 0, **opts})
    assert scenes.invoke("StoreScene", {"groupID": 0, "sceneID": 2}).status == Status.SUCCESS
    view = scenes.invoke("ViewScene", {"groupID": 0, "sceneID": 1})
    stored = {fs.clusterID: {p.attributeID: p for p in fs.attributeValueList} for fs in view.extensionFieldSets}
    A = Clusters.ColorControl.Attributes
    assert stored[Clusters.ColorControl.id][A.EnhancedCurrentHue.attribute_id].valueUnsigned16 == 30000
    assert stored[Clusters.ColorControl.id][A.EnhancedColorMode.attribute_id].valueUnsigned8 == 3
    scenes.invoke("RecallScene", {"groupID": 0, "sceneID": 1, "transitionTime": 1000})
    assert color.read("EnhancedColorMode") == 3 and scenes.read("FabricSceneInfo")[0].sceneValid is True
    settle(device, clock, 10)
    assert (color.read("EnhancedCurrentHue"), color.read("CurrentSaturation")) == (30000, 200)
    scenes.invoke("RecallScene", {"groupID": 0, "sceneID": 2})
    assert color.read("ColorMode") == 2 and color.read("ColorTemperatureMireds") == 300
    color.invoke("MoveToColorTemperature", {"colorTemperatureMireds": 250, "transitionTime": 0, **opts})
    assert scenes.read("FabricSceneInfo")[0].sceneValid is False


def test_scene_add_groups_copy_and_remove():
    device, clock = make("window_covering")
    ep = device.endpoint(1)
    scenes, groups, cover = ep.server("ScenesManagement"), ep.server("Groups"), ep.server("WindowCovering")
    lift = Clusters.WindowCovering.Attributes.CurrentPositionLiftPercent100ths.attribute_id
    add = {"groupID": 7, "sceneID": 2, "transitionTime": 0, "sceneName": "Evening",
           "extensionFieldSets": [{"clusterID": Clusters.WindowCovering.id,
                                   "attributeValueList": [{"attributeID": lift, "valueUnsigned16": 8000}]},
                                  {"clusterID": Clusters.OnOff.id, "attributeValueList": []}]}
    assert scenes.invoke("AddScene", add).status == Status.INVALID_COMMAND   # not in group 7 yet
    groups.invoke("AddGroup", {"groupID": 7, "groupName": "Blinds"})
    assert scenes.invoke("AddScene", add).status == Status.SUCCESS
    bad = {**add, "extensionFieldSets": [{"clusterID": Clusters.WindowCovering.id,
                                         "attributeValueList": [{"attributeID": 0, "valueUnsigned8": 1}]}]}
    assert scenes.invoke("AddScene", bad).status == Status.INVALID_COMMAND
    assert scenes.invoke("ViewScene", {"groupID": 7, "sceneID": 2}).sceneName == "Evening"
    scenes.invoke("RecallScene", {"groupID": 7, "sceneID": 2, "transitionTime": None})
    settle(device, clock, 400)
    assert cover.read("CurrentPositionLiftPercent100ths") == 8000
    copied = scenes.invoke("CopyScene", {"mode": 0, "groupIdentifierFrom": 7, "sceneIdentifierFrom": 2,
                                         "groupIdentifierTo": 0, "sceneIdentifierTo": 5})
    assert copied.status == Status.SUCCESS
    assert scenes.invoke("GetSceneMembership", {"groupID": 0}).sceneList == [5]
    groups.invoke("RemoveGroup", {"groupID": 7})   # takes its scenes along
    assert scenes.invoke("GetSceneMembership", {"groupID": 7}).status == Status.INVALID_COMMAND
    assert scenes.read("FabricSceneInfo")[0].sceneCount == 1
    assert scenes.invoke("RemoveScene", {"groupID": 0, "sceneID": 5}).status == Status.SUCCESS
    assert scenes.invoke("RemoveScene", {"groupID": 0, "sceneID": 5}).status == Status.NOT_FOUND
    for s in range(7):   # (SceneTableSize - 1) / 2 per fabric
        assert scenes.invoke("StoreScene", {"groupID": 0, "sceneID": s}).status == Status.SUCCESS
    assert scenes.invoke("StoreScene", {"groupID": 0, "sceneID": 7}).status == Status.RESOURCE_EXHAUSTED
    assert scenes.invoke("RemoveAllScenes", {"groupID": 0}).status == Status.SUCCESS
    assert scenes.read("FabricSceneInfo")[0].sceneCount == 0


def test_scene_table_shared_by_three_fabrics():
    """Each fabric may fill (SceneTableSize - 1) / 2 entries; its RemainingCapacity is also bounded
    by what the others left of the shared table; FabricSceneInfo always has the reader's entry,
    and other fabrics' in a read that is not fabric-filtered (TC_S_2_6)."""
    device, _ = make("on_off_light")
    scenes = device.endpoint(1).server("ScenesManagement")
    size = scenes.read("SceneTableSize")
    per_fabric = (size - 1) // 2

    def as_fabric(fabric, call, *args, filtered=True):
        token = current_access.set(AccessContext("case", fabric, 0x1234, fabric_filtered=filtered))
        try:
            return call(*args)
        finally:
            current_access.reset(token)

    def capacity(fabric, filtered=True):
        infos = as_fabric(fabric, scenes.read, "FabricSceneInfo", filtered=filtered)
        return {i.fabricIndex: i.remainingCapacity for i in infos}

    def add(fabric, scene):
        request = {"groupID": 0, "sceneID": scene, "transitionTime": 0, "sceneName": "", "extensionFieldSets": []}
        return as_fabric(fabric, scenes.invoke, "AddScene", request).status

    assert capacity(1) == {1: per_fabric} and capacity(3) == {3: per_fabric}
    for fabric in (1, 2):
        for scene in range(per_fabric):
            assert add(fabric, scene + 1) == Status.SUCCESS
        assert capacity(fabric) == {fabric: 0} and add(fabric, 99) == Status.RESOURCE_EXHAUSTED
    assert capacity(3) == {3: size - 2 * per_fabric}
    assert capacity(3, filtered=False) == {1: 0, 2: 0, 3: size - 2 * per_fabric}
    for scene in range(size - 2 * per_fabric):
        assert add(3, scene + 1) == Status.SUCCESS
    assert capacity(3) == {3: 0} and add(3, 99) == Status.RESOURCE_EXHAUSTED
    stored = as_fabric(3, scenes.invoke, "StoreScene", {"groupID": 0, "sceneID": 0xFE})
    assert stored.status == Status.RESOURCE_EXHAUSTED
    assert as_fabric(1, scenes.invoke, "RemoveAllScenes", {"groupID": 0}).status == Status.SUCCESS
    assert capacity(1) == {1: per_fabric} and capacity(2) == {2: 0}


def test_scenes_survive_a_restart_but_are_not_valid():
    device, _ = make("on_off_light")
    scenes = device.endpoint(1).server("ScenesManagement")
    device.endpoint(1).server("Groups").invoke("AddGroup", {"groupID": 1, "groupName": "g"})
    scenes.invoke("StoreScene", {"groupID": 1, "sceneID": 1})
    saved = json.loads(json.dumps(scenes.saved_state()))
    fresh, _ = make("on_off_light")
    fresh.endpoint(1).server("Groups").power_up(
        json.loads(json.dumps(device.endpoint(1).server("Groups").saved_state())))
    fresh_scenes = fresh.endpoint(1).server("ScenesManagement")
    fresh_scenes.power_up(saved)
    info = fresh_scenes.read("FabricSceneInfo")[0]
    assert (info.sceneCount, info.currentGroup, info.sceneValid) == (1, 1, False)


# ---- robot vacuum: Service Area and its battery ---------------------------------------------------
SA = Clusters.ServiceArea
AREA = SA.Enums.OperationalStatusEnum


def vacuum(areas=("Living room", "Kitchen", "Bedroom")):
    device, clock = make("robot_vacuum_cleaner", areas=list(areas))
    ep = device.endpoint(1)
    return device, clock, ep.server("ServiceArea"), ep.server("RvcRunMode"), ep.server("RvcOperationalState"), \
        ep.server("PowerSource")


def statuses(service):
    return [(p.areaID, p.status) for p in service.read("Progress")]


def test_service_area_areas_are_the_rooms():
    device, _, service, *_ = vacuum()
    areas = service.read("SupportedAreas")
    assert [a.areaID for a in areas] == [1, 2, 3]
    assert [a.areaInfo.locationInfo.locationName for a in areas] == ["Living room", "Kitchen", "Bedroom"]
    assert areas[1].areaInfo.locationInfo.areaType == Clusters.Globals.Enums.AreaTypeTag.kKitchen
    assert service.read("FeatureMap") == int(SA.Bitmaps.Feature.kProgressReporting)
    assert Clusters.PowerSource.id in device.endpoint(1).server("Descriptor").read("ServerList")
    with pytest.raises(MatterError):
        create_device("v", "robot_vacuum_cleaner", areas=["a", "a"])


def test_service_area_select_then_clean_only_those_rooms():
    device, clock, service, run, ops, _ = vacuum()
    bad = service.invoke("SelectAreas", {"newAreas": [2, 9]})
    assert bad.status == SA.Enums.SelectAreasStatus.kUnsupportedArea and "9" in bad.statusText
    assert service.invoke("SelectAreas", {"newAreas": [2, 3, 2]}).status == SA.Enums.SelectAreasStatus.kSuccess
    assert service.read("SelectedAreas") == [2, 3]
    run.invoke("ChangeToMode", {"newMode": 1})   # Cleaning; default Vacuum cycle is 1800 s for all 3 rooms
    assert ops.read("CountdownTime") == 1200      # two rooms of three
    assert service.read("CurrentArea") == 2 and statuses(service) == [(2, AREA.kOperating), (3, AREA.kPending)]
    busy = service.invoke("SelectAreas", {"newAreas": [1]})
    assert busy.status == SA.Enums.SelectAreasStatus.kInvalidInMode
    settle(device, clock, 600 * 10 - 1)
    assert service.read("CurrentArea") == 2
    settle(device, clock, 600 * 10)
    assert service.read("CurrentArea") == 3
    assert statuses(service) == [(2, AREA.kCompleted), (3, AREA.kOperating)]
    assert service.read("Progress")[0].totalOperationalTime == 600
    settle(device, clock, 1200 * 10)
    assert service.read("CurrentArea") is NullValue
    assert statuses(service) == [(2, AREA.kCompleted), (3, AREA.kCompleted)]
    # a second run with the same selection takes the same time (the cycle is not scaled twice)
    settle(device, clock, 1300 * 10)
    run.invoke("ChangeToMode", {"newMode": 1})
    assert ops.read("CountdownTime") == 1200


def test_service_area_pause_shifts_and_stop_skips():
    device, clock, service, run, ops, _ = vacuum()
    run.invoke("ChangeToMode", {"newMode": 1})   # every room, 600 s each
    assert service.read("CurrentArea") == 1 and len(service.read("Progress")) == 3
    settle(device, clock, 300 * 10)
    ops.invoke("Pause")
    settle(device, clock, 900 * 10)               # paused: still the first room
    assert service.read("CurrentArea") == 1
    ops.invoke("Resume")
    settle(device, clock, 1200 * 10)              # 300 s more: the second room
    assert service.read("CurrentArea") == 2
    settle(device, clock, 1300 * 10)
    run.invoke("ChangeToMode", {"newMode": 0})   # Idle: stop where it is
    assert statuses(service) == [(1, AREA.kCompleted), (2, AREA.kSkipped), (3, AREA.kSkipped)]
    assert [p.totalOperationalTime for p in service.read("Progress")] == [600, 100, 0]
    copy = round_trip(device, "robot_vacuum_cleaner")
    assert statuses(copy.endpoint(1).server("ServiceArea")) == statuses(service)


def test_service_area_skip_area_answers_per_spec():
    device, clock, service, run, ops, _ = vacuum()
    Skip = SA.Enums.SkipAreaStatus
    empty = service.invoke("SkipArea", {"skippedArea": 1})   # nothing selected
    assert (empty.status, empty.statusText) == (Skip.kInvalidAreaList, "")
    assert service.invoke("SelectAreas", {"newAreas": [1, 2]}).status == SA.Enums.SelectAreasStatus.kSuccess
    unknown = service.invoke("SkipArea", {"skippedArea": 9})
    assert unknown.status == Skip.kInvalidSkippedArea and "9" in unknown.statusText
    idle = service.invoke("SkipArea", {"skippedArea": 1})
    assert idle.status == Skip.kInvalidInMode and "no cleaning run" in idle.statusText
    run.invoke("ChangeToMode", {"newMode": 1})   # rooms 1 and 2, 600 s each
    outside = service.invoke("SkipArea", {"skippedArea": 3})
    assert outside.status == Skip.kInvalidInMode and "not part of this run" in outside.statusText
    assert SA.Commands.SkipArea.command_id in service.read("AcceptedCommandList")
    assert SA.Commands.SkipAreaResponse.command_id in service.read("GeneratedCommandList")


def test_service_area_skip_current_area_moves_on_and_pending_area_is_left_out():
    device, clock, service, run, ops, _ = vacuum()
    Skip = SA.Enums.SkipAreaStatus
    service.invoke("SelectAreas", {"newAreas": [1, 2, 3]})
    run.invoke("ChangeToMode", {"newMode": 1})   # 600 s per room, 1800 s in all
    settle(device, clock, 200 * 10)
    assert service.invoke("SkipArea", {"skippedArea": 1}).status == Skip.kSuccess
    assert service.read("CurrentArea") == 2       # moves on at once
    assert statuses(service) == [(1, AREA.kSkipped), (2, AREA.kOperating), (3, AREA.kPending)]
    assert service.read("Progress")[0].totalOperationalTime == 200
    assert ops.read("CountdownTime") == 1200      # the 400 s room 1 had left are gone
    again = service.invoke("SkipArea", {"skippedArea": 1})
    assert again.status == Skip.kInvalidInMode and "already skipped" in again.statusText
    settle(device, clock, 500 * 10)
    assert service.invoke("SkipArea", {"skippedArea": 3}).status == Skip.kSuccess   # pending: left out
    assert service.read("CurrentArea") == 2
    assert statuses(service) == [(1, AREA.kSkipped), (2, AREA.kOperating), (3, AREA.kSkipped)]
    assert ops.read("CountdownTime") == 300       # room 2's last 300 s
    copy = round_trip(device, "robot_vacuum_cleaner")   # the plan survives a snapshot
    assert statuses(copy.endpoint(1).server("ServiceArea")) == statuses(service)
    settle(device, clock, 800 * 10 - 1)
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kRunning
    settle(device, clock, 800 * 10)               # room 2 done: the run is over, the robot heads home
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kSeekingCharger
    assert service.read("CurrentArea") is NullValue
    assert statuses(service) == [(1, AREA.kSkipped), (2, AREA.kCompleted), (3, AREA.kSkipped)]
    assert [p.totalOperationalTime for p in service.read("Progress")] == [200, 600, 0]


def test_service_area_skipping_the_last_area_ends_the_run():
    device, clock, service, run, ops, _ = vacuum()
    service.invoke("SelectAreas", {"newAreas": [3, 1]})
    run.invoke("ChangeToMode", {"newMode": 1})
    settle(device, clock, 700 * 10)               # room 3 done, room 1 for 100 s
    assert service.read("CurrentArea") == 1
    assert service.invoke("SkipArea", {"skippedArea": 1}).status == SA.Enums.SkipAreaStatus.kSuccess
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kSeekingCharger
    assert statuses(service) == [(3, AREA.kCompleted), (1, AREA.kSkipped)]
    assert [p.totalOperationalTime for p in service.read("Progress")] == [600, 100]


def test_vacuum_battery_drains_cleaning_and_charges_docked():
    device, clock, service, run, ops, battery = vacuum()
    PSE = Clusters.PowerSource.Enums
    assert battery.read("FeatureMap") == int(Clusters.PowerSource.Bitmaps.Feature.kBattery
                                             | Clusters.PowerSource.Bitmaps.Feature.kRechargeable)
    settle(device, clock, 10)
    assert battery.read("BatPercentRemaining") == 200
    assert battery.read("BatChargeState") == PSE.BatChargeStateEnum.kIsAtFullCharge
    run.invoke("ChangeToMode", {"newMode": 1})
    assert battery.read("BatChargeState") == PSE.BatChargeStateEnum.kIsNotCharging
    settle(device, clock, 10 + 1000 * 10)             # 1000 s at 0.02 %/s: 80 % left
    assert battery.read("BatPercentRemaining") == 160
    settle(device, clock, 10 + 1800 * 10)             # cycle done; seeking the charger (60 s)
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kSeekingCharger
    settle(device, clock, 10 + 1860 * 10)             # docked at 62.8 %, now charging
    assert battery.read("BatPercentRemaining") == 125
    assert battery.read("BatChargeState") == PSE.BatChargeStateEnum.kIsCharging
    settle(device, clock, 10 + 1860 * 10 + 1000 * 10)
    assert battery.read("BatPercentRemaining") == 145   # +10 % in 1000 s
    settle(device, clock, 10 + 1860 * 10 + 5000 * 10)
    assert battery.read("BatPercentRemaining") == 200
    assert battery.read("BatChargeState") == PSE.BatChargeStateEnum.kIsAtFullCharge


def test_vacuum_goes_home_when_its_battery_turns_critical():
    device, clock, service, run, ops, battery = vacuum()
    battery.set_battery(25)
    battery.battery_changed()
    run.invoke("ChangeToMode", {"newMode": 1})        # 25 % lasts 1250 s; critical below 10 % after 750 s
    settle(device, clock, 740 * 10)
    assert battery.read("BatChargeLevel") == Clusters.PowerSource.Enums.BatChargeLevelEnum.kWarning
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kRunning
    settle(device, clock, 760 * 10)
    assert battery.read("BatChargeLevel") == Clusters.PowerSource.Enums.BatChargeLevelEnum.kCritical
    assert ops.read("OperationalState") == Clusters.RvcOperationalState.Enums.OperationalStateEnum.kSeekingCharger
    assert service.read("CurrentArea") == 2            # the run is suspended in the second room


def test_a_home_gives_its_vacuum_the_rooms_as_areas():
    from twin.home import Home
    home = Home(seed=1)
    for room in ("living_room", "kitchen", "study"):
        home.add_room(room, name=room.replace("_", " ").capitalize())
    robot = home.add_device("robot", "robot_vacuum_cleaner", "kitchen")
    service = robot.endpoint(1).server("ServiceArea")
    assert [a.areaInfo.locationInfo.locationName for a in service.read("SupportedAreas")] == \
        ["Living room", "Kitchen", "Study"]
    robot.invoke("ServiceArea", "SelectAreas", {"newAreas": [2]})
    robot.invoke("RvcRunMode", "ChangeToMode", {"newMode": 1})
    home.advance(300)
    copy = Home.restore(home.snapshot())
    copy.advance(400)
    home.advance(400)
    assert copy.snapshot() == home.snapshot()
    assert [(p.areaID, p.status) for p in service.read("Progress")] == [(2, AREA.kCompleted)]


# ---- window covering: tilt ----------------------------------------------------------------------
def test_window_covering_tilt():
    device, clock = make("window_covering")
    cover = device.endpoint(1).server("WindowCovering")
    F = Clusters.WindowCovering.Bitmaps.Feature
    assert cover.read("FeatureMap") == int(F.kLift | F.kPositionAwareLift | F.kTilt | F.kPositionAwareTilt)
    assert cover.read("Type") == Clusters.WindowCovering.Enums.Type.kTiltBlindLiftAndTilt
    assert cover.read("ConfigStatus") & Clusters.WindowCovering.Bitmaps.ConfigStatus.kTiltPositionAware
    cover.invoke("GoToTiltPercentage", {"tiltPercent100thsValue": 5000})
    assert cover.read("OperationalStatus") == 2 | (2 << 4)     # global and tilt closing
    clock.tick = 10                                           # full tilt travel is 3 s: 1 s in
    assert cover.read("CurrentPositionTiltPercent100ths") == 3333
    settle(device, clock, 15)
    assert cover.read("CurrentPositionTiltPercent100ths") == 5000 and cover.read("OperationalStatus") == 0
    assert cover.read("NumberOfActuationsTilt") == 1 and cover.read("NumberOfActuationsLift") == 0
    cover.invoke("DownOrClose")                               # both axes
    assert cover.read("OperationalStatus") == 2 | (2 << 2) | (2 << 4)
    settle(device, clock, 15 + 30)
    assert cover.read("CurrentPositionTiltPercent100ths") == 10000
    assert cover.read("OperationalStatus") == 2 | (2 << 2)     # the lift still moves
    cover.invoke("StopMotion")
    assert cover.read("OperationalStatus") == 0 and cover.read("NumberOfActuationsLift") == 1
    with pytest.raises(MatterError) as err:
        cover.invoke("GoToTiltPercentage", {"tiltPercent100thsValue": 10001})
    assert err.value.status == Status.CONSTRAINT_ERROR
    copy = round_trip(device, "window_covering")
    assert copy.endpoint(1).server("WindowCovering").read("CurrentPositionTiltPercent100ths") == 10000


def test_closed_slats_darken_the_room():
    from twin.home import Home
    home = Home(seed=1)
    home.add_room("office", daylight_lux=1000.0)
    blind = home.add_device("blind", "window_covering", "office")
    before = home.rooms["office"].illuminance
    blind.invoke("WindowCovering", "GoToTiltPercentage", {"tiltPercent100thsValue": 10000})
    home.advance(5)
    assert home.rooms["office"].illuminance == pytest.approx(before * 0.1)


# ---- thermostat: presets, running state, hold, setpoint changes, calibration, UI config -------------
TS = Clusters.Thermostat


def test_thermostat_presets_and_setpoint_changes():
    from twin.home import Home
    home = Home(seed=1)
    home.add_room("living", temperature=24.0)
    ac = home.add_device("ac", "air_conditioner", "living")
    t = ac.endpoint(1).server("Thermostat")
    assert t.read("ClusterRevision") == 8 and t.read("FeatureMap") & TS.Bitmaps.Feature.kPresets
    assert {p.name for p in t.read("Presets")} == {"Comfort", "Away", "Sleep"}
    assert t.read("NumberOfPresets") == 3 and len(t.read("PresetTypes")) == 3
    assert t.read("ActivePresetHandle") is NullValue
    away = next(p for p in t.read("Presets") if p.name == "Away")
    with pytest.raises(MatterError) as err:                            # the AC's rule: on first
        ac.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": away.presetHandle.hex()})
    assert err.value.status == Status.INVALID_IN_STATE
    ac.invoke("OnOff", "On")
    ac.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": away.presetHandle.hex()})
    assert t.read("ActivePresetHandle") == away.presetHandle
    assert (t.read("OccupiedHeatingSetpoint"), t.read("OccupiedCoolingSetpoint")) == (1600, 2900)
    assert t.read("SetpointChangeSource") == TS.Enums.SetpointChangeSourceEnum.kExternal
    assert t.read("SetpointChangeAmount") == 300                      # cooling 2600 -> 2900 was the last
    assert t.read("SetpointChangeSourceTimestamp") > 0
    with pytest.raises(MatterError) as err:
        ac.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": "ff"})
    assert err.value.status == Status.NOT_FOUND
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 2500)
    assert t.read("SetpointChangeAmount") == -400
    ac.invoke("Thermostat", "SetpointRaiseLower", {"mode": 1, "amount": 5})
    assert t.read("OccupiedCoolingSetpoint") == 2550 and t.read("SetpointChangeAmount") == 50
    ac.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": None})
    assert t.read("ActivePresetHandle") is NullValue


def test_thermostat_running_state_follows_the_room():
    from twin.home import Home
    home = Home(seed=1)
    home.add_room("living", temperature=28.0)
    ac = home.add_device("ac", "air_conditioner", "living")
    t = ac.endpoint(1).server("Thermostat")
    Relay = TS.Bitmaps.RelayStateBitmap
    assert t.read("ThermostatRunningState") == 0                       # off
    ac.invoke("OnOff", "On")
    ac.write("Thermostat", "SystemMode", int(TS.Enums.SystemModeEnum.kCool))
    ac.write("FanControl", "FanMode", 3)
    assert t.read("ThermostatRunningState") == int(Relay.kCool | Relay.kFan)
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 3000)            # already cooler than that
    assert t.read("ThermostatRunningState") == 0
    ac.write("Thermostat", "SystemMode", int(TS.Enums.SystemModeEnum.kHeat))
    ac.write("Thermostat", "OccupiedHeatingSetpoint", 2900)
    assert t.read("ThermostatRunningState") == int(Relay.kHeat | Relay.kFan)
    ac.write("Thermostat", "SystemMode", int(TS.Enums.SystemModeEnum.kFanOnly))
    assert t.read("ThermostatRunningState") == int(Relay.kFan)
    # calibration shifts what the thermostat reads
    before = t.read("LocalTemperature")
    ac.write("Thermostat", "LocalTemperatureCalibration", -15)
    assert t.read("LocalTemperature") == before - 150
    ac.write("Thermostat", "LocalTemperatureCalibration", -128)   # revision 8: the whole int8 (-12.8 °C)
    assert t.read("LocalTemperature") == before - 1280
    with pytest.raises(MatterError) as err:
        ac.write("Thermostat", "LocalTemperatureCalibration", 128)
    assert err.value.status == Status.CONSTRAINT_ERROR


def test_thermostat_setpoint_hold_and_its_duration():
    device, clock = make("heat_pump")
    t = device.endpoint(2).server("Thermostat")
    device.write("Thermostat", "TemperatureSetpointHoldDuration", 30, 2)
    device.write("Thermostat", "TemperatureSetpointHold", 1, 2)
    comfort = t.read("Presets")[0].presetHandle
    device.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": comfort.hex()}, 2)
    assert t.read("ActivePresetHandle") == comfort and t.read("OccupiedHeatingSetpoint") == 2000   # held
    settle(device, clock, 30 * 60 * 10 - 1)
    assert t.read("TemperatureSetpointHold") == TS.Enums.TemperatureSetpointHoldEnum.kSetpointHoldOn
    settle(device, clock, 30 * 60 * 10)
    assert t.read("TemperatureSetpointHold") == TS.Enums.TemperatureSetpointHoldEnum.kSetpointHoldOff
    device.invoke("Thermostat", "SetActivePresetRequest", {"presetHandle": comfort.hex()}, 2)
    assert t.read("OccupiedHeatingSetpoint") == 2100
    with pytest.raises(MatterError) as err:
        device.write("Thermostat", "TemperatureSetpointHoldDuration", 1441, 2)
    assert err.value.status == Status.CONSTRAINT_ERROR


def test_thermostat_hold_expiry_timestamp_follows_the_timed_hold():
    from clusters.base import epoch_seconds
    from twin.home import Home
    home = Home(seed=1)
    home.add_room("living_room")
    pump = home.add_device("pump", "heat_pump", "living_room")
    t = pump.endpoint(2).server("Thermostat")
    TSH = TS.Attributes.SetpointHoldExpiryTimestamp
    assert TSH.attribute_id in t.read("AttributeList") and t.read("SetpointHoldExpiryTimestamp") is NullValue
    pump.write("Thermostat", "TemperatureSetpointHoldDuration", 30, 2)
    pump.write("Thermostat", "TemperatureSetpointHold", 1, 2)
    start = epoch_seconds(home.clock)
    assert start > 0 and t.read("SetpointHoldExpiryTimestamp") == start + 30 * 60
    home.advance(30 * 60)
    assert t.read("TemperatureSetpointHold") == TS.Enums.TemperatureSetpointHoldEnum.kSetpointHoldOff
    assert t.read("SetpointHoldExpiryTimestamp") is NullValue
    pump.write("Thermostat", "TemperatureSetpointHoldDuration", None, 2)
    pump.write("Thermostat", "TemperatureSetpointHold", 1, 2)   # held with no end: no expiry
    assert t.read("SetpointHoldExpiryTimestamp") is NullValue
    assert t.read("ClusterRevision") == 8


def test_thermostat_user_interface_configuration():
    device, _ = make("heat_pump")
    ui = device.endpoint(2).server("ThermostatUserInterfaceConfiguration")
    device.write("ThermostatUserInterfaceConfiguration", "TemperatureDisplayMode", 1, 2)
    device.write("ThermostatUserInterfaceConfiguration", "KeypadLockout", 2, 2)
    assert (ui.read("TemperatureDisplayMode"), ui.read("KeypadLockout")) == (1, 2)
    with pytest.raises(MatterError) as err:
        device.write("ThermostatUserInterfaceConfiguration", "TemperatureDisplayMode", 7, 2)
    assert err.value.status == Status.CONSTRAINT_ERROR
    ac, _ = make("air_conditioner")
    assert ac.endpoint(1).server("ThermostatUserInterfaceConfiguration").read("TemperatureDisplayMode") == 0


# ---- fan: MultiSpeed, Rocking, Wind, AirflowDirection, Auto ------------------------------------------
FC = Clusters.FanControl


def test_fan_features_of_a_real_fan():
    device, _ = make("fan")
    fan = device.endpoint(1).server("FanControl")
    F = FC.Bitmaps.Feature
    assert fan.read("FeatureMap") == int(F.kMultiSpeed | F.kAuto | F.kRocking | F.kWind | F.kStep
                                         | F.kAirflowDirection)
    device.invoke("OnOff", "On")
    assert fan.read("SpeedMax") == 10
    device.write("FanControl", "SpeedSetting", 3)
    assert (fan.read("PercentSetting"), fan.read("FanMode"), fan.read("SpeedCurrent")) == \
        (30, FC.Enums.FanModeEnum.kLow, 3)
    device.write("FanControl", "PercentSetting", 71)
    assert (fan.read("SpeedSetting"), fan.read("FanMode")) == (8, FC.Enums.FanModeEnum.kHigh)
    device.write("FanControl", "FanMode", int(FC.Enums.FanModeEnum.kAuto))
    assert fan.read("SpeedSetting") is NullValue and fan.read("SpeedCurrent") == 7   # the middle band: 66 %
    device.write("FanControl", "FanMode", 0)
    assert (fan.read("SpeedSetting"), fan.read("SpeedCurrent")) == (0, 0)
    with pytest.raises(MatterError) as err:
        device.write("FanControl", "SpeedSetting", 11)
    assert err.value.status == Status.CONSTRAINT_ERROR
    device.write("FanControl", "RockSetting", int(FC.Bitmaps.RockBitmap.kRockLeftRight))
    assert fan.read("RockSetting") == 1
    with pytest.raises(MatterError):
        device.write("FanControl", "RockSetting", int(FC.Bitmaps.RockBitmap.kRockRound))   # not supported
    device.write("FanControl", "WindSetting", int(FC.Bitmaps.WindBitmap.kNaturalWind))
    with pytest.raises(MatterError):
        device.write("FanControl", "WindSetting", 3)                                       # both winds
    device.write("FanControl", "AirflowDirection", int(FC.Enums.AirflowDirectionEnum.kReverse))
    assert fan.read("AirflowDirection") == FC.Enums.AirflowDirectionEnum.kReverse
    with pytest.raises(MatterError):
        device.write("FanControl", "SpeedMax", 5)
    copy = round_trip(device, "fan")
    assert copy.endpoint(1).server("FanControl").read("WindSetting") == 2


# ---- air purifier: HEPA and activated carbon filters wear with use --------------------------------
def test_purifier_filters_wear_with_use_and_reset():
    from twin.home import Home
    home = Home(seed=1)
    home.add_room("bedroom")
    purifier = home.add_device("purifier", "air_purifier", "bedroom")
    hepa = purifier.endpoint(1).server("HepaFilterMonitoring")
    carbon = purifier.endpoint(1).server("ActivatedCarbonFilterMonitoring")
    E = Clusters.HepaFilterMonitoring.Enums
    assert hepa.read("FeatureMap") == 3 and hepa.read("DegradationDirection") == E.DegradationDirectionEnum.kDown
    home.advance(3600)
    assert hepa.read("Condition") == 100                        # off: no wear
    purifier.invoke("OnOff", "On")
    purifier.write("FanControl", "PercentSetting", 100)
    home.advance(438 * 3600)                                    # a tenth of the HEPA life at full speed
    assert hepa.read("Condition") == 90 and carbon.read("Condition") == 80
    purifier.write("FanControl", "PercentSetting", 50)          # half speed wears half as fast
    home.advance(876 * 3600)
    assert hepa.read("Condition") == 80
    assert carbon.read("Condition") == 60
    home.advance(1752 * 3600)
    assert (hepa.read("Condition"), carbon.read("Condition")) == (60, 20)
    home.advance(100 * 3600)                                    # carbon 17.7 %: Warning below 20 %
    assert carbon.read("ChangeIndication") == E.ChangeIndicationEnum.kWarning
    assert hepa.read("ChangeIndication") == E.ChangeIndicationEnum.kOk
    home.advance(1652 * 3600)
    assert carbon.read("Condition") == 0
    assert carbon.read("ChangeIndication") == E.ChangeIndicationEnum.kCritical
    assert hepa.read("ChangeIndication") == E.ChangeIndicationEnum.kOk and hepa.read("Condition") == 40
    purifier.invoke("ActivatedCarbonFilterMonitoring", "ResetCondition")
    assert carbon.read("Condition") == 100 and carbon.read("ChangeIndication") == 0
    assert carbon.read("LastChangedTime") > 0
    home.advance(3600)
    assert carbon.read("Condition") == 100                      # 1 h at half speed: 99.98 %, shown 100
    copy = Home.restore(home.snapshot())
    copy.advance(5000 * 3600)
    home.advance(5000 * 3600)
    assert copy.snapshot() == home.snapshot()
    assert hepa.read("Condition") == 0 and hepa.read("ChangeIndication") == E.ChangeIndicationEnum.kCritical


# ---- refrigerator: two tagged cabinets and the door alarm ---------------------------------------------
def test_fridge_freezer_cabinets_are_tagged():
    device, _ = make("refrigerator")
    tags = {ep: device.endpoint(ep).server("Descriptor").read("TagList") for ep in (2, 3)}
    assert [(t.namespaceID, t.tag, t.label) for t in tags[2]] == [(0x41, 0, "Refrigerator")]
    assert [(t.namespaceID, t.tag, t.label) for t in tags[3]] == [(0x41, 1, "Freezer")]
    assert device.endpoint(2).server("Descriptor").read("FeatureMap") == 1
    assert device.endpoint(1).server("Descriptor").read("FeatureMap") == 0
    assert "TagList" not in device.endpoint(1).server("Descriptor").attributes
    assert device.endpoint(0).server("Descriptor").read("PartsList") == [1, 2, 3]
    freezer = device.endpoint(3).server("TemperatureControl")
    assert freezer.read("TemperatureSetpoint") == -1800
    device.invoke("TemperatureControl", "SetTemperature", {"targetTemperature": -2000}, 3)
    assert device.endpoint(3).server("TemperatureMeasurement").read("MeasuredValue") == -2000
    assert device.endpoint(2).server("TemperatureControl").read("TemperatureSetpoint") == 400
    lone, _ = make("freezer")
    assert lone.endpoint(2).server("Descriptor").read("TagList")[0].tag == 1 and 3 not in lone.endpoints


def test_fridge_door_alarm():
    device, clock = make("refrigerator")
    alarm = device.endpoint(1).server("RefrigeratorAlarm")
    events = []
    alarm.event_sink = lambda server, event: events.append(event)
    door = int(Clusters.RefrigeratorAlarm.Bitmaps.AlarmBitmap.kDoorOpen)
    assert (alarm.read("Supported"), alarm.read("Mask"), alarm.read("State")) == (door, door, 0)
    assert alarm.read("AcceptedCommandList") == []
    alarm.door(True)
    settle(device, clock, 1190)
    assert alarm.read("State") == 0
    settle(device, clock, 1200)
    assert alarm.read("State") == door and events[-1].active == door
    alarm.door(False)
    assert alarm.read("State") == 0 and events[-1].inactive == door
    alarm.door(True)
    settle(device, clock, 1300)
    alarm.door(False)                                  # closed in time: no alarm
    settle(device, clock, 5000)
    assert alarm.read("State") == 0 and len(events) == 2


def test_washer_temperature_levels():
    device, _ = make("laundry_washer")
    tc = device.endpoint(1).server("TemperatureControl")
    assert tc.read("FeatureMap") == int(Clusters.TemperatureControl.Bitmaps.Feature.kTemperatureLevel)
    levels = tc.read("SupportedTemperatureLevels")
    assert levels[tc.read("SelectedTemperatureLevel")] == "40°C"
    device.invoke("TemperatureControl", "SetTemperature", {"targetTemperatureLevel": levels.index("60°C")})
    assert tc.read("SelectedTemperatureLevel") == 4
    with pytest.raises(MatterError) as err:
        device.invoke("TemperatureControl", "SetTemperature", {"targetTemperature": 4000})
    assert err.value.status == Status.INVALID_COMMAND
    with pytest.raises(MatterError) as err:
        device.invoke("TemperatureControl", "SetTemperature", {"targetTemperatureLevel": 6})
    assert err.value.status == Status.CONSTRAINT_ERROR


def test_a_forked_home_finishes_the_vacuum_run_too():
    from twin.home import Home
    home = Home(seed=1)
    for room in ("hall", "kitchen"):
        home.add_room(room)
    robot = home.add_device("robot", "robot_vacuum_cleaner", "hall")
    robot.invoke("RvcRunMode", "ChangeToMode", {"newMode": 1})
    home.advance(100)
    fork = home.fork()
    for h in (home, fork):
        h.advance(2000)
        service = h.device("robot").endpoint(1).server("ServiceArea")
        assert service.read("CurrentArea") is NullValue
        assert [p.status for p in service.read("Progress")] == [AREA.kCompleted, AREA.kCompleted]
    assert fork.snapshot() == home.snapshot()
