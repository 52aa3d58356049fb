"""Identify (TC_I), Groups (TC_G) and Scenes Management (TC_S) test cases, from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import serving
from dut import DutStatusError
from steps import IN_PROCESS, ClusterSpec, at_most, check_attributes, check_global_attributes, endpoints_with

from clusters.status import Status

IDENTIFY, G, S = C.Identify, C.Groups, C.ScenesManagement

SPECS = {
    IDENTIFY: ClusterSpec(IDENTIFY, revisions=range(4, 7), attributes={"IdentifyTime": "M", "IdentifyType": "M"},
                   accepted={"Identify": "M", "TriggerEffect": "O"},
                   constraints={"IdentifyType": at_most(5)}),
    G: ClusterSpec(G, revisions=range(4, 5), features={"GN": 0}, attributes={"NameSupport": "M"},
                   accepted={"AddGroup": "M", "ViewGroup": "M", "GetGroupMembership": "M", "RemoveGroup": "M",
                             "RemoveAllGroups": "M", "AddGroupIfIdentifying": "M"},
                   generated={"AddGroupResponse": "M", "ViewGroupResponse": "M", "GetGroupMembershipResponse": "M",
                              "RemoveGroupResponse": "M"},
                   constraints={"NameSupport": lambda v, _: v in (0, 0x80)}),
    S: ClusterSpec(S, revisions=range(1, 2), features={"SN": 0},
                   attributes={"SceneTableSize": "M", "FabricSceneInfo": "M"},
                   accepted={"AddScene": "M", "ViewScene": "M", "RemoveScene": "M", "RemoveAllScenes": "M",
                             "StoreScene": "M", "RecallScene": "M", "GetSceneMembership": "M", "CopyScene": "O"},
                   generated={"AddSceneResponse": "M", "ViewSceneResponse": "M", "RemoveSceneResponse": "M",
                              "RemoveAllScenesResponse": "M", "StoreSceneResponse": "M",
                              "GetSceneMembershipResponse": "M", "CopySceneResponse": "CopyScene"},
                   constraints={"SceneTableSize": lambda v, _: v >= 16}),
}

NOT_APPLICABLE = {
    "TC_I_3_2": "manual: the operator watches the device identify itself",
    "TC_G_2_3": "group messages (multicast to a group id) are not modelled (membership is)",
    "TC_S_2_4": "scenes recalled by group messages: group messaging is not modelled",
    "TC_S_2_5": "RemoveAllScenes through group messages: group messaging is not modelled",
    "TC_S_2_6": "scene table sharing across two fabrics: needs a second commissioned fabric (network only)",
}


def _duts(cluster):
    return serving(cluster, kinds=IN_PROCESS)


# ---- Identify -------------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(IDENTIFY), indirect=True)
def test_TC_I_1_1(dut):
    check_global_attributes(dut, SPECS[IDENTIFY])


@pytest.mark.parametrize("dut", serving(IDENTIFY), indirect=True)
def test_TC_I_2_1(dut):
    assert check_attributes(dut, SPECS[IDENTIFY])


@pytest.mark.parametrize("dut", _duts(IDENTIFY), indirect=True)
def test_TC_I_2_2(dut):
    """Identify(60) starts a countdown; Identify(0) ends it; writing IdentifyTime does the same."""
    for endpoint in endpoints_with(dut, IDENTIFY):
        dut.invoke(endpoint, IDENTIFY.Commands.Identify(identifyTime=60))
        assert 58 <= dut.read(endpoint, IDENTIFY.Attributes.IdentifyTime) <= 60
        dut.wait(10)
        assert 48 <= dut.read(endpoint, IDENTIFY.Attributes.IdentifyTime) <= 50
        dut.invoke(endpoint, IDENTIFY.Commands.Identify(identifyTime=0))
        assert dut.read(endpoint, IDENTIFY.Attributes.IdentifyTime) == 0
        dut.write(endpoint, IDENTIFY.Attributes.IdentifyTime, 15)
        dut.wait(5)
        assert 9 <= dut.read(endpoint, IDENTIFY.Attributes.IdentifyTime) <= 10
        dut.wait(15)
        assert dut.read(endpoint, IDENTIFY.Attributes.IdentifyTime) == 0


@pytest.mark.parametrize("dut", _duts(IDENTIFY), indirect=True)
def test_TC_I_2_3(dut):
    """TriggerEffect (where served) accepts every effect, including FinishEffect and StopEffect."""
    for endpoint in endpoints_with(dut, IDENTIFY):
        accepted = dut.read(endpoint, IDENTIFY.Attributes.AcceptedCommandList)
        if IDENTIFY.Commands.TriggerEffect.command_id not in accepted:
            continue
        for effect in (0x00, 0x01, 0x02, 0x0B, 0xFE, 0xFF):   # Blink, Breathe, Okay, ChannelChange, Finish, Stop
            command = IDENTIFY.Commands.TriggerEffect(effectIdentifier=effect, effectVariant=0)
            assert dut.invoke(endpoint, command) is None
        with pytest.raises(DutStatusError) as error:
            dut.invoke(endpoint, IDENTIFY.Commands.TriggerEffect(effectIdentifier=0x03, effectVariant=0))
        assert error.value.status == Status.CONSTRAINT_ERROR


# ---- Groups ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(G), indirect=True)
def test_TC_G_1_1(dut):
    check_global_attributes(dut, SPECS[G])


@pytest.mark.parametrize("dut", serving(G), indirect=True)
def test_TC_G_2_1(dut):
    for endpoint, values in check_attributes(dut, SPECS[G]).items():
        named = dut.read(endpoint, G.Attributes.FeatureMap) & 0x1
        assert values["NameSupport"] == (0x80 if named else 0)


@pytest.mark.parametrize("dut", _duts(G), indirect=True)
def test_TC_G_2_2(dut):
    """AddGroup / ViewGroup / GetGroupMembership / RemoveGroup / RemoveAllGroups, with their
    statuses: group 0 is CONSTRAINT_ERROR, an unknown group NOT_FOUND."""
    for endpoint in endpoints_with(dut, G):
        response = dut.invoke(endpoint, G.Commands.AddGroup(groupID=0x0101, groupName="Kitchen"))
        assert (response.status, response.groupID) == (Status.SUCCESS, 0x0101)
        dut.invoke(endpoint, G.Commands.AddGroup(groupID=0x0102, groupName="Upstairs"))
        view = dut.invoke(endpoint, G.Commands.ViewGroup(groupID=0x0101))
        assert (view.status, view.groupID, view.groupName) == (Status.SUCCESS, 0x0101, "Kitchen")
        assert dut.invoke(endpoint, G.Commands.AddGroup(groupID=0, groupName="x")).status == Status.CONSTRAINT_ERROR
        membership = dut.invoke(endpoint, G.Commands.GetGroupMembership(groupList=[]))
        assert sorted(membership.groupList) == [0x0101, 0x0102]
        membership = dut.invoke(endpoint, G.Commands.GetGroupMembership(groupList=[0x0102, 0x0777]))
        assert membership.groupList == [0x0102]
        removed = dut.invoke(endpoint, G.Commands.RemoveGroup(groupID=0x0101))
        assert removed.status == Status.SUCCESS
        assert dut.invoke(endpoint, G.Commands.ViewGroup(groupID=0x0101)).status == Status.NOT_FOUND
        assert dut.invoke(endpoint, G.Commands.RemoveGroup(groupID=0x0101)).status == Status.NOT_FOUND
        dut.invoke(endpoint, G.Commands.RemoveAllGroups())
        assert dut.invoke(endpoint, G.Commands.GetGroupMembership(groupList=[])).groupList == []


# ---- Scenes Management ----------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(S), indirect=True)
def test_TC_S_1_1(dut):
    check_global_attributes(dut, SPECS[S])


@pytest.mark.parametrize("dut", serving(S), indirect=True)
def test_TC_S_2_1(dut):
    """SceneTableSize and this fabric's FabricSceneInfo (an empty table: all capacity left)."""
    for values in check_attributes(dut, SPECS[S]).values():
        size = values["SceneTableSize"]
        for info in values["FabricSceneInfo"]:
            assert info.remainingCapacity <= (size - 1) // 2 and info.sceneCount <= size


