// The live page: one Server-Sent-Events stream (/live/stream) keeps `home` current; the panels
// draw from it. Nothing here polls the devices.
import { call, el, parseSpan, toast } from "./api.js";
import { deviceCard, setEnums, updateCard } from "./devices.js";
import { showPairing, showWorkflows, showRuns, showEditor } from "./panels.js";
import { drawLab, labMessage, startLab } from "./lab.js";

const HISTORY = 180;                       // samples kept per room value (3 min at 1 s)
const QUANTITIES = [
  ["temperature", "Temperature", 2, "°C"], ["humidity", "Humidity", 1, "%RH"],
  ["illuminance", "Light", 0, "lux"], ["pm10", "PM10", 1, "µg/m³"],
];
export const state = { home: null, history: {}, tab: "home" };

// ---- the stream ---------------------------------------------------------------------------
function connect() {
  const source = new EventSource("/live/stream?sample=1");
  const conn = document.getElementById("conn");
  source.addEventListener("open", () => conn.classList.add("up"));
  source.addEventListener("error", () => conn.classList.remove("up"));
  source.addEventListener("home", (e) => {
    state.home = JSON.parse(e.data); setEnums(state.home.enums); drawHome(); drawClock(); startLab(state.home);
  });
  source.addEventListener("pace", (e) => {
    const { speed, paused, tick, time } = JSON.parse(e.data);
    Object.assign(state.home, { pace: { speed, paused }, tick, time });
    drawClock();
  });
  source.addEventListener("changes", (e) => applyChanges(JSON.parse(e.data)));
}

function applyChanges(batch) {
  const home = state.home;
  home.tick = batch.tick;
  home.time = batch.time;
  const touched = new Set();
  for (const c of batch.changes) {
    if (c.kind === "attribute" && home.devices[c.device]) {
      home.devices[c.device].attributes[`${c.endpoint}/${c.cluster}/${c.attribute}`] = c.value;
      touched.add(c.device);
    } else if (c.kind === "room") {
      const room = home.rooms.find((r) => r.id === c.room);
      if (!room) continue;
      room.values[c.quantity] = c.value;
      record(c.room, c.quantity, batch.tick, c.value);
      drawValue(c.room, c.quantity);
    } else if (c.kind === "event") {
      showEvent(batch.time, c);
    } else if (c.kind === "message") {
      labMessage(c);
    }
  }
  if (state.tab === "lab") drawLab(state);
  if (performance.now() - lastRedraw > 1000) {
    lastRedraw = performance.now();
    for (const room of home.rooms) for (const [q] of QUANTITIES) drawValue(room.id, q);
  }
  for (const id of touched) {
    const card = document.querySelector(`.device[data-device="${id}"]`);
    if (card) updateCard(card, home.devices[id]);
  }
  drawClock();
}

let lastRedraw = 0;
const EVENTS_SHOWN = 6;
function showEvent(time, c) {   // the newest few events, newest first
  const box = document.getElementById("events");
  box.querySelector(".muted")?.remove();
  box.querySelector(".label").after(el("span", { class: "event", title: JSON.stringify(c.value) },
    el("time", {}, time.slice(11, 19)), `${c.device} · ${c.cluster}.${c.event}`));
  while (box.querySelectorAll(".event").length > EVENTS_SHOWN) box.querySelector(".event:last-of-type").remove();
}
function record(room, quantity, tick, value) {
  const series = (state.history[`${room}/${quantity}`] ||= []);
  series.push([tick, value]);
  if (series.length > HISTORY) series.shift();
}

// ---- the clock ----------------------------------------------------------------------------
function drawClock() {
  const home = state.home;
  if (!home) return;
  document.getElementById("home-name").textContent = home.name;
  document.getElementById("clock-time").textContent = home.time;
  document.getElementById("clock-tick").textContent = `tick ${home.tick}`;
  const pace = home.pace;
  document.getElementById("clock-pace").textContent = !pace ? (home.lab ? "wall clock (lab session)" : "clock moves by fast-forward only")
    : pace.paused ? "paused" : `${pace.speed}× real time`;
  const pause = document.getElementById("pause");
  pause.textContent = pace && pace.paused ? "Resume" : "Pause";
  pause.disabled = !pace;
  document.getElementById("speed").disabled = !pace;
  document.querySelector("#ff button").disabled = !!home.lab;   // a lab's twin follows the wall clock
  if (pace) {
    const select = document.getElementById("speed");
    if (![...select.options].some((o) => Number(o.value) === pace.speed)) select.append(el("option", { value: pace.speed }, `${pace.speed}×`));
    select.value = String(pace.speed);
  }
}

