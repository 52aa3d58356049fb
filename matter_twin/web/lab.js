// A lab session (`twin lab run|shadow --http`): each real device's reported values beside its
// twin's, divergences as they are flagged, and the call log. Fed by the stream alone: the
// session's start view comes with the home (`home.lab`), its news as `message` changes
// (lab.real, lab.call, lab.event); the twin's values are the home's own.
import { el } from "./api.js";

const CALLS_SHOWN = 100;   // the newest calls (the recording has them all)
let lab = null;

export function startLab(home) {
  lab = home.lab ? { ...home.lab, calls: [] } : null;
  document.querySelector('nav .tab[data-tab="lab"]').hidden = !lab;
  if (lab) drawLab({ home });
}

export function labMessage(c) {
  if (!lab) return;
  const v = c.value;
  if (c.topic === "lab.real") {
    (lab.real[v.device] ||= {})[v.key] = v.value;
  } else if (c.topic === "lab.call") {
    lab.calls.unshift(v);
    if (lab.calls.length > CALLS_SHOWN) lab.calls.pop();
  } else if (c.topic === "lab.event") {
    if (v.kind === "divergence") lab.divergences.push(v.detail);
    if (lab.devices[v.device] && (v.kind === "node_unavailable" || v.kind === "node_available")) {
      lab.devices[v.device].available = v.kind === "node_available";
    }
  }
}

function twinValue(device, key) {   // "Cluster.Attribute" on any endpoint of the twin device
  const [cluster, attribute] = key.split(".");
  const found = Object.entries(device ? device.attributes : {}).find(([k]) => k.endsWith(`/${cluster}/${attribute}`));
  return found ? found[1] : undefined;
}

const show = (value) => (value === undefined ? "—" : JSON.stringify(value));
const brief = (value) => { const text = JSON.stringify(value); return text.length > 120 ? `${text.slice(0, 120)}…` : text; };

export function drawLab(state) {
  const box = document.getElementById("lab");
  if (!lab || !box) return;
  const home = state.home;
  box.replaceChildren(
    el("p", { class: "hint" }, `Lab session ${lab.name} (${lab.source}), recording to ${lab.recording}.`),
    el("h3", {}, "Real vs twin"),
    el("table", { class: "grid", id: "lab-devices" },
      el("tr", {}, ["device", "mode", "attribute", "real", "twin"].map((h) => el("th", {}, h))),
      Object.entries(lab.devices).flatMap(([id, d]) => {
        const reported = Object.entries(lab.real[id] || {}).filter(([key]) => twinValue(home.devices[id], key) !== undefined);
        const head = [el("td", {}, id, d.available === false ? el("span", { class: "badge failed" }, " not answering") : null), el("td", {}, d.mode)];
        if (!reported.length) return [el("tr", {}, ...head, el("td", { colspan: 3, class: "muted" }, "no reports yet"))];
        return reported.sort().map(([key, real], i) => {
          const twin = twinValue(home.devices[id], key);
          const same = JSON.stringify(real) === JSON.stringify(twin);
          return el("tr", { class: same ? "" : "diff", dataset: { device: id, key } },
            ...(i === 0 ? head : [el("td", {}), el("td", {})]), el("td", {}, key), el("td", { class: "real" }, show(real)),
            el("td", { class: "twin" }, show(twin)));
        });
      })),
    el("h3", {}, `Divergences (${lab.divergences.length})`),
    lab.divergences.length ? el("table", { class: "grid", id: "lab-divergences" },
      el("tr", {}, ["step", "device", "attribute", "real", "twin", "after s"].map((h) => el("th", {}, h))),
      [...lab.divergences].reverse().map((x) => el("tr", { class: "diff" }, el("td", {}, x.step), el("td", {}, x.device),
        el("td", {}, x.attribute), el("td", {}, show(x.real)), el("td", {}, show(x.twin)), el("td", {}, x.after_s))))
      : el("p", { class: "muted" }, "none flagged"),
    el("h3", {}, "Calls"),
    lab.calls.length ? el("table", { class: "grid", id: "lab-calls" },
      el("tr", {}, ["step", "source", "tool", "arguments", "result"].map((h) => el("th", {}, h))),
      lab.calls.map((c) => el("tr", { class: c.ok ? "" : "failed" }, el("td", {}, c.step), el("td", {}, c.source),
        el("td", {}, c.tool), el("td", {}, brief(c.args)), el("td", {}, c.ok ? brief(c.result) : `✘ ${c.result.error.code}: ${c.result.error.message}`))))
      : el("p", { class: "muted" }, "no calls since this page opened"));
}
