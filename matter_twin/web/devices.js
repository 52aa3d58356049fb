// One device's card: its state in a line, and controls that call the tools (so the tools'
// rules and errors apply). Controls come from the clusters a device has, not its type.
import { el, tool } from "./api.js";

// A badge per device type (letters and a hue: no icon font or emoji font needed).
const BADGES = {
  on_off_light: ["L", 45], dimmable_light: ["L", 45], air_conditioner: ["AC", 200], air_purifier: ["AP", 170],
  fan: ["F", 190], tv: ["TV", 260], window_covering: ["W", 30], refrigerator: ["R", 210], freezer: ["Fz", 220],
  dishwasher: ["DW", 280], humidifier: ["H", 205], dehumidifier: ["DH", 25], laundry_washer: ["Wa", 300],
  laundry_dryer: ["Dr", 330], heat_pump: ["HP", 10], electrical_sensor: ["E", 90], robot_vacuum_cleaner: ["RV", 140],
  color_temperature_light: ["L", 40], extended_color_light: ["CL", 320], on_off_plug: ["P", 100], dimmable_plug: ["P", 110],
  mounted_on_off_control: ["MC", 100], mounted_dimmable_load_control: ["MD", 110], generic_switch: ["Sw", 0],
  on_off_light_switch: ["Sw", 50], dimmer_switch: ["Sw", 60], color_dimmer_switch: ["Sw", 310], control_bridge: ["CB", 300],
  pump_controller: ["PC", 180], window_covering_controller: ["WC", 30], speaker: ["Sp", 270], basic_video_player: ["VP", 250],
  oven: ["Ov", 15], cooktop: ["Ck", 5], cook_surface: ["Ck", 10], microwave_oven: ["MW", 350], extractor_hood: ["Hd", 160],
  water_heater: ["WH", 0], water_valve: ["V", 195], pump: ["Pu", 185], evse: ["EV", 120], solar_power: ["PV", 55],
  battery_storage: ["B", 130], thermostat: ["T", 15],
};
// Locks and sensors of a real home (issue #27).
Object.assign(BADGES, {
  door_lock: ["Lk", 0], contact_sensor: ["C", 60], occupancy_sensor: ["Oc", 120], smoke_co_alarm: ["SA", 355],
  water_leak_detector: ["Lw", 195], water_freeze_detector: ["Fr", 185], rain_sensor: ["Rn", 215],
  pressure_sensor: ["P", 240], flow_sensor: ["Fl", 180], temperature_sensor: ["T", 15], humidity_sensor: ["Hu", 200],
  light_sensor: ["Lx", 50],
});
const LOCK_STATES = { 0: "Not fully locked", 1: "Locked", 2: "Unlocked", 3: "Unlatched" };
const DOOR_STATES = { 0: "door open", 1: "door closed", 2: "door jammed", 3: "door forced open", 5: "door ajar" };
const ALARM_STATES = ["", "warning", "CRITICAL"];
// What a BooleanState's TRUE means, by device type.
const BOOLEAN_MEANING = { contact_sensor: ["Open", "Closed"], water_leak_detector: ["Dry", "LEAK"],
  water_freeze_detector: ["No frost", "FREEZE"], rain_sensor: ["Dry", "Rain"] };
const MODE_CLUSTERS = ["DishwasherMode", "LaundryWasherMode", "RvcRunMode", "RvcCleanMode",
  "RefrigeratorAndTemperatureControlledCabinetMode", "OvenMode", "MicrowaveOvenMode", "WaterHeaterMode", "EnergyEvseMode"];
const EVSE_STATES = ["unplugged", "plugged in", "wants charge", "charging", "discharging", "ending", "fault"];
const VALVE_STATES = ["closed", "open", "moving"];
// Enum value names from the data model, sent by the server with the home (`enums`).
let ENUMS = {};
export function setEnums(enums) { ENUMS = enums || {}; }
const SYSTEM_MODES = { 0: "Off", 1: "Auto", 3: "Cool", 4: "Heat", 7: "Fan only" };

// The endpoint that has `cluster`, and that endpoint's attribute getter.
function find(device, cluster) {
  for (const [ep, clusters] of Object.entries(device.endpoints)) {
    if (clusters.includes(cluster)) return Number(ep);
  }
  return null;
}
const attr = (device, ep, cluster, name) => device.attributes[`${ep}/${cluster}/${name}`];

const exec = (device, ep, cluster, command, args = {}) =>
  tool("execute_command", { "device.id": device.id, "endpoint.id": ep, "cluster.id": cluster, "command.id": command, args });
