"""Identify (TC_I), Groups (TC_G) and Scenes Management (TC_S) test cases, from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import over_network, serving
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


def _admin_of_own_fabric(dut, name: str, fabric_id: int) -> tuple[int, int]:
    """Commission `dut` into a new fabric of administrator `name` (a root of its own), through an
    enhanced window our admin opens (TC_CADMIN_1_1's way): (its node id there, the fabric index)."""
    call = dut.lab.controller.call
    node = dut.node_id + fabric_id
    address, port = dut.call("resolve")
    opened = dut.call("open_window", (fabric_id % 16) << 8 | 0x5A, timeout=60)
    call("commission_other_fabric", name, fabric_id, node, address, port, opened["passcode"], timeout=120)
    return node, call("as", name, "read", node, 0, C.OperationalCredentials.Attributes.CurrentFabricIndex)


@pytest.mark.parametrize("dut", [p for p in over_network(serving(S)) if p.values[0][1] == "dimmable_light"],
                         indirect=True)
def test_TC_S_2_6(dut):
    """RemainingCapacity across three fabrics (TH1 ours, TH2 and TH3 commissioned here): each fills
    its share, (SceneTableSize - 1) / 2, down to RESOURCE_EXHAUSTED; the third gets what is left
    of the shared table; StoreScene and CopyScene into a full table are refused; RemoveAllScenes
    gives a fabric its capacity back and leaves the others'. (The plan watches RemainingCapacity
    through subscriptions; here each step reads it, not fabric-filtered.)"""
    [endpoint] = endpoints_with(dut, S)[:1]
    call = dut.lab.controller.call
    f1 = dut.read(0, C.OperationalCredentials.Attributes.CurrentFabricIndex)
    ths = {"TH1": (None, dut.node_id, f1)}
    try:
        for i, th in enumerate(("TH2", "TH3")):
            name = f"scenes-{th}-{dut.node_id}"
            ths[th] = (name, *_admin_of_own_fabric(dut, name, 0x400 + i))

        def invoke(th, command):
            name, node, _ = ths[th]
            if name is None:
                return dut.invoke(endpoint, command)
            return call("as", name, "invoke", node, endpoint, command)

        def capacity(th):
            name, node, fabric = ths[th]
            paths = [(endpoint, S.Attributes.FabricSceneInfo)]
            got = (dut.call("read_paths", paths, fabric_filtered=False) if name is None
                   else call("as", name, "read_paths", node, paths, fabric_filtered=False))
            [mine] = [i for i in got[endpoint]["ScenesManagement"]["FabricSceneInfo"] if i.fabricIndex == fabric]
            return mine.remainingCapacity

        def add(th, scene):
            return invoke(th, S.Commands.AddScene(groupID=0, sceneID=scene, transitionTime=20, sceneName=th,
                                                  extensionFieldSets=[]))

        def fill(th):
            scene = 1
            while (left := capacity(th)) > 0:
                response = add(th, scene)
                assert (response.status, response.groupID, response.sceneID) == (Status.SUCCESS, 0, scene)
                assert capacity(th) == left - 1
                scene += 1
            assert add(th, scene).status == Status.RESOURCE_EXHAUSTED
            return scene - 1

        for th in ths:
            assert invoke(th, S.Commands.RemoveAllScenes(groupID=0)).status == Status.SUCCESS
        size = dut.read(endpoint, S.Attributes.SceneTableSize)
        share = (size - 1) // 2
        baseline = {th: capacity(th) for th in ths}
        assert all(rc >= share for rc in baseline.values()), baseline
        assert fill("TH1") == baseline["TH1"]
        assert fill("TH2") == baseline["TH2"]
        assert capacity("TH3") == size - 2 * share
        assert fill("TH3") == size - 2 * share
        assert invoke("TH3", S.Commands.StoreScene(groupID=0, sceneID=0xFE)).status == Status.RESOURCE_EXHAUSTED
        copied = invoke("TH1", S.Commands.CopyScene(mode=0, groupIdentifierFrom=0, sceneIdentifierFrom=1,
                                                    groupIdentifierTo=0, sceneIdentifierTo=0xF0))
        assert (copied.status, copied.groupIdentifierFrom, copied.sceneIdentifierFrom) == (
            Status.RESOURCE_EXHAUSTED, 0, 1)
        assert invoke("TH1", S.Commands.RemoveAllScenes(groupID=0)).status == Status.SUCCESS
        assert capacity("TH1") == baseline["TH1"] and capacity("TH2") == 0
        assert invoke("TH2", S.Commands.RemoveAllScenes(groupID=0)).status == Status.SUCCESS
        assert capacity("TH2") == baseline["TH2"]
        invoke("TH3", S.Commands.RemoveAllScenes(groupID=0))
    finally:
        for name, _, fabric in list(ths.values())[1:]:
            dut.invoke(0, C.OperationalCredentials.Commands.RemoveFabric(fabricIndex=fabric))
            call("drop_controller", name)
    assert dut.read(0, C.OperationalCredentials.Attributes.CommissionedFabrics) == 1
