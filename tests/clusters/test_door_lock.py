"""DoorLock server: remote and keypad operations, PINs, lockout, relock, users, credentials, schedules."""
import datetime

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.devices import create_device
from clusters.door_lock import SUPPORTED_MODES_BITMAP
from clusters.status import MatterError, Status
from clusters.values import to_json

DL = Clusters.DoorLock
E = DL.Enums
PIN = "31323334"   # "1234" as the octet string tools pass hex-encoded


class Clock:
    tick = 0
    now = datetime.datetime(2025, 6, 2, 9, 0)   # a Monday


def lock(**options):
    device = create_device("front", "door_lock", users=[{"name": "Ann", "pin": "1234"}], **options)
    clock = Clock()
    events = []
    for server in device.servers():
        server.clock = clock
        server.event_sink = lambda s, e: events.append(e)
    return device, device.locate("DoorLock"), clock, events


def test_remote_lock_unlock_emit_lock_operation_with_source():
    device, server, _, events = lock()
    device.invoke("DoorLock", "UnlockDoor", {})
    assert server.get("LockState") == E.DlLockState.kUnlocked
    device.invoke("DoorLock", "LockDoor", {"PINCode": PIN})
    assert server.get("LockState") == E.DlLockState.kLocked
    unlock, locked = events
    assert unlock.lockOperationType == E.LockOperationTypeEnum.kUnlock
    assert unlock.operationSource == E.OperationSourceEnum.kRemote and unlock.userIndex is NullValue
    assert locked.userIndex == 1 and locked.credentials[0].credentialIndex == 1


def test_require_pin_for_remote_operation():
    device, server, _, events = lock(require_pin=True)
    with pytest.raises(MatterError) as exc:
        device.invoke("DoorLock", "UnlockDoor", {})
    assert exc.value.status == Status.FAILURE and server.get("LockState") == E.DlLockState.kLocked
    assert events[-1].operationError == E.OperationErrorEnum.kInvalidCredential
    with pytest.raises(MatterError):
        device.invoke("DoorLock", "UnlockDoor", {"PINCode": "39393939"})
    device.invoke("DoorLock", "UnlockDoor", {"PINCode": PIN})
    assert server.get("LockState") == E.DlLockState.kUnlocked


def test_wrong_codes_lock_out_the_keypad_for_the_disable_time():
    device, server, clock, events = lock()
    device.write("DoorLock", "WrongCodeEntryLimit", 3)
    device.write("DoorLock", "UserCodeTemporaryDisableTime", 10)
    for _ in range(3):
        with pytest.raises(MatterError):
            server.keypad("unlock", "9999")
    assert any(isinstance(e, DL.Events.DoorLockAlarm) and e.alarmCode == E.AlarmCodeEnum.kWrongCodeEntryLimit
               for e in events)
    with pytest.raises(MatterError, match="disabled"):
        server.keypad("unlock", "1234")                  # even the right code, during the lockout
    assert events[-1].operationError == E.OperationErrorEnum.kRestricted
    clock.tick = 100
    server.keypad("unlock", "1234")
    assert server.get("LockState") == E.DlLockState.kUnlocked
    assert events[-1].operationSource == E.OperationSourceEnum.kKeypad


def test_auto_relock_and_unlock_with_timeout():
    device, server, clock, events = lock(auto_relock_s=30)
    device.invoke("DoorLock", "UnlockDoor", {})
    assert server.next_event_tick() == 300
    clock.tick = 300
    server.advance_to(300)
    assert server.get("LockState") == E.DlLockState.kLocked
    assert events[-1].operationSource == E.OperationSourceEnum.kAuto
    device.invoke("DoorLock", "UnlockWithTimeout", {"timeout": 5})
    assert server.next_event_tick() == 350


def test_relock_waits_for_an_open_door():
    device, server, clock, _ = lock(auto_relock_s=10)
    device.invoke("DoorLock", "UnlockDoor", {})
    server.set_door(True)
    clock.tick = 100
    server.advance_to(100)
    assert server.get("LockState") == E.DlLockState.kUnlocked
    server.set_door(False)
    assert server.get("LockState") == E.DlLockState.kLocked
    assert server.get("DoorOpenEvents") == 1 and server.get("DoorClosedEvents") == 1
    with pytest.raises(ValueError, match="locked"):
        server.set_door(True)