const write = (device, ep, cluster, attribute, value) =>
  tool("write_attribute", { "device.id": device.id, "endpoint.id": ep, "cluster.id": cluster, "attribute.id": attribute, value });

const temp = (v) => (v === null || v === undefined ? "—" : `${(v / 100).toFixed(1)} °C`);

// The one-line state of a device.
export function summary(device) {
  const parts = [];
  const on = find(device, "OnOff");
  if (on !== null) parts.push(attr(device, on, "OnOff", "OnOff") ? "On" : "Off");
  const level = find(device, "LevelControl");
  if (level !== null) {
    const v = attr(device, level, "LevelControl", "CurrentLevel");
    if (v !== null && v !== undefined) parts.push(`${Math.round((v / 254) * 100)}%`);
  }
  const fan = find(device, "FanControl");
  if (fan !== null) parts.push(`fan ${attr(device, fan, "FanControl", "PercentCurrent") ?? 0}%`);
  const th = find(device, "Thermostat");
  if (th !== null) {
    parts.push(SYSTEM_MODES[attr(device, th, "Thermostat", "SystemMode")] ?? "mode ?");
    parts.push(`room ${temp(attr(device, th, "Thermostat", "LocalTemperature"))}`);
  }
  const wc = find(device, "WindowCovering");
  if (wc !== null) {
    const pos = attr(device, wc, "WindowCovering", "CurrentPositionLiftPercent100ths");
    parts.push(pos === null || pos === undefined ? "position ?" : `${(100 - pos / 100).toFixed(0)}% open`);
  }
  for (const cluster of ["OperationalState", "RvcOperationalState", "OvenCavityOperationalState"]) {
    const ep = find(device, cluster);
    if (ep !== null) {
      const value = attr(device, ep, cluster, "OperationalState");
      parts.push((ENUMS[cluster] || {})[value] ?? `state ${value ?? "?"}`);
    }
  }
  const cc = find(device, "ColorControl");
  if (cc !== null) {
    const mode = attr(device, cc, "ColorControl", "ColorMode");
    parts.push(mode === 2 ? `${Math.round(1e6 / attr(device, cc, "ColorControl", "ColorTemperatureMireds"))} K`
      : mode === 0 ? `hue ${attr(device, cc, "ColorControl", "CurrentHue")}` : "xy colour");
  }
  const sw = find(device, "Switch");
  if (sw !== null) parts.push(`position ${attr(device, sw, "Switch", "CurrentPosition")}`);
  const evse = find(device, "EnergyEvse");
  if (evse !== null) {
    parts.push(EVSE_STATES[attr(device, evse, "EnergyEvse", "State")] ?? "state ?");
    const soc = attr(device, evse, "EnergyEvse", "StateOfCharge");
    if (soc !== null && soc !== undefined) parts.push(`car ${soc}%`);
  }
  const tank = find(device, "WaterHeaterManagement");
  if (tank !== null) parts.push(`tank ${attr(device, tank, "WaterHeaterManagement", "TankPercentage")}%`);
  const valve = find(device, "ValveConfigurationAndControl");
  if (valve !== null) parts.push(VALVE_STATES[attr(device, valve, "ValveConfigurationAndControl", "CurrentState")] ?? "valve ?");
  const tm = find(device, "TemperatureMeasurement");
  if (tm !== null) parts.push(temp(attr(device, tm, "TemperatureMeasurement", "MeasuredValue")));
  const power = find(device, "ElectricalPowerMeasurement");
  if (power !== null) {
    const mw = attr(device, power, "ElectricalPowerMeasurement", "ActivePower");
    if (mw !== null && mw !== undefined) parts.push(`${(mw / 1000).toFixed(0)} W`);
  }
  const lock = find(device, "DoorLock");
  if (lock !== null) {
    parts.push(LOCK_STATES[attr(device, lock, "DoorLock", "LockState")] ?? "lock ?");
    const door = attr(device, lock, "DoorLock", "DoorState");
    if (door !== undefined && door !== null) parts.push(DOOR_STATES[door] ?? "door ?");
  }
  const bs = find(device, "BooleanState");
  if (bs !== null) parts.push((BOOLEAN_MEANING[device.type] || ["false", "true"])[attr(device, bs, "BooleanState", "StateValue") ? 1 : 0]);
  const occ = find(device, "OccupancySensing");
  if (occ !== null) parts.push(attr(device, occ, "OccupancySensing", "Occupancy") ? "Occupied" : "Unoccupied");
  const smoke = find(device, "SmokeCoAlarm");
  if (smoke !== null) {
    const s = attr(device, smoke, "SmokeCoAlarm", "SmokeState"), co = attr(device, smoke, "SmokeCoAlarm", "COState");
    parts.push(s ? `SMOKE ${ALARM_STATES[s]}` : co ? `CO ${ALARM_STATES[co]}` : "No smoke");
  }
  for (const [cluster, unit, scale] of [["RelativeHumidityMeasurement", "%RH", 100], ["PressureMeasurement", "kPa", 10], ["FlowMeasurement", "m³/h", 10]]) {
    const ep = find(device, cluster);
    const v = ep === null ? null : attr(device, ep, cluster, "MeasuredValue");
    if (ep !== null && v !== null && v !== undefined && !find(device, "FanControl")) parts.push(`${(v / scale).toFixed(1)} ${unit}`);
  }
  const lux = find(device, "IlluminanceMeasurement");
  if (lux !== null) {
    const v = attr(device, lux, "IlluminanceMeasurement", "MeasuredValue");
    if (v) parts.push(`${Math.round(10 ** ((v - 1) / 10000))} lx`);
  }
  for (const cluster of MODE_CLUSTERS) {
    const ep = find(device, cluster);
    if (ep === null) continue;
    const mode = attr(device, ep, cluster, "CurrentMode");
    const label = (attr(device, ep, cluster, "SupportedModes") || []).find((m) => m.mode === mode);
    if (label) parts.push(label.label);
  }
  return parts.join(" · ");
}

