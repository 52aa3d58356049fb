"""Values encoded by their declared chip types (twin/node/values.py): byte vectors, round trips
of every attribute of every device type, and the Matter status codes of wrong wire types."""
from __future__ import annotations

import pytest
from chip import tlv as chip_tlv
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue

from clusters.device import DEVICE_TYPES
from clusters.devices import create_device
from clusters.status import MatterError, Status
from matter_protocol.interaction import AttributeData, AttributePath
from matter_protocol.tlv import Struct, decode_tlv
from twin.node.values import Typed, decode_typed, encode_value


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# ---- values by declared type --------------------------------------------------------------------
@pytest.mark.parametrize("typ, value, hex_text", [
    (chip_tlv.uint, 300, "052c01"),                              # unsigned, 2 bytes
    (int, -5, "00fb"),                                           # signed, 1 byte
    (int, 300, "012c01"),                                        # signed even when positive
    (chip_tlv.float32, 1.5, "0a0000c03f"),                       # single precision
    (float, 1.5, "0b000000000000f83f"),                          # double precision
    (bool, True, "09"),
    (str, "hi", "0c026869"),
    (bytes, b"\x01\x02", "10020102"),
    (C.TemperatureMeasurement.Attributes.MeasuredValue.attribute_type.Type, NullValue, "14"),
    (C.TemperatureMeasurement.Attributes.MeasuredValue.attribute_type.Type, -1234, "012efb"),
    (C.OnOff.Attributes.StartUpOnOff.attribute_type.Type, C.OnOff.Enums.StartUpOnOffEnum.kToggle, "0402"),
    (C.OnOff.Bitmaps.Feature, C.OnOff.Bitmaps.Feature.kLighting, "0401"),
    (C.UserLabel.Attributes.LabelList.attribute_type.Type, [C.UserLabel.Structs.LabelStruct("a", "b")],
     "16 15 2c0001 61 2c0101 62 18 18"),
    (C.Descriptor.Attributes.PartsList.attribute_type.Type, [], "1618"),
])
def test_values_encode_by_declared_type(typ, value, hex_text):
    data = encode_value(typ, value)
    assert data == h(hex_text)
    assert decode_typed(typ, decode_tlv(data)) == value


def test_optional_struct_fields_are_omitted_and_come_back_none():
    typ = C.LevelControl.Commands.MoveToLevel
    command = typ(level=10, transitionTime=NullValue, optionsMask=0, optionsOverride=0)
    data = encode_value(typ, command)
    assert data == h("15 24000a 3401 240200 240300 18")
    assert decode_typed(typ, decode_tlv(data)) == command
    modes = C.DishwasherMode.Structs.ModeOptionStruct(label="Eco", mode=2, modeTags=[])
    back = decode_typed(C.DishwasherMode.Structs.ModeOptionStruct, decode_tlv(encode_value(type(modes), modes)))
    assert back == modes


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_every_attribute_of_every_device_type_round_trips(key):
    device = create_device("x", key)
    count = 0
    for server in device.servers():
        for name in server.attribute_names():
            typ = server.attribute_class(name).attribute_type.Type
            value = server.read(name)
            data = encode_value(typ, value)
            back = decode_typed(typ, decode_tlv(data))
            assert back == value, (server.name, name)
            assert encode_value(typ, back) == data
            count += 1
    assert count > 40


@pytest.mark.parametrize("typ, raw, status", [
    (chip_tlv.uint, -1, Status.INVALID_DATA_TYPE),
    (chip_tlv.uint, True, Status.INVALID_DATA_TYPE),
    (int, 1.5, Status.INVALID_DATA_TYPE),
    (chip_tlv.float32, 3, Status.INVALID_DATA_TYPE),
    (str, b"abc", Status.INVALID_DATA_TYPE),
    (bytes, "00ff", Status.INVALID_DATA_TYPE),
    (bool, 1, Status.INVALID_DATA_TYPE),
    (chip_tlv.uint, None, Status.INVALID_DATA_TYPE),                     # not nullable
    (C.OnOff.Attributes.StartUpOnOff.attribute_type.Type, chip_tlv.uint(9), Status.CONSTRAINT_ERROR),
    (C.OnOff.Bitmaps.Feature, chip_tlv.uint(0x80), Status.CONSTRAINT_ERROR),
    (C.UserLabel.Attributes.LabelList.attribute_type.Type, Struct({0: "a"}), Status.INVALID_DATA_TYPE),
    (C.UserLabel.Structs.LabelStruct, Struct({0: "a"}), Status.INVALID_DATA_TYPE),   # value missing
])
def test_decode_typed_rejects_wrong_types(typ, raw, status):
    with pytest.raises(MatterError) as e:
        decode_typed(typ, raw, "X.Y")
    assert e.value.status == status and "X.Y" in str(e.value)


def test_decode_typed_ignores_unknown_fields_and_fills_fabric_index():
    entry = decode_typed(C.AccessControl.Structs.AccessControlEntryStruct,
                         Struct({1: chip_tlv.uint(5), 2: chip_tlv.uint(2), 3: None, 4: None, 9: "future"}))
    assert (entry.privilege, entry.authMode, entry.subjects, entry.fabricIndex) == (5, 2, NullValue, 0)


def test_command_field_errors_use_the_status_asked_for():
    with pytest.raises(MatterError) as e:
        decode_typed(C.LevelControl.Commands.MoveToLevel, Struct({0: "x"}), bad=Status.INVALID_COMMAND)
    assert e.value.status == Status.INVALID_COMMAND


def test_typed_value_in_attribute_data_uses_the_declared_type():
    typ = C.TemperatureMeasurement.Attributes.MeasuredValue.attribute_type.Type   # int16, nullable
    signed = AttributeData(AttributePath(1, 0x402, 0), Typed(typ, 2150), 1).element()
    unsigned = AttributeData(AttributePath(1, 0x402, 0), Typed(chip_tlv.uint, 2150), 1).element()
    assert signed.endswith(h("21 02 6608 18")) and unsigned.endswith(h("25 02 6608 18"))
