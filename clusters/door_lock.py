"""DoorLock cluster server (Matter 1.4, revision 7): a keypad deadbolt with users and credentials.

Features: User (USR), PIN and RFID credentials, Credentials over the Air (COTA, which brings
RequirePINforRemoteOperation), Week Day and Year Day access schedules (WDSCH, YDSCH) and, where
the lock sees its door, the Door Position Sensor (DPS: DoorState and its events).

Behaviour (spec 5.2):
- LockDoor / UnlockDoor / UnlockWithTimeout are the remote operations (source Remote). With
  RequirePINforRemoteOperation a PINCode is required; a PINCode given must be an enabled user's
  PIN whose schedules (if the user type is schedule-restricted) admit the current time. A refusal
  answers FAILURE and emits LockOperationError; a success emits LockOperation with the user and
  credential. `keypad()` / `present_rfid()` / `manual()` are the same operations from the door
  (a resident at the keypad, a tag, the thumb turn), with their operation sources.
- Wrong codes: after WrongCodeEntryLimit wrong PINs/tags in a row the keypad and remote PIN
  entry are disabled for UserCodeTemporaryDisableTime seconds (DoorLockAlarm
  WrongCodeEntryLimit); operations needing a code fail with LockOperationError Restricted meanwhile.
- Auto-relock: after an unlock the bolt throws again AutoRelockTime seconds later (source Auto);
  UnlockWithTimeout relocks after its timeout. A relock waits while the door is open (DPS) and
  happens when it closes.
- A jammed bolt (the fault engine's `jammed` fault calls `jam()`): LockState NotFullyLocked,
  DoorLockAlarm LockJammed, the operation answers FAILURE.
- Users, credentials and schedules live in private state (snapshotted); SetUser/SetCredential
  and friends answer FAILURE with the cluster status OCCUPIED / DUPLICATE (DlStatus) where the
  spec asks, and emit LockUserChange.
Times: schedules use the simulated local time of the home's clock (the twin's clock is local
time; year-day times are seconds since 2000-01-01 of that clock), never the wall clock.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import (
    TICKS_PER_SECOND,
    Clusters,
    ClusterServer,
    MatterError,
    Status,
    check_range,
    current_access,
    epoch_seconds,
)

DL = Clusters.DoorLock
F = DL.Bitmaps.Feature
E = DL.Enums
LockState, DoorStateE = E.DlLockState, E.DoorStateEnum
Source, OpType, OpError = E.OperationSourceEnum, E.LockOperationTypeEnum, E.OperationErrorEnum
UserStatus, UserType, CredType = E.UserStatusEnum, E.UserTypeEnum, E.CredentialTypeEnum
DataOp, DataType, DlStatus = E.DataOperationTypeEnum, E.LockDataTypeEnum, E.DlStatus

#: Operating modes this lock supports: Normal, Vacation, Privacy, NoRemoteLockUnlock. In
#: SupportedOperatingModes a *cleared* bit means supported (spec), so the rest stay set.
SUPPORTED_MODES = (E.OperatingModeEnum.kNormal, E.OperatingModeEnum.kVacation, E.OperatingModeEnum.kPrivacy,
                   E.OperatingModeEnum.kNoRemoteLockUnlock)
SUPPORTED_MODES_BITMAP = 0xFFFF & ~sum(1 << int(m) for m in SUPPORTED_MODES)
#: User types whose access the schedules restrict.
SCHEDULED_USERS = frozenset({UserType.kWeekDayScheduleUser, UserType.kYearDayScheduleUser,
                             UserType.kScheduleRestrictedUser})
CLEAR_ALL = 0xFFFE                                   # ClearUser / ClearCredential index meaning "all"
ALL_SCHEDULES = 0xFE
CREDENTIAL_DATA_TYPE = {CredType.kPin: DataType.kPin, CredType.kRfid: DataType.kRfid}


def _fail(message: str, cluster_status: int | None = None) -> MatterError:
    return MatterError(Status.FAILURE, message, cluster_status)


class DoorLockServer(ClusterServer):
    cluster = DL
    revision = 7
    notes = ("PIN codes and RFID tags are octet strings: tools pass them hex-encoded (PIN 1234 = \"31323334\").",
             "With RequirePINforRemoteOperation true, LockDoor/UnlockDoor need the PINCode of an enabled user.",
             "WrongCodeEntryLimit wrong codes in a row disable code entry for UserCodeTemporaryDisableTime s.",
             "AutoRelockTime s after an unlock the lock locks itself (0: never); it waits for an open door.",
             "Over Matter the lock/unlock and user/credential commands need a timed invoke (spec).")

    def __init__(self, door_sensor: bool = True, users: int = 10, pin_length: tuple[int, int] = (4, 8),
                 **initial: Any):
        self.users_supported = int(users)
        self.door_sensor = bool(door_sensor)
        features = F.kPinCredential | F.kRfidCredential | F.kUser | F.kCredentialsOverTheAirAccess \
            | F.kWeekDayAccessSchedules | F.kYearDayAccessSchedules
        if door_sensor:
            features |= F.kDoorPositionSensor
        self.pin_length = pin_length
        self.attributes = (
            "LockState", "LockType", "ActuatorEnabled",
            *(("DoorState", "DoorOpenEvents", "DoorClosedEvents") if door_sensor else ()),
            "NumberOfTotalUsersSupported", "NumberOfPINUsersSupported", "NumberOfRFIDUsersSupported",
            "NumberOfWeekDaySchedulesSupportedPerUser", "NumberOfYearDaySchedulesSupportedPerUser",
            "MaxPINCodeLength", "MinPINCodeLength", "MaxRFIDCodeLength", "MinRFIDCodeLength",
            "CredentialRulesSupport", "NumberOfCredentialsSupportedPerUser", "Language", "AutoRelockTime",
            "SoundVolume", "OperatingMode", "SupportedOperatingModes", "EnableOneTouchLocking",
            "EnablePrivacyModeButton", "WrongCodeEntryLimit", "UserCodeTemporaryDisableTime",
            "RequirePINforRemoteOperation")
        self.writable = frozenset({"Language", "AutoRelockTime", "SoundVolume", "OperatingMode",
                                   "EnableOneTouchLocking", "EnablePrivacyModeButton", "WrongCodeEntryLimit",
                                   "UserCodeTemporaryDisableTime", "RequirePINforRemoteOperation",
                                   *(("DoorOpenEvents", "DoorClosedEvents") if door_sensor else ())})
        self.commands = ("LockDoor", "UnlockDoor", "UnlockWithTimeout", "SetWeekDaySchedule", "GetWeekDaySchedule",
                         "ClearWeekDaySchedule", "SetYearDaySchedule", "GetYearDaySchedule", "ClearYearDaySchedule",
                         "SetUser", "GetUser", "ClearUser", "SetCredential", "GetCredentialStatus",
                         "ClearCredential")
        super().__init__(feature_map=int(features), **initial)
        # user index -> {name, unique_id, status, type, rule, credentials: [[type, index]], creator, modifier}
        self._users: dict[int, dict[str, Any]] = {}
        # "type/index" -> {data (hex), user, creator, modifier}
        self._credentials: dict[str, dict[str, Any]] = {}
        self._week: dict[str, list[int]] = {}    # "user/index" -> [daysMask, sh, sm, eh, em]
        self._year: dict[str, list[int]] = {}    # "user/index" -> [start, end] (epoch-s)
        self._wrong = 0                          # wrong codes in a row
        self._lockout_until: int | None = None   # tick until which code entry is disabled
        self._relock_at: int | None = None       # tick of the next automatic relock
        self._relock_waiting = False             # a relock fell due while the door was open
        self._jammed = False

    def defaults(self) -> dict[str, Any]:
        low, high = self.pin_length
        return {"LockState": LockState.kLocked, "LockType": E.DlLockType.kDeadBolt, "ActuatorEnabled": True,
                "DoorState": DoorStateE.kDoorClosed, "DoorOpenEvents": 0, "DoorClosedEvents": 0,
                "NumberOfTotalUsersSupported": self.users_supported,
                "NumberOfPINUsersSupported": self.users_supported,
                "NumberOfRFIDUsersSupported": self.users_supported,
                "NumberOfWeekDaySchedulesSupportedPerUser": 4, "NumberOfYearDaySchedulesSupportedPerUser": 4,
                "MaxPINCodeLength": high, "MinPINCodeLength": low, "MaxRFIDCodeLength": 20, "MinRFIDCodeLength": 8,
                "CredentialRulesSupport": int(DL.Bitmaps.DlCredentialRuleMask.kSingle),
                "NumberOfCredentialsSupportedPerUser": 5, "Language": "en", "AutoRelockTime": 0,
                "SoundVolume": 1, "OperatingMode": E.OperatingModeEnum.kNormal,
                "SupportedOperatingModes": SUPPORTED_MODES_BITMAP, "EnableOneTouchLocking": True,
                "EnablePrivacyModeButton": False, "WrongCodeEntryLimit": 5, "UserCodeTemporaryDisableTime": 60,
                "RequirePINforRemoteOperation": False}

    def validate_write(self, name: str, value: Any) -> None:
        if name in ("WrongCodeEntryLimit", "UserCodeTemporaryDisableTime"):
            check_range(f"DoorLock.{name}", value, 1, 255)
        elif name == "SoundVolume":
            check_range("DoorLock.SoundVolume", value, 0, 3)
        elif name == "Language" and len(value) > 3:
            raise MatterError(Status.CONSTRAINT_ERROR, f"DoorLock.Language {value!r}: at most 3 characters")
        elif name == "OperatingMode" and value not in SUPPORTED_MODES:
            raise MatterError(Status.CONSTRAINT_ERROR, f"DoorLock.OperatingMode {int(value)} is not supported; "
                              "supported: " + ", ".join(f"{int(m)} ({m.name[1:]})" for m in SUPPORTED_MODES))
        elif name == "AutoRelockTime":
            check_range("DoorLock.AutoRelockTime", value, 0, 0xFFFFFFFF)

    def after_write(self, name: str, value: Any) -> None:
        if name == "AutoRelockTime" and value == 0:
            self._relock_at = None      # disabled: a pending relock is dropped

    # ---- who is asking ---------------------------------------------------------------
    @staticmethod
    def _fabric_and_node() -> tuple[Any, Any]:
        access = current_access.get()
        if access is None:
            return NullValue, NullValue
        return (access.fabric_index if access.fabric_index else NullValue,
                access.peer_node_id if access.peer_node_id is not None else NullValue)

    # ---- lock operations -------------------------------------------------------------
    def LockDoor(self, request: Any) -> None:
        self._remote(OpType.kLock, request.PINCode)

    def UnlockDoor(self, request: Any) -> None:
        self._remote(OpType.kUnlock, request.PINCode)

    def UnlockWithTimeout(self, request: Any) -> None:
        check_range("DoorLock.UnlockWithTimeout.timeout", request.timeout, 1, 0xFFFF)
        self._remote(OpType.kUnlock, request.PINCode, relock_after=request.timeout)

    def _remote(self, op: Any, pin: bytes | None, relock_after: int | None = None) -> None:
        if self._values["OperatingMode"] == E.OperatingModeEnum.kNoRemoteLockUnlock:
            self._refuse(op, Source.kRemote, OpError.kRestricted, None, None,
                         "OperatingMode NoRemoteLockUnlock refuses remote lock and unlock")
        needs_pin = bool(self._values["RequirePINforRemoteOperation"])
        if pin is None and needs_pin:
            self._refuse(op, Source.kRemote, OpError.kInvalidCredential, None, None,
                         "RequirePINforRemoteOperation is set: a PINCode is required")
        user = None
        credential = None
        if pin is not None:
            user, credential = self._check_code(op, Source.kRemote, CredType.kPin, pin)
        self._operate(op, Source.kRemote, user, credential, relock_after)

    def keypad(self, op: str, pin: str | bytes) -> None:
        """A person enters a PIN at the door's keypad ("lock"/"unlock"); MatterError if refused."""
        code = pin.encode() if isinstance(pin, str) else bytes(pin)
        operation = self._op(op)
        if self._values["OperatingMode"] in (E.OperatingModeEnum.kVacation, E.OperatingModeEnum.kPrivacy):
            self._refuse(operation, Source.kKeypad, OpError.kRestricted, None, None,
                         f"OperatingMode {self._values['OperatingMode'].name[1:]} disables the keypad")
        user, credential = self._check_code(operation, Source.kKeypad, CredType.kPin, code)
        self._operate(operation, Source.kKeypad, user, credential)

    def present_rfid(self, op: str, tag: bytes) -> None:
        """A tag is held to the reader; MatterError if refused."""
        operation = self._op(op)
        user, credential = self._check_code(operation, Source.kRfid, CredType.kRfid, bytes(tag))
        self._operate(operation, Source.kRfid, user, credential)

    def manual(self, op: str) -> None:
        """The thumb turn or key inside/outside the door: no credential."""
        self._operate(self._op(op), Source.kManual, None, None)

    @staticmethod
    def _op(op: str) -> Any:
        if op not in ("lock", "unlock"):
            raise ValueError(f"operation {op!r}: accepted lock, unlock")
        return OpType.kLock if op == "lock" else OpType.kUnlock

    def locked_out(self) -> bool:
        return self._lockout_until is not None and self.now < self._lockout_until

    def _check_code(self, op: Any, source: Any, ctype: Any, code: bytes) -> tuple[int, Any]:
        """The (user index, credential struct) a code belongs to, or a refusal (FAILURE)."""
        if self.locked_out():
            self._refuse(op, source, OpError.kRestricted, None, None,
                         f"code entry is disabled for {(self._lockout_until - self.now) / TICKS_PER_SECOND:g} s "
                         "after too many wrong codes")
        found = next(((key, c) for key, c in sorted(self._credentials.items())
                      if key.startswith(f"{int(ctype)}/") and c["data"] == code.hex()), None)
        if found is None:
            self._wrong += 1
            if self._wrong >= self._values["WrongCodeEntryLimit"]:
                self._wrong = 0
                self._lockout_until = self.now + self._values["UserCodeTemporaryDisableTime"] * TICKS_PER_SECOND
                self.emit_event(DL.Events.DoorLockAlarm(alarmCode=E.AlarmCodeEnum.kWrongCodeEntryLimit))
            self._refuse(op, source, OpError.kInvalidCredential, None, None, "wrong code")
        key, cred = found
        credential = DL.Structs.CredentialStruct(credentialType=ctype, credentialIndex=int(key.split("/")[1]))
        user_index = cred["user"]
        user = self._users[user_index]
        if user["status"] != int(UserStatus.kOccupiedEnabled):
            self._refuse(op, source, OpError.kDisabledUserDenied, user_index, credential,
                         f"user {user_index} is disabled")
        if user["type"] == int(UserType.kNonAccessUser):
            self._refuse(op, source, OpError.kRestricted, user_index, credential,
                         f"user {user_index} is a non-access user")
        if user["type"] in {int(t) for t in SCHEDULED_USERS} and not self._in_schedule(user_index):
            self._refuse(op, source, OpError.kRestricted, user_index, credential,
                         f"user {user_index} has no schedule that admits this time")
        self._wrong = 0
        return user_index, credential

    def _in_schedule(self, user_index: int) -> bool:
        now = getattr(self.clock, "now", None)
        for key, (days, sh, sm, eh, em) in self._week.items():
            if int(key.split("/")[0]) != user_index or now is None:
                continue
            day_bit = 1 << ((now.weekday() + 1) % 7)        # DaysMaskMap: bit 0 Sunday .. bit 6 Saturday
            minute = now.hour * 60 + now.minute
            if days & day_bit and sh * 60 + sm <= minute <= eh * 60 + em:
                return True
        epoch = epoch_seconds(self.clock)
        return any(start <= epoch <= end for key, (start, end) in self._year.items()
                   if int(key.split("/")[0]) == user_index)

    def _refuse(self, op: Any, source: Any, error: Any, user: int | None, credential: Any, why: str) -> None:
        fabric, node = self._fabric_and_node()
        self.emit_event(DL.Events.LockOperationError(
            lockOperationType=op, operationSource=source, operationError=error,
            userIndex=user if user is not None else NullValue, fabricIndex=fabric, sourceNode=node,
            credentials=[credential] if credential is not None else NullValue))
        raise _fail(f"DoorLock {op.name[1:]} refused: {why}")

    def _operate(self, op: Any, source: Any, user: int | None, credential: Any,
                 relock_after: int | None = None) -> None:
        if self._jammed:
            self.jam()
            raise _fail("DoorLock: the bolt is jammed")
        self.set("LockState", LockState.kLocked if op == OpType.kLock else LockState.kUnlocked)
        fabric, node = (self._fabric_and_node() if source == Source.kRemote else (NullValue, NullValue))
        self.emit_event(DL.Events.LockOperation(
            lockOperationType=op, operationSource=source, userIndex=user if user is not None else NullValue,
            fabricIndex=fabric, sourceNode=node, credentials=[credential] if credential is not None else NullValue))
        self._relock_waiting = False
        if op == OpType.kLock:
            self._relock_at = None
            return
        seconds = relock_after if relock_after is not None else self._values["AutoRelockTime"]
        self._relock_at = self.now + seconds * TICKS_PER_SECOND if seconds else None

    # ---- faults and the door ---------------------------------------------------------
    def jam(self) -> None:
        """The bolt sticks (a jammed fault): NotFullyLocked and the LockJammed alarm."""
        self._relock_at = None
        self.set("LockState", LockState.kNotFullyLocked)
        self.emit_event(DL.Events.DoorLockAlarm(alarmCode=E.AlarmCodeEnum.kLockJammed))

    def set_jammed(self, jammed: bool) -> None:
        """The fault engine's `jammed` fault starting (True) or ending (False)."""
        self.changing()
        was, self._jammed = self._jammed, bool(jammed)
        if jammed and not was:
            self.jam()

    def door_is_open(self) -> bool:
        return self.door_sensor and self._values["DoorState"] == DoorStateE.kDoorOpen

    def set_door(self, open_: bool) -> None:
        """The door opens or closes (a resident, a scenario): DoorState, its counters and event.
        A locked door cannot be opened (ValueError)."""
        if not self.door_sensor:
            raise ValueError("this lock has no door position sensor")
        if open_ and self._values["LockState"] == LockState.kLocked:
            raise ValueError("the door is locked; unlock it first")
        self.changing()
        state = DoorStateE.kDoorOpen if open_ else DoorStateE.kDoorClosed
        if self._values["DoorState"] == state:
            return
        self.set("DoorState", state)
        counter = "DoorOpenEvents" if open_ else "DoorClosedEvents"
        self.set(counter, (self._values[counter] + 1) & 0xFFFFFFFF)
        self.emit_event(DL.Events.DoorStateChange(doorState=state))
        if not open_ and self._relock_waiting:
            self._relock_waiting = False
            self._operate(OpType.kLock, Source.kAuto, None, None)

    # ---- time ------------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        return self._relock_at

    def advance_to(self, tick: int) -> None:
        if self._relock_at is not None and tick >= self._relock_at:
            self._relock_at = None
            if self.door_is_open():
                self._relock_waiting = True
            elif self._values["LockState"] != LockState.kLocked:
                try:
                    self._operate(OpType.kLock, Source.kAuto, None, None)
                except MatterError:
                    pass    # jammed: the alarm is the outcome

    # ---- users -----------------------------------------------------------------------
    def install_users(self, users: list[Any]) -> None:
        """Users programmed at install (a home file's `users: [{name, pin, type?}]`): user i
        with PIN credential i. ValueError names the bad entry."""
        for i, entry in enumerate(users, start=1):
            if not isinstance(entry, dict) or set(entry) - {"name", "pin", "type"} or "pin" not in entry:
                raise ValueError(f"users[{i - 1}]: expected {{name, pin, type?}}, got {entry!r}")
            pin = str(entry["pin"])
            low, high = self.pin_length
            if not pin.isdigit() or not low <= len(pin) <= high:
                raise ValueError(f"users[{i - 1}].pin: {low}..{high} digits, got {pin!r}")
            kind = entry.get("type", "unrestricted")
            types = {t.name[1:].removesuffix("User").lower(): t for t in UserType if t.name != "kUnknownEnumValue"}
            if kind not in types:
                raise ValueError(f"users[{i - 1}].type: {kind!r}; accepted: {', '.join(types)}")
            if i > self.users_supported or any(c["data"] == pin.encode().hex() for c in self._credentials.values()):
                raise ValueError(f"users[{i - 1}]: too many users or a duplicate PIN")
            self._users[i] = {"name": str(entry.get("name", ""))[:10], "unique_id": None,
                              "status": int(UserStatus.kOccupiedEnabled), "type": int(types[kind]),
                              "rule": int(E.CredentialRuleEnum.kSingle), "credentials": [[int(CredType.kPin), i]],
                              "creator": None, "modifier": None}
            self._credentials[f"{int(CredType.kPin)}/{i}"] = {"data": pin.encode().hex(), "user": i,
                                                             "creator": None, "modifier": None}

    def _user_index(self, index: int) -> int:
        check_range("DoorLock userIndex", index, 1, self.users_supported)
        return int(index)

    def _user_change(self, data_type: Any, op: Any, user: Any, data_index: Any) -> None:
        fabric, node = self._fabric_and_node()
        self.emit_event(DL.Events.LockUserChange(
            lockDataType=data_type, dataOperationType=op, operationSource=Source.kRemote,
            userIndex=user, fabricIndex=fabric, sourceNode=node, dataIndex=data_index))

    def SetUser(self, request: Any) -> None:
        index = self._user_index(request.userIndex)
        fabric, _ = self._fabric_and_node()
        existing = self._users.get(index)
        if request.operationType == DataOp.kAdd:
            if existing is not None:
                raise _fail(f"user {index} exists; use operationType Modify", DlStatus.kOccupied)
            self.changing()
            self._users[index] = {
                "name": "" if request.userName is NullValue else request.userName,
                "unique_id": None if request.userUniqueID is NullValue else int(request.userUniqueID),
                "status": int(UserStatus.kOccupiedEnabled if request.userStatus is NullValue else request.userStatus),
                "type": int(UserType.kUnrestrictedUser if request.userType is NullValue else request.userType),
                "rule": int(E.CredentialRuleEnum.kSingle if request.credentialRule is NullValue
                            else request.credentialRule),
                "credentials": [], "creator": _json(fabric), "modifier": _json(fabric)}
        elif request.operationType == DataOp.kModify:
            if existing is None:
                raise _fail(f"no user {index} to modify")
            self.changing()
            user = dict(existing)
            for field, key in (("userName", "name"), ("userUniqueID", "unique_id"), ("userStatus", "status"),
                               ("userType", "type"), ("credentialRule", "rule")):
                value = getattr(request, field)
                if value is not NullValue:
                    user[key] = value if key == "name" else int(value)
            user["modifier"] = _json(fabric)
            self._users[index] = user
        else:
            raise MatterError(Status.INVALID_COMMAND, "SetUser operationType: accepted Add (0) or Modify (2)")
        if self._users[index]["status"] == int(UserStatus.kAvailable):
            raise MatterError(Status.INVALID_COMMAND, "SetUser userStatus Available: use ClearUser")
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        self._user_change(DataType.kUserIndex, request.operationType, index, index)

    def GetUser(self, request: Any) -> Any:
        index = self._user_index(request.userIndex)
        user = self._users.get(index)
        later = [i for i in sorted(self._users) if i > index]
        next_index = later[0] if later else NullValue
        R = DL.Commands.GetUserResponse
        if user is None:
            return R(userIndex=index, userName=NullValue, userUniqueID=NullValue, userStatus=NullValue,
                     userType=NullValue, credentialRule=NullValue, credentials=NullValue,
                     creatorFabricIndex=NullValue, lastModifiedFabricIndex=NullValue, nextUserIndex=next_index)
        return R(userIndex=index, userName=user["name"],
                 userUniqueID=NullValue if user["unique_id"] is None else user["unique_id"],
                 userStatus=UserStatus(user["status"]), userType=UserType(user["type"]),
                 credentialRule=E.CredentialRuleEnum(user["rule"]),
                 credentials=[DL.Structs.CredentialStruct(credentialType=CredType(t), credentialIndex=i)
                              for t, i in user["credentials"]] or NullValue,
                 creatorFabricIndex=_null(user["creator"]), lastModifiedFabricIndex=_null(user["modifier"]),
                 nextUserIndex=next_index)

    def ClearUser(self, request: Any) -> None:
        index = request.userIndex
        if index == CLEAR_ALL:
            indices = sorted(self._users)
        else:
            indices = [self._user_index(index)] if self._user_index(index) in self._users else []
        self.changing()
        for i in indices:
            self._drop_user(i)
        if indices or index == CLEAR_ALL:
            self.data_version = (self.data_version + 1) & 0xFFFFFFFF
            self._user_change(DataType.kUserIndex, DataOp.kClear, index, index)

    def _drop_user(self, index: int) -> None:
        user = self._users.pop(index)
        for ctype, cindex in user["credentials"]:
            self._credentials.pop(f"{ctype}/{cindex}", None)
        for table in (self._week, self._year):
            for key in [k for k in table if k.startswith(f"{index}/")]:
                del table[key]

    # ---- credentials -----------------------------------------------------------------
    def _check_credential(self, credential: Any) -> tuple[int, int]:
        ctype = credential.credentialType
        if ctype not in (CredType.kPin, CredType.kRfid):
            raise MatterError(Status.INVALID_COMMAND, f"credentialType {int(ctype)}: accepted Pin (1), Rfid (2)")
        limit = self._values["NumberOfPINUsersSupported" if ctype == CredType.kPin else "NumberOfRFIDUsersSupported"]
        check_range("DoorLock credentialIndex", credential.credentialIndex, 1, limit)
        return int(ctype), int(credential.credentialIndex)

    def _next_free_credential(self, ctype: int, after: int) -> Any:
        limit = self._values["NumberOfPINUsersSupported" if ctype == int(CredType.kPin) else
                             "NumberOfRFIDUsersSupported"]
        return next((i for i in range(after + 1, limit + 1) if f"{ctype}/{i}" not in self._credentials), NullValue)

    def SetCredential(self, request: Any) -> Any:
        R = DL.Commands.SetCredentialResponse
        ctype, cindex = self._check_credential(request.credential)
        key = f"{ctype}/{cindex}"
        nxt = self._next_free_credential(ctype, cindex)
        data = bytes(request.credentialData)
        low, high = ((self._values["MinPINCodeLength"], self._values["MaxPINCodeLength"]) if ctype == int(CredType.kPin)
                     else (self._values["MinRFIDCodeLength"], self._values["MaxRFIDCodeLength"]))
        if not low <= len(data) <= high or (ctype == int(CredType.kPin) and not data.isdigit()):
            return R(status=DlStatus.kInvalidField, userIndex=NullValue, nextCredentialIndex=nxt)
        if any(c["data"] == data.hex() and k != key and k.startswith(f"{ctype}/")
               for k, c in self._credentials.items()):
            return R(status=DlStatus.kDuplicate, userIndex=NullValue, nextCredentialIndex=nxt)
        fabric, _ = self._fabric_and_node()
        existing = self._credentials.get(key)
        if request.operationType == DataOp.kAdd:
            if existing is not None:
                return R(status=DlStatus.kOccupied, userIndex=NullValue, nextCredentialIndex=nxt)
            if request.userIndex is NullValue:      # a new user for this credential: the first free index
                free = next((i for i in range(1, self.users_supported + 1) if i not in self._users), None)
                if free is None:
                    return R(status=DlStatus.kResourceExhausted, userIndex=NullValue, nextCredentialIndex=nxt)
                self.changing()
                self._users[free] = {
                    "name": "", "unique_id": None,
                    "status": int(UserStatus.kOccupiedEnabled if request.userStatus is NullValue
                                  else request.userStatus),
                    "type": int(UserType.kUnrestrictedUser if request.userType is NullValue else request.userType),
                    "rule": int(E.CredentialRuleEnum.kSingle), "credentials": [],
                    "creator": _json(fabric), "modifier": _json(fabric)}
                user_index = free
            else:
                user_index = self._user_index(request.userIndex)
                if user_index not in self._users:
                    return R(status=DlStatus.kInvalidField, userIndex=NullValue, nextCredentialIndex=nxt)
                if len(self._users[user_index]["credentials"]) >= self._values["NumberOfCredentialsSupportedPerUser"]:
                    return R(status=DlStatus.kResourceExhausted, userIndex=NullValue, nextCredentialIndex=nxt)
            self.changing()
            user = dict(self._users[user_index])
            user["credentials"] = [*user["credentials"], [ctype, cindex]]
            self._users[user_index] = user
        elif request.operationType == DataOp.kModify:
            if existing is None:
                return R(status=DlStatus.kInvalidField, userIndex=NullValue, nextCredentialIndex=nxt)
            user_index = existing["user"]
            if request.userIndex is not NullValue and request.userIndex != user_index:
                return R(status=DlStatus.kInvalidField, userIndex=NullValue, nextCredentialIndex=nxt)
        else:
            raise MatterError(Status.INVALID_COMMAND, "SetCredential operationType: accepted Add (0) or Modify (2)")
        self.changing()
        self._credentials[key] = {"data": data.hex(), "user": user_index,
                                  "creator": existing["creator"] if existing else _json(fabric),
                                  "modifier": _json(fabric)}
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        self._user_change(CREDENTIAL_DATA_TYPE[CredType(ctype)], request.operationType, user_index, cindex)
        return R(status=DlStatus.kSuccess, userIndex=user_index if request.userIndex is NullValue else NullValue,
                 nextCredentialIndex=nxt)

    def GetCredentialStatus(self, request: Any) -> Any:
        ctype, cindex = self._check_credential(request.credential)
        cred = self._credentials.get(f"{ctype}/{cindex}")
        nxt = next((i for i in range(cindex + 1, 0xFFFF) if f"{ctype}/{i}" in self._credentials), NullValue) \
            if any(k.startswith(f"{ctype}/") for k in self._credentials) else NullValue
        R = DL.Commands.GetCredentialStatusResponse
        if cred is None:
            return R(credentialExists=False, userIndex=NullValue, creatorFabricIndex=NullValue,
                     lastModifiedFabricIndex=NullValue, nextCredentialIndex=nxt)
        return R(credentialExists=True, userIndex=cred["user"], creatorFabricIndex=_null(cred["creator"]),
                 lastModifiedFabricIndex=_null(cred["modifier"]), nextCredentialIndex=nxt)

    def ClearCredential(self, request: Any) -> None:
        credential = request.credential
        if credential is NullValue:
            keys = sorted(self._credentials)
        else:
            ctype, cindex = (int(credential.credentialType), int(credential.credentialIndex))
            if cindex == CLEAR_ALL:
                keys = sorted(k for k in self._credentials if k.startswith(f"{ctype}/"))
            else:
                self._check_credential(credential)
                keys = [f"{ctype}/{cindex}"] if f"{ctype}/{cindex}" in self._credentials else []
        if not keys:
            return
        self.changing()
        for key in keys:
            cred = self._credentials.pop(key)
            ctype, cindex = (int(p) for p in key.split("/"))
            user = dict(self._users[cred["user"]])
            user["credentials"] = [c for c in user["credentials"] if c != [ctype, cindex]]
            self._users[cred["user"]] = user
            if not user["credentials"]:       # a user's last credential goes: so does the user (spec)
                self._drop_user(cred["user"])
            self._user_change(CREDENTIAL_DATA_TYPE[CredType(ctype)], DataOp.kClear, cred["user"], cindex)
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF

    # ---- schedules -------------------------------------------------------------------
    def _schedule_user(self, request: Any, per_user: str, field: str) -> tuple[int, int]:
        user = self._user_index(request.userIndex)
        index = getattr(request, field)
        check_range(f"DoorLock {field}", index, 1, self._values[per_user])
        if user not in self._users:
            raise MatterError(Status.FAILURE, f"no user {user}")
        return user, int(index)

    def SetWeekDaySchedule(self, request: Any) -> None:
        user, index = self._schedule_user(request, "NumberOfWeekDaySchedulesSupportedPerUser", "weekDayIndex")
        days = int(request.daysMask)
        if not 0 < days < 0x80 or request.startHour > 23 or request.endHour > 23 or request.startMinute > 59 \
                or request.endMinute > 59 or (request.endHour, request.endMinute) <= (request.startHour,
                                                                                      request.startMinute):
            raise MatterError(Status.INVALID_COMMAND, "SetWeekDaySchedule: daysMask 1..127, hours 0..23, "
                              "minutes 0..59, end after start")
        self.changing()
        self._week[f"{user}/{index}"] = [days, int(request.startHour), int(request.startMinute),
                                         int(request.endHour), int(request.endMinute)]
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        self._user_change(DataType.kWeekDaySchedule, DataOp.kAdd, user, index)

    def GetWeekDaySchedule(self, request: Any) -> Any:
        R = DL.Commands.GetWeekDayScheduleResponse
        user, index = self._schedule_user(request, "NumberOfWeekDaySchedulesSupportedPerUser", "weekDayIndex")
        entry = self._week.get(f"{user}/{index}")
        if entry is None:
            return R(weekDayIndex=index, userIndex=user, status=DlStatus.kNotFound)
        days, sh, sm, eh, em = entry
        return R(weekDayIndex=index, userIndex=user, status=DlStatus.kSuccess, daysMask=days, startHour=sh,
                 startMinute=sm, endHour=eh, endMinute=em)

    def ClearWeekDaySchedule(self, request: Any) -> None:
        self._clear_schedule(self._week, request, request.weekDayIndex, DataType.kWeekDaySchedule,
                             "NumberOfWeekDaySchedulesSupportedPerUser")

    def SetYearDaySchedule(self, request: Any) -> None:
        user, index = self._schedule_user(request, "NumberOfYearDaySchedulesSupportedPerUser", "yearDayIndex")
        if request.localEndTime <= request.localStartTime:
            raise MatterError(Status.INVALID_COMMAND, "SetYearDaySchedule: localEndTime must be after localStartTime")
        self.changing()
        self._year[f"{user}/{index}"] = [int(request.localStartTime), int(request.localEndTime)]
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        self._user_change(DataType.kYearDaySchedule, DataOp.kAdd, user, index)

    def GetYearDaySchedule(self, request: Any) -> Any:
        R = DL.Commands.GetYearDayScheduleResponse
        user, index = self._schedule_user(request, "NumberOfYearDaySchedulesSupportedPerUser", "yearDayIndex")
        entry = self._year.get(f"{user}/{index}")
        if entry is None:
            return R(yearDayIndex=index, userIndex=user, status=DlStatus.kNotFound)
        return R(yearDayIndex=index, userIndex=user, status=DlStatus.kSuccess, localStartTime=entry[0],
                 localEndTime=entry[1])

    def ClearYearDaySchedule(self, request: Any) -> None:
        self._clear_schedule(self._year, request, request.yearDayIndex, DataType.kYearDaySchedule,
                             "NumberOfYearDaySchedulesSupportedPerUser")

    def _clear_schedule(self, table: dict[str, list[int]], request: Any, index: int, data_type: Any,
                        per_user: str) -> None:
        user = self._user_index(request.userIndex)
        if index != ALL_SCHEDULES:
            check_range("DoorLock schedule index", index, 1, self._values[per_user])
        keys = [k for k in table if k.startswith(f"{user}/") and (index == ALL_SCHEDULES or k == f"{user}/{index}")]
        if not keys:
            return
        self.changing()
        for key in keys:
            del table[key]
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        self._user_change(data_type, DataOp.kClear, user, index)

    # ---- persistence -----------------------------------------------------------------
    def users(self) -> dict[int, dict[str, Any]]:
        """The user table (a copy), for tools and docs."""
        return {i: dict(u) for i, u in sorted(self._users.items())}

    def private_state(self) -> dict[str, Any]:
        return {"users": {str(i): u for i, u in sorted(self._users.items())},
                "credentials": dict(sorted(self._credentials.items())),
                "week": dict(sorted(self._week.items())), "year": dict(sorted(self._year.items())),
                "wrong": self._wrong, "lockout_until": self._lockout_until, "relock_at": self._relock_at,
                "relock_waiting": self._relock_waiting, "jammed": self._jammed}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._users = {int(i): {**u, "credentials": [list(c) for c in u["credentials"]]}
                       for i, u in state.get("users", {}).items()}
        self._credentials = {k: dict(v) for k, v in state.get("credentials", {}).items()}
        self._week = {k: list(v) for k, v in state.get("week", {}).items()}
        self._year = {k: list(v) for k, v in state.get("year", {}).items()}
        self._wrong = state.get("wrong", 0)
        self._lockout_until = state.get("lockout_until")
        self._relock_at = state.get("relock_at")
        self._relock_waiting = state.get("relock_waiting", False)
        self._jammed = state.get("jammed", False)

    # Users and credentials are the lock's memory (they survive a restart); a pending relock
    # and a lockout do not.
    def saved_state(self) -> dict[str, Any]:
        return {**super().saved_state(), "users": self.private_state()["users"],
                "credentials": dict(self._credentials), "week": dict(self._week), "year": dict(self._year)}

    def power_up(self, saved: dict[str, Any]) -> None:
        jammed = self._jammed          # a jammed bolt stays jammed across a restart (the fault says when it ends)
        super().power_up(saved)
        self.load_private_state({k: saved[k] for k in ("users", "credentials", "week", "year") if k in saved})
        self._jammed = jammed

    def stop_motion(self) -> None:
        self._relock_at = None
        self._relock_waiting = False
        self._lockout_until = None
        self._wrong = 0


def _json(value: Any) -> Any:
    return None if value is NullValue else value


def _null(value: Any) -> Any:
    return NullValue if value is None else value