function slider(min, max, value, onchange, title) {
  return el("input", { type: "range", min, max, value: value ?? min, title, onchange: (e) => onchange(Number(e.target.value)) });
}

// The controls of a device, rebuilt whenever one of its attributes changes.
export function controls(device) {
  const out = [];
  const on = find(device, "OnOff");
  if (on !== null) {
    const isOn = !!attr(device, on, "OnOff", "OnOff");
    out.push(el("button", { class: `toggle ${isOn ? "on" : ""}`, title: "OnOff On / Off",
      onclick: () => exec(device, on, "OnOff", isOn ? "Off" : "On") }, isOn ? "On" : "Off"));
  }
  const level = find(device, "LevelControl");
  if (level !== null) {
    out.push(slider(1, 254, attr(device, level, "LevelControl", "CurrentLevel"), (v) =>
      exec(device, level, "LevelControl", device.type === "tv" ? "MoveToLevel" : "MoveToLevelWithOnOff", { level: v, transitionTime: 0, optionsMask: 0, optionsOverride: 0 }),
      device.type === "tv" ? "volume" : "level"));
  }
  const fan = find(device, "FanControl");
  if (fan !== null) {
    out.push(slider(0, 100, attr(device, fan, "FanControl", "PercentSetting"), (v) =>
      write(device, fan, "FanControl", "PercentSetting", v), "fan speed %"));
  }
  const th = find(device, "Thermostat");
  if (th !== null) {
    const mode = attr(device, th, "Thermostat", "SystemMode");
    out.push(el("select", { title: "SystemMode", onchange: (e) => write(device, th, "Thermostat", "SystemMode", Number(e.target.value)) },
      Object.entries(SYSTEM_MODES).map(([value, label]) => el("option", { value, selected: Number(value) === mode }, label))));
    for (const [name, label] of [["OccupiedCoolingSetpoint", "cool"], ["OccupiedHeatingSetpoint", "heat"]]) {
      const value = attr(device, th, "Thermostat", name);
      if (value === undefined) continue;
      out.push(el("label", { class: "setpoint" }, `${label} `, el("input", { type: "number", step: "0.5", value: (value / 100).toFixed(1),
        title: name, onchange: (e) => write(device, th, "Thermostat", name, Math.round(Number(e.target.value) * 100)) }), "°C"));
    }
  }
  const wc = find(device, "WindowCovering");
  if (wc !== null) {
    const pos = attr(device, wc, "WindowCovering", "CurrentPositionLiftPercent100ths") ?? 0;
    out.push(slider(0, 100, 100 - pos / 100, (v) =>
      exec(device, wc, "WindowCovering", "GoToLiftPercentage", { liftPercent100thsValue: (100 - v) * 100 }), "open %"));
  }
  for (const cluster of MODE_CLUSTERS) {
    const ep = find(device, cluster);
    if (ep === null) continue;
    const current = attr(device, ep, cluster, "CurrentMode");
    out.push(el("select", { title: cluster, onchange: (e) => exec(device, ep, cluster, "ChangeToMode", { newMode: Number(e.target.value) }) },
      (attr(device, ep, cluster, "SupportedModes") || []).map((m) => el("option", { value: m.mode, selected: m.mode === current }, m.label))));
  }
  const cc = find(device, "ColorControl");
  if (cc !== null && attr(device, cc, "ColorControl", "ColorTempPhysicalMinMireds") !== undefined) {
    out.push(slider(attr(device, cc, "ColorControl", "ColorTempPhysicalMinMireds"), attr(device, cc, "ColorControl", "ColorTempPhysicalMaxMireds"),
      attr(device, cc, "ColorControl", "ColorTemperatureMireds"), (v) =>
        exec(device, cc, "ColorControl", "MoveToColorTemperature", { colorTemperatureMireds: v, transitionTime: 5, optionsMask: 0, optionsOverride: 0 }),
      "colour temperature (mireds)"));
  }
  if (cc !== null && attr(device, cc, "ColorControl", "CurrentHue") !== undefined) {
    out.push(slider(0, 254, attr(device, cc, "ColorControl", "CurrentHue"), (v) =>
      exec(device, cc, "ColorControl", "MoveToHueAndSaturation", { hue: v, saturation: 254, transitionTime: 5, optionsMask: 0, optionsOverride: 0 }),
      "hue"));
  }
  const lock = find(device, "DoorLock");
  if (lock !== null) {
    // A PIN field: the lock may require one (RequirePINforRemoteOperation); sent hex-encoded.
    const pin = el("input", { type: "password", size: 6, placeholder: "PIN", title: "PINCode" });
    const hex = () => [...pin.value].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
    const op = (command) => exec(device, lock, "DoorLock", command, pin.value ? { PINCode: hex() } : {});
    out.push(pin, el("span", { class: "buttons" },
      el("button", { class: "small", onclick: () => op("LockDoor") }, "Lock"),
      el("button", { class: "small", onclick: () => op("UnlockDoor") }, "Unlock")));
  }
  const smoke = find(device, "SmokeCoAlarm");
  if (smoke !== null) {
    out.push(el("button", { class: "small", onclick: () => exec(device, smoke, "SmokeCoAlarm", "SelfTestRequest") }, "Test"));
  }
  for (const cluster of ["OperationalState", "RvcOperationalState", "OvenCavityOperationalState"]) {
    const ep = find(device, cluster);
    if (ep === null) continue;
    const commands = { OperationalState: ["Start", "Pause", "Resume", "Stop"], RvcOperationalState: ["Pause", "Resume", "GoHome"],
      OvenCavityOperationalState: ["Start", "Stop"] }[cluster];
    out.push(el("span", { class: "buttons" }, commands.map((c) => el("button", { class: "small", onclick: () => exec(device, ep, cluster, c) }, c))));
  }
  return out;
}

