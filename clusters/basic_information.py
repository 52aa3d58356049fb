"""BasicInformation cluster server (Matter 1.3, revision 3), on the root endpoint.

Identity values (vendor/product names and ids, serial number, unique id) are given as
keyword initial values, e.g. `BasicInformationServer(VendorName="Acme", SerialNumber="X1")`.
"""
from __future__ import annotations

import datetime
from typing import Any

from clusters.base import Clusters, ClusterServer, MatterError, Status, check_range
from clusters.constraints import utf8_length

BI = Clusters.BasicInformation

DATA_MODEL_REVISION = 17           # Matter 1.3
SPECIFICATION_VERSION = 0x01030000  # 1.3.0, encoded major.minor.dot.reserved

#: Maximum string lengths from the spec (minimum 1 where marked).
MAX_LENGTHS = {"VendorName": 32, "ProductName": 32, "NodeLabel": 32, "HardwareVersionString": 64,
               "SoftwareVersionString": 64, "SerialNumber": 32, "UniqueID": 32, "ProductLabel": 64,
               "ProductURL": 256, "PartNumber": 32}
NON_EMPTY = ("HardwareVersionString", "SoftwareVersionString")


class BasicInformationServer(ClusterServer):
    cluster = BI
    revision = 3
    attributes = ("DataModelRevision", "VendorName", "VendorID", "ProductName", "ProductID",
                  "NodeLabel", "Location", "HardwareVersion", "HardwareVersionString",
                  "SoftwareVersion", "SoftwareVersionString", "SerialNumber", "UniqueID",
                  "CapabilityMinima", "SpecificationVersion", "MaxPathsPerInvoke", "Reachable",
                  # optional ones nearly every commercial product carries
                  "ProductLabel", "ProductURL", "PartNumber", "ManufacturingDate", "LocalConfigDisabled")
    writable = frozenset({"NodeLabel", "Location", "LocalConfigDisabled"})
    notes = ("NodeLabel: up to 32 characters. Location: a two-letter ISO 3166-1 country code "
             "in capitals, or XX when unknown.",
             "ManufacturingDate: 8..16 characters starting YYYYMMDD. LocalConfigDisabled: true "
             "disables the product's own buttons and displays for configuration.")

    def __init__(self, **initial: Any):
        super().__init__(**initial)
        for name in self.attributes:  # identity given at build time obeys the same rules
            self.validate_write(name, self._values[name])

    def defaults(self) -> dict[str, Any]:
        return {"DataModelRevision": DATA_MODEL_REVISION, "VendorName": "matter-twin",
                "VendorID": 0xFFF1,  # a test vendor id: the twin is not a certified product
                "ProductName": "matter-twin device", "ProductID": 0x8000, "NodeLabel": "",
                "Location": "XX", "HardwareVersion": 0, "HardwareVersionString": "0",
                "SoftwareVersion": 1, "SoftwareVersionString": "1.0", "SerialNumber": "",
                "UniqueID": "",
                "CapabilityMinima": BI.Structs.CapabilityMinimaStruct(caseSessionsPerFabric=3,
                                                                      subscriptionsPerFabric=3),
                "SpecificationVersion": SPECIFICATION_VERSION, "MaxPathsPerInvoke": 1,
                "Reachable": True, "ProductLabel": "", "ProductURL": "", "PartNumber": "",
                "ManufacturingDate": "20260101", "LocalConfigDisabled": False}

    def validate_write(self, name: str, value: Any) -> None:
        what = f"BasicInformation.{name}"
        if name in MAX_LENGTHS:
            check_range(f"length in bytes of {what}", utf8_length(value), 1 if name in NON_EMPTY else 0,
                        MAX_LENGTHS[name])
        elif name == "Location":
            if not (len(value) == 2 and value.isascii() and value.isalpha() and value.isupper()):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={value!r} must be a two-letter ISO 3166-1 country code "
                                  "in capitals (e.g. 'US', 'KR'), or 'XX' when unknown")
        elif name == "ManufacturingDate":
            if not (8 <= len(value) <= 16 and _is_date(value[:8])):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={value!r} must be 8..16 characters starting with a date "
                                  "YYYYMMDD (e.g. '20260131')")
        elif name == "ProductURL" and value and not value.isascii():
            raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={value!r} must be an ASCII URL (RFC 3986)")
        elif name in ("VendorID", "ProductID", "HardwareVersion"):
            check_range(what, value, 0, 0xFFFF)
        elif name in ("SoftwareVersion", "SpecificationVersion"):
            check_range(what, value, 0, 0xFFFFFFFF)


def _is_date(text: str) -> bool:
    try:
        datetime.date(int(text[:4]), int(text[4:6]), int(text[6:8]))
    except ValueError:
        return False
    return text.isdigit()