def _on_off_scene(value: bool) -> list:
    pair = S.Structs.AttributeValuePairStruct(attributeID=C.OnOff.Attributes.OnOff.attribute_id,
                                              valueUnsigned8=int(value))
    return [S.Structs.ExtensionFieldSet(clusterID=C.OnOff.id, attributeValueList=[pair])]


@pytest.mark.parametrize("dut", _duts(S), indirect=True)
def test_TC_S_2_2(dut):
    """AddScene / ViewScene / StoreScene / RecallScene / GetSceneMembership / RemoveScene in a
    group, and the statuses for an unknown scene and a group the endpoint is not in."""
    for endpoint in endpoints_with(dut, S):
        servers = dut.read(endpoint, C.Descriptor.Attributes.ServerList)
        dut.invoke(endpoint, G.Commands.AddGroup(groupID=0x0001, groupName="Scenes"))
        added = dut.invoke(endpoint, S.Commands.AddScene(groupID=1, sceneID=1, transitionTime=0, sceneName="Off",
                                                         extensionFieldSets=_on_off_scene(False)
                                                         if C.OnOff.id in servers else []))
        assert (added.status, added.groupID, added.sceneID) == (Status.SUCCESS, 1, 1)
        view = dut.invoke(endpoint, S.Commands.ViewScene(groupID=1, sceneID=1))
        assert view.status == Status.SUCCESS and view.sceneName == "Off" and view.transitionTime == 0
        if C.OnOff.id in servers:
            dut.invoke(endpoint, C.OnOff.Commands.On())
            stored = dut.invoke(endpoint, S.Commands.StoreScene(groupID=1, sceneID=2))
            assert stored.status == Status.SUCCESS
            dut.invoke(endpoint, S.Commands.RecallScene(groupID=1, sceneID=1))
            assert dut.read(endpoint, C.OnOff.Attributes.OnOff) is False
            dut.invoke(endpoint, S.Commands.RecallScene(groupID=1, sceneID=2))
            assert dut.read(endpoint, C.OnOff.Attributes.OnOff) is True
            info = [i for i in dut.read(endpoint, S.Attributes.FabricSceneInfo)]
            assert info and info[0].currentScene == 2 and info[0].currentGroup == 1 and info[0].sceneValid
        membership = dut.invoke(endpoint, S.Commands.GetSceneMembership(groupID=1))
        assert membership.status == Status.SUCCESS and 1 in membership.sceneList
        assert dut.invoke(endpoint, S.Commands.ViewScene(groupID=1, sceneID=9)).status == Status.NOT_FOUND
        assert dut.invoke(endpoint, S.Commands.ViewScene(groupID=7, sceneID=1)).status == Status.INVALID_COMMAND
        assert dut.invoke(endpoint, S.Commands.RemoveScene(groupID=1, sceneID=1)).status == Status.SUCCESS
        assert dut.invoke(endpoint, S.Commands.ViewScene(groupID=1, sceneID=1)).status == Status.NOT_FOUND
        removed = dut.invoke(endpoint, S.Commands.RemoveAllScenes(groupID=1))
        assert removed.status == Status.SUCCESS
        assert dut.invoke(endpoint, S.Commands.GetSceneMembership(groupID=1)).sceneList == []