// Every attribute, and a form to send any command (for what the quick controls do not cover).
function details(device) {
  const rows = attributeRows(device);
  const form = el("form", { class: "command", onsubmit: (e) => {
    e.preventDefault();
    const [ep, cluster] = form.elements.cluster.value.split("/");
    let args;
    try { args = JSON.parse(form.elements.args.value || "{}"); } catch { args = form.elements.args.value; }
    exec(device, Number(ep), cluster, form.elements.command.value, args);
  } },
  el("select", { name: "cluster" }, Object.entries(device.endpoints).flatMap(([ep, cs]) => cs.map((c) => el("option", { value: `${ep}/${c}` }, `${ep}/${c}`)))),
  el("input", { name: "command", placeholder: "command", size: 10 }),
  el("input", { name: "args", placeholder: "{args}", size: 12 }),
  el("button", { type: "submit", class: "small" }, "send"));
  return el("details", {}, el("summary", {}, "attributes & commands"), form, el("table", { class: "attrs" }, rows));
}

export function attributeRows(device) {
  return Object.entries(device.attributes).map(([key, value]) =>
    el("tr", {}, el("td", {}, key), el("td", {}, JSON.stringify(value))));
}

// Refresh a card in place: an open details box and a control being used stay as they are.
export function updateCard(card, device) {
  card.querySelector(".state").textContent = summary(device);
  const box = card.querySelector(".controls");
  if (!box.contains(document.activeElement) || document.activeElement.type === "button" || document.activeElement.tagName === "BUTTON") {
    box.replaceChildren(...controls(device));
  }
  const table = card.querySelector("table.attrs");
  if (table && card.querySelector("details").open) table.replaceChildren(...attributeRows(device));
}

export function deviceCard(device) {
  return el("div", { class: "device", dataset: { device: device.id } },
    el("div", { class: "device-head" }, el("span", { class: "icon", style: `--hue:${(BADGES[device.type] || ["?", 0])[1]}` }, (BADGES[device.type] || ["?"])[0]),
      el("span", { class: "label", title: `${device.id} (${device.type})` }, device.label),
      el("span", { class: "state" }, summary(device))),
    el("div", { class: "controls" }, controls(device)),
    details(device));
}