function wireClock() {
  document.getElementById("pause").addEventListener("click", () =>
    call("POST", "/clock/pace", { paused: !state.home.pace.paused }));
  document.getElementById("speed").addEventListener("change", (e) =>
    call("POST", "/clock/pace", { speed: Number(e.target.value) }));
  document.getElementById("ff").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = document.getElementById("ff-span").value;
    const seconds = parseSpan(text);
    if (!(seconds >= 0)) { toast(`"${text}" is not a span: try 30s, 10m, 2h or 1d`, "error"); return; }
    const answer = await call("POST", "/clock/advance", { seconds });
    if (answer.ok) toast(`fast-forwarded ${text} to ${answer.time}`);
  });
}

// ---- the home: a floor plan of rooms ------------------------------------------------------
function drawHome() {
  const plan = document.getElementById("plan");
  const home = state.home;
  plan.replaceChildren(...home.rooms.map((room) => {
    const big = room.devices.length > 4;
    return el("div", { class: `room ${big ? "wide" : ""}`, dataset: { room: room.id } },
      el("div", { class: "room-head" }, el("h2", {}, room.name), el("span", { class: "count" }, `${room.devices.length} devices`)),
      el("div", { class: "values" }, QUANTITIES.map(([q, label]) =>
        el("div", { class: `value ${q}`, dataset: { quantity: q } },
          el("div", { class: "value-label" }, label),
          el("div", { class: "value-number" }),
          spark()))),
      el("div", { class: "devices" }, room.devices.map((id) => deviceCard(home.devices[id]))));
  }));
  for (const room of home.rooms) {
    for (const [q] of QUANTITIES) {
      if (!state.history[`${room.id}/${q}`]) record(room.id, q, home.tick, room.values[q]);
      drawValue(room.id, q);
    }
  }
}

const SVG = "http://www.w3.org/2000/svg";
function spark() {   // SVG elements need their namespace (el() makes HTML ones)
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("viewBox", "0 0 100 24");
  svg.setAttribute("preserveAspectRatio", "none");
  return svg;
}
function drawValue(roomId, quantity) {
  const box = document.querySelector(`.room[data-room="${roomId}"] .value[data-quantity="${quantity}"]`);
  if (!box) return;
  const [, , digits, unit] = QUANTITIES.find(([q]) => q === quantity);
  const room = state.home.rooms.find((r) => r.id === roomId);
  box.querySelector(".value-number").textContent = `${Number(room.values[quantity]).toFixed(digits)} ${unit}`;
  // Values are sent when they move: the last one holds until now.
  const kept = state.history[`${roomId}/${quantity}`] || [];
  const series = kept.length ? [...kept, [Math.max(state.home.tick, kept[kept.length - 1][0] + 1), kept[kept.length - 1][1]]] : [];
  const svg = box.querySelector("svg");
  svg.replaceChildren();
  if (series.length < 2) return;
  const values = series.map(([, v]) => v);
  const lo = Math.min(...values), hi = Math.max(...values);
  const span = hi - lo;
  const t0 = series[0][0], t1 = series[series.length - 1][0] || t0 + 1;
  const points = series.map(([t, v]) => `${((t - t0) / (t1 - t0 || 1)) * 100},${span ? 22 - ((v - lo) / span) * 20 : 12}`).join(" ");
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", points);
  svg.append(line);
  svg.setAttribute("data-range", `${lo.toFixed(digits)}–${hi.toFixed(digits)} ${unit}`);
  box.title = `last ${series.length} samples: ${lo.toFixed(digits)}–${hi.toFixed(digits)} ${unit}`;
}

// ---- tabs -------------------------------------------------------------------------------
const SHOW = { pairing: showPairing, workflows: showWorkflows, runs: showRuns, edit: showEditor, lab: drawLab };
function wireTabs() {
  for (const button of document.querySelectorAll("nav .tab")) {
    button.addEventListener("click", () => {
      state.tab = button.dataset.tab;
      for (const b of document.querySelectorAll("nav .tab")) b.classList.toggle("active", b === button);
      for (const p of document.querySelectorAll(".panel")) p.classList.toggle("active", p.id === `tab-${state.tab}`);
      if (SHOW[state.tab]) SHOW[state.tab](state);
    });
  }
  setInterval(() => { if (state.tab === "workflows") showWorkflows(state); }, 2000);
}

wireClock();
wireTabs();
connect();