def test_no_remote_lock_unlock_mode_and_write_constraints():
    device, server, _, _ = lock()
    assert server.get("SupportedOperatingModes") == SUPPORTED_MODES_BITMAP == 0xFFF0
    device.write("DoorLock", "OperatingMode", int(E.OperatingModeEnum.kNoRemoteLockUnlock))
    with pytest.raises(MatterError) as exc:
        device.invoke("DoorLock", "UnlockDoor", {})
    assert exc.value.status == Status.FAILURE
    server.keypad("unlock", "1234")            # the keypad still works
    for name, value in (("OperatingMode", 4), ("WrongCodeEntryLimit", 0), ("SoundVolume", 4)):
        with pytest.raises(MatterError) as exc:
            device.write("DoorLock", name, value)
        assert exc.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as exc:
        device.write("DoorLock", "NumberOfTotalUsersSupported", 3)
    assert exc.value.status == Status.UNSUPPORTED_WRITE


def test_users_and_credentials():
    device, server, _, events = lock()
    add = int(E.DataOperationTypeEnum.kAdd)
    user = {"operationType": add, "userIndex": 2, "userName": "Bob", "userUniqueID": None, "userStatus": None,
            "userType": None, "credentialRule": None}
    device.invoke("DoorLock", "SetUser", user)
    with pytest.raises(MatterError) as exc:
        device.invoke("DoorLock", "SetUser", user)
    assert exc.value.cluster_status == E.DlStatus.kOccupied
    cred = {"credentialType": int(E.CredentialTypeEnum.kPin), "credentialIndex": 2}
    r = device.invoke("DoorLock", "SetCredential", {"operationType": add, "credential": cred,
                                                     "credentialData": "35363738", "userIndex": 2,
                                                     "userStatus": None, "userType": None})
    assert r.status == E.DlStatus.kSuccess and r.nextCredentialIndex == 3
    third = {**cred, "credentialIndex": 3}
    dup = device.invoke("DoorLock", "SetCredential", {"operationType": add, "credential": third,
                                                       "credentialData": PIN, "userIndex": 2,
                                                       "userStatus": None, "userType": None})
    assert dup.status == E.DlStatus.kDuplicate
    short = device.invoke("DoorLock", "SetCredential", {"operationType": add, "credential": third,
                                                         "credentialData": "3132", "userIndex": 2,
                                                         "userStatus": None, "userType": None})
    assert short.status == E.DlStatus.kInvalidField
    got = to_json(device.invoke("DoorLock", "GetUser", {"userIndex": 2}))
    assert got["userName"] == "Bob" and got["credentials"] == [{"credentialType": 1, "credentialIndex": 2}]
    assert to_json(device.invoke("DoorLock", "GetUser", {"userIndex": 1}))["nextUserIndex"] == 2
    status = device.invoke("DoorLock", "GetCredentialStatus", {"credential": cred})
    assert status.credentialExists and status.userIndex == 2
    server.keypad("unlock", "5678")
    assert events[-1].userIndex == 2
    device.invoke("DoorLock", "ClearCredential", {"credential": cred})
    gone = to_json(device.invoke("DoorLock", "GetUser", {"userIndex": 2}))
    assert gone["userStatus"] is None       # its last credential went: so did the user
    with pytest.raises(MatterError):
        server.keypad("unlock", "5678")
    kinds = [e.lockDataType for e in events if isinstance(e, DL.Events.LockUserChange)]
    assert E.LockDataTypeEnum.kUserIndex in kinds and E.LockDataTypeEnum.kPin in kinds
    with pytest.raises(MatterError) as exc:
        device.invoke("DoorLock", "GetUser", {"userIndex": 11})
    assert exc.value.status == Status.CONSTRAINT_ERROR


