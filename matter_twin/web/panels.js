// The other tabs: pairing codes with QR images, workflows on a timeline, benchmark runs, and
// edit mode. Each is drawn when its tab opens.
import { call, el, tool, toast } from "./api.js";

// ---- pairing ------------------------------------------------------------------------------
export async function showPairing() {
  const box = document.getElementById("codes");
  const answer = await call("GET", "/codes");
  if (!answer.ok) return;
  box.replaceChildren(...answer.codes.map((row) => {
    const manual = row.manual_code_usable === false ? "QR only" : dashed(row.manual_code);
    return el("div", { class: "code-card", dataset: { device: row.device } },
      el("img", { class: "qr", src: `/live/qr/${encodeURIComponent(row.device)}.png`, alt: `QR code of ${row.device}`, width: 150, height: 150 }),
      el("div", { class: "code-text" },
        el("h3", {}, row.name || row.device), el("div", { class: "muted" }, row.device),
        el("div", {}, "manual ", el("code", { class: "manual" }, manual)),
        el("div", {}, "QR ", el("code", { class: "payload" }, row.qr_code)),
        row.window ? el("div", { class: `window ${row.window}` }, `window ${row.window}${row.window_closes_in_s ? ` (${Math.floor(row.window_closes_in_s / 60)} min left)` : ""}`) : null,
        // Windows exist where nodes run (`twin run --http`); `twin serve` has codes only.
        row.window !== undefined ? el("button", { class: "small", onclick: async () => {
          const opened = await call("POST", `/pair/${encodeURIComponent(row.device)}`, {});
          if (opened.ok) { toast(`window of ${row.device} open`); showPairing(); }
        } }, "Open window") : el("div", { class: "muted" }, "no node running (twin run --http)")));
  }));
}

function dashed(code) {
  return [code.slice(0, 4), code.slice(4, 7), code.slice(7, 11), code.slice(11, 16), code.slice(16)].filter(Boolean).join("-");
}

// ---- workflows ----------------------------------------------------------------------------
export async function showWorkflows(state) {
  const answer = await fetch("/tools/get_workflow_list", { method: "POST", body: "{}" }).then((r) => r.json());
  if (!answer.ok) return;
  const flows = answer.workflows;
  const timeline = document.getElementById("timeline");
  const list = document.getElementById("workflows");
  if (!flows.length) {
    timeline.replaceChildren(el("p", { class: "hint" }, "No workflows yet. Agents schedule them with the schedule_workflow tool."));
    list.replaceChildren();
    return;
  }
  const times = flows.map((w) => Date.parse(w.start_time.replace(" ", "T")));
  const now = Date.parse(state.home.time.replace(" ", "T"));
  const lo = Math.min(...times, now), hi = Math.max(...times, now) || lo + 1;
  const x = (t) => `${3 + ((t - lo) / (hi - lo || 1)) * 94}%`;
  timeline.replaceChildren(el("div", { class: "axis" },
    el("div", { class: "now", style: `left:${x(now)}`, title: `now ${state.home.time}` }, "now"),
    flows.map((w, i) => el("div", { class: `mark ${w.status}`, style: `left:${x(times[i])}`, title: `${w.workflow_id}: ${w.status} at ${w.start_time}` }))),
  el("div", { class: "axis-labels" }, el("span", {}, new Date(lo).toLocaleString()), el("span", {}, new Date(hi).toLocaleString())));
  list.replaceChildren(el("table", { class: "grid" },
    el("tr", {}, ["workflow", "start", "status", "steps", ""].map((h) => el("th", {}, h))),
    flows.map((w) => el("tr", { class: w.status },
      el("td", {}, w.workflow_id), el("td", {}, w.start_time), el("td", {}, el("span", { class: `badge ${w.status}` }, w.status)),
      el("td", {}, el("ol", {}, (w.steps || []).map((s) => el("li", {}, `${s.tool} ${JSON.stringify(s.args)} → ${s.status}${s.error ? `: ${s.error}` : ""}`))),
        w.error ? el("div", { class: "error" }, w.error) : null),
      el("td", {}, w.status === "scheduled" ? el("button", { class: "small", onclick: async () => {
        await tool("cancel_workflow", { "workflow.id": w.workflow_id }); showWorkflows(state);
      } }, "cancel") : null)))));
}

// ---- benchmark runs -------------------------------------------------------------------------
export async function showRuns() {
  const box = document.getElementById("runs");
  const answer = await call("GET", "/live/runs");
  if (!answer.ok) return;
  if (!answer.runs.length) {
    box.replaceChildren(el("p", { class: "hint" }, answer.dir ? `No runs in ${answer.dir} (directories with results.jsonl, from twin bench run --out).`
      : "Start with --runs DIR to see benchmark runs (twin bench run --out DIR/NAME)."));
    return;
  }
  box.replaceChildren(el("table", { class: "grid" }, el("tr", {}, ["run", "episodes", "solved", "rate"].map((h) => el("th", {}, h))),
    answer.runs.map((r) => el("tr", { class: "clickable", onclick: () => showRun(r.name) }, el("td", {}, r.name), el("td", {}, r.episodes),
      el("td", {}, r.solved), el("td", {}, `${r.episodes ? ((100 * r.solved) / r.episodes).toFixed(1) : 0}%`)))));
}

