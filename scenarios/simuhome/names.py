"""SimuHome's names and endpoint ids for ours: one table, used by the importer
(scenarios/simuhome/importer.py) and by the tools for imported episodes (scenarios/simuhome/evaluate.py).

Our compositions follow the Matter device library; SimuHome's put some clusters on other
endpoints (docs/simuhome.md says which and why we keep ours).
"""
from __future__ import annotations

#: SimuHome device type -> ours (the rest are spelled alike).
TYPE_KEYS = {"rvc": "robot_vacuum_cleaner", "window_covering_controller": "window_covering"}
#: SimuHome cluster name -> the spec's.
CLUSTERS = {"RTCCMode": "RefrigeratorAndTemperatureControlledCabinetMode", "RVCRunMode": "RvcRunMode",
            "RVCCleanMode": "RvcCleanMode", "RVCOperationalState": "RvcOperationalState"}
#: (our device type, cluster) -> {SimuHome endpoint: ours}, where the two differ.
ENDPOINTS: dict[tuple[str, str], dict[int, int]] = {
    ("heat_pump", "PowerTopology"): {2: 1},
    ("heat_pump", "ElectricalPowerMeasurement"): {2: 1},
    ("heat_pump", "ElectricalEnergyMeasurement"): {2: 1},
    ("heat_pump", "DeviceEnergyManagement"): {3: 1},
    ("heat_pump", "Thermostat"): {4: 2},
    ("refrigerator", "TemperatureControl"): {1: 2},
    ("refrigerator", "TemperatureMeasurement"): {1: 2},
    ("freezer", "TemperatureControl"): {1: 2},
    ("freezer", "TemperatureMeasurement"): {1: 2},
    ("humidifier", "RelativeHumidityMeasurement"): {2: 1},
    ("dehumidifier", "RelativeHumidityMeasurement"): {2: 1},
}


def our_endpoint(type_key: str, cluster: str, endpoint: int) -> int | None:
    """Our endpoint for SimuHome's `endpoint` of `cluster` on a `type_key` device (None: same)."""
    return ENDPOINTS.get((type_key, cluster), {}).get(endpoint)


def map_path(type_key: str, key: str) -> tuple[int, str, str]:
    """SimuHome's "<endpoint>.<Cluster>.<Attribute>[.<field>...]" as (our endpoint, spec cluster
    name, attribute[.field])."""
    ep, cluster, attribute = key.split(".", 2)
    cluster = CLUSTERS.get(cluster, cluster)
    endpoint = int(ep)
    return our_endpoint(type_key, cluster, endpoint) or endpoint, cluster, attribute