def test_disabled_user_and_week_day_schedule():
    device, server, clock, events = lock()
    modify = int(E.DataOperationTypeEnum.kModify)
    base = {"operationType": modify, "userIndex": 1, "userName": None, "userUniqueID": None, "userStatus": None,
            "userType": None, "credentialRule": None}
    device.invoke("DoorLock", "SetUser", {**base, "userStatus": int(E.UserStatusEnum.kOccupiedDisabled)})
    with pytest.raises(MatterError):
        server.keypad("unlock", "1234")
    assert events[-1].operationError == E.OperationErrorEnum.kDisabledUserDenied
    device.invoke("DoorLock", "SetUser", {**base, "userStatus": int(E.UserStatusEnum.kOccupiedEnabled),
                                          "userType": int(E.UserTypeEnum.kWeekDayScheduleUser)})
    with pytest.raises(MatterError):           # no schedule yet: never admitted
        server.keypad("unlock", "1234")
    monday = int(DL.Bitmaps.DaysMaskMap.kMonday)
    device.invoke("DoorLock", "SetWeekDaySchedule", {"weekDayIndex": 1, "userIndex": 1, "daysMask": monday,
                                                     "startHour": 8, "startMinute": 0, "endHour": 10, "endMinute": 0})
    server.keypad("unlock", "1234")            # Monday 09:00
    clock.now = datetime.datetime(2025, 6, 3, 9, 0)   # Tuesday
    with pytest.raises(MatterError):
        server.keypad("lock", "1234")
    assert events[-1].operationError == E.OperationErrorEnum.kRestricted
    got = device.invoke("DoorLock", "GetWeekDaySchedule", {"weekDayIndex": 1, "userIndex": 1})
    assert got.status == E.DlStatus.kSuccess and got.startHour == 8
    device.invoke("DoorLock", "ClearWeekDaySchedule", {"weekDayIndex": 0xFE, "userIndex": 1})
    assert device.invoke("DoorLock", "GetWeekDaySchedule", {"weekDayIndex": 1, "userIndex": 1}).status \
        == E.DlStatus.kNotFound
    with pytest.raises(MatterError) as exc:
        device.invoke("DoorLock", "SetWeekDaySchedule", {"weekDayIndex": 1, "userIndex": 1, "daysMask": monday,
                                                         "startHour": 10, "startMinute": 0, "endHour": 9,
                                                         "endMinute": 0})
    assert exc.value.status == Status.INVALID_COMMAND


def test_jam_and_state_round_trip():
    device, server, _, events = lock()
    server.set_jammed(True)
    assert server.get("LockState") == E.DlLockState.kNotFullyLocked
    with pytest.raises(MatterError, match="jammed"):
        device.invoke("DoorLock", "UnlockDoor", {})
    assert sum(isinstance(e, DL.Events.DoorLockAlarm) for e in events) == 2
    server.set_jammed(False)
    device.invoke("DoorLock", "UnlockDoor", {})
    copy, copy_server, _, _ = lock()
    copy_server.load_state(server.state())
    assert copy_server.state() == server.state()
    copy_server.keypad("lock", "1234")


def test_bad_install_users_name_the_entry():
    with pytest.raises(ValueError, match=r"users\[0\].pin"):
        create_device("l", "door_lock", users=[{"name": "A", "pin": "12"}])
    with pytest.raises(ValueError, match=r"users\[1\]"):
        create_device("l", "door_lock", users=[{"pin": "1234"}, {"pin": "1234"}])


def test_lock_commands_need_a_timed_invoke_over_matter():
    for name in ("LockDoor", "UnlockDoor", "UnlockWithTimeout", "SetUser", "ClearUser", "SetCredential",
                 "ClearCredential"):
        assert getattr(DL.Commands, name).must_use_timed_invoke


def test_each_bolt_throw_drains_the_battery():
    device, server, _, _ = lock()
    battery = device.locate("PowerSource")
    for _ in range(250):
        device.invoke("DoorLock", "UnlockDoor", {})
        device.invoke("DoorLock", "LockDoor", {})
    assert battery.get("BatPercentRemaining") == 2 * 90      # 500 throws at 0.02 % each
    assert battery.private_state()["used"] == 10_000
    for _ in range(2100):
        device.invoke("DoorLock", "UnlockDoor", {})
        device.invoke("DoorLock", "LockDoor", {})
    assert battery.get("BatChargeLevel") == Clusters.PowerSource.Enums.BatChargeLevelEnum.kCritical