async function showRun(name) {
  const box = document.getElementById("run");
  const answer = await call("GET", `/live/runs/${encodeURIComponent(name)}`);
  if (!answer.ok) return;
  const byCategory = {};
  for (const r of answer.results) {
    const c = (byCategory[r.category] ||= { n: 0, ok: 0 });
    c.n += 1; c.ok += r.success ? 1 : 0;
  }
  box.replaceChildren(el("h3", {}, `Run ${name}`),
    el("div", { class: "scores" }, Object.entries(byCategory).sort().map(([c, s]) =>
      el("div", { class: "score" }, el("b", {}, c), ` ${s.ok}/${s.n}`))),
    el("table", { class: "grid" }, el("tr", {}, ["episode", "category", "agent", "success", "steps", "latency s", "trace"].map((h) => el("th", {}, h))),
      answer.results.map((r) => el("tr", { class: r.success ? "completed" : "failed" },
        el("td", {}, r.episode_id), el("td", {}, r.category), el("td", {}, r.agent), el("td", {}, r.success ? "✔" : "✘"),
        el("td", {}, r.steps), el("td", {}, r.latency_s),
        el("td", {}, el("details", {}, el("summary", {}, `${(r.history || []).length} calls`),
          el("ol", { class: "trace" }, (r.history || []).map((h) => el("li", {},
            h.thought ? el("div", { class: "thought" }, h.thought) : null,
            `${h.ok ? "" : "✘ "}${h.tool} ${JSON.stringify(h.args)}`,
            h.result ? el("div", { class: "muted" }, `→ ${brief(h.result)}`) : null))),
          r.answer ? el("p", {}, el("b", {}, "answer: "), r.answer) : null,
          (r.failures || []).length ? el("p", { class: "error" }, r.failures.join("; ")) : null))))));
}

// A tool result on one line, cut short: the trace stays readable.
function brief(result) {
  const text = JSON.stringify(result.ok ? Object.fromEntries(Object.entries(result).filter(([k]) => k !== "ok")) : result.error);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

// ---- edit mode ------------------------------------------------------------------------------
let draft = null;
let types = [];
let saveDir = "";
export async function showEditor(state) {
  const answer = await call("GET", "/live/homefile");
  if (!answer.ok) return;
  draft = answer.home;
  types = answer.types;
  saveDir = answer.dir;
  drawEditor(answer.path, state);
}

function drawEditor(path, state) {
  const box = document.getElementById("editor");
  const roomIds = draft.rooms.map((r) => r.id);
  const redraw = () => drawEditor(path, state);
  box.replaceChildren(
    el("p", { class: "hint" }, "Arrange rooms and devices, then save a home file (validated like any home file; the running home is not changed). Start it with twin run --home FILE."),
    el("div", { class: "edit-plan" }, draft.rooms.map((room, i) => el("div", { class: "edit-room" },
      el("div", { class: "room-head" },
        el("input", { value: room.name || room.id, title: "room name", onchange: (e) => { room.name = e.target.value; } }),
        el("span", { class: "muted" }, room.id),
        el("button", { class: "small", title: "move up", disabled: i === 0, onclick: () => { draft.rooms.splice(i - 1, 0, draft.rooms.splice(i, 1)[0]); redraw(); } }, "↑"),
        el("button", { class: "small", title: "move down", disabled: i === draft.rooms.length - 1, onclick: () => { draft.rooms.splice(i + 1, 0, draft.rooms.splice(i, 1)[0]); redraw(); } }, "↓"),
        el("button", { class: "small danger", title: "remove room", onclick: () => { draft.rooms.splice(i, 1); redraw(); } }, "✕")),
      el("ul", {}, room.devices.map((d, j) => el("li", {}, el("span", { class: "dev" }, d.id, " ", el("small", {}, d.type)),
        el("select", { title: "move to room", onchange: (e) => {
          const target = draft.rooms.find((r) => r.id === e.target.value);
          target.devices.push(room.devices.splice(j, 1)[0]); redraw();
        } }, roomIds.map((id) => el("option", { value: id, selected: id === room.id }, id === room.id ? "move to…" : `→ ${id}`))),
        el("button", { class: "small danger", onclick: () => { room.devices.splice(j, 1); redraw(); } }, "✕")))),
      el("form", { class: "add", onsubmit: (e) => {
        e.preventDefault();
        room.devices.push({ id: e.target.elements.id.value.trim(), type: e.target.elements.type.value }); redraw();
      } }, el("input", { name: "id", placeholder: "new device id", size: 14, required: true }),
      el("select", { name: "type" }, types.map((t) => el("option", { value: t }, t))),
      el("button", { class: "small", type: "submit" }, "add device"))))),
    el("form", { class: "add", onsubmit: (e) => {
      e.preventDefault();
      const id = e.target.elements.id.value.trim();
      draft.rooms.push({ id, name: e.target.elements.name.value || id, devices: [] }); redraw();
    } }, el("input", { name: "id", placeholder: "new room id", size: 14, required: true }),
    el("input", { name: "name", placeholder: "name", size: 14 }), el("button", { class: "small", type: "submit" }, "add room")),
    el("form", { class: "save", onsubmit: async (e) => {
      e.preventDefault();
      const body = { home: draft, path: e.target.elements.path.value || null, overwrite: e.target.elements.overwrite.checked };
      const saved = await call("POST", "/live/homefile", body);
      if (saved.ok) {
        toast(saved.path ? `saved ${saved.path}` : "valid home file");
        document.getElementById("yaml").textContent = saved.yaml;
      }
    } }, el("input", { name: "path", placeholder: "file name (e.g. my_home.yaml); empty: only check", size: 40, value: path || "",
      title: `saved in ${saveDir}` }),
    el("label", { class: "muted" }, el("input", { type: "checkbox", name: "overwrite" }), " overwrite"),
    el("button", { type: "submit" }, "Validate & save"), el("span", { class: "muted" }, `in ${saveDir}`)),
    el("pre", { id: "yaml", class: "yaml" }));
}
