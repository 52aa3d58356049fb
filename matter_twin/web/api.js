// Talking to the twin: the same HTTP routes agents and `twin` use, and a toast for every error.

export async function call(method, path, body) {
  const response = await fetch(path, {
    method, headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data;
  try { data = await response.json(); } catch { data = { ok: false, error: { code: `HTTP ${response.status}`, message: response.statusText } }; }
  if (data && data.ok === false) toastError(data.error);
  return data;
}

export const tool = (name, args) => call("POST", `/tools/${name}`, args);

export function toastError(error) {
  const accepted = error.accepted && error.accepted.length ? ` — accepted: ${error.accepted.join(", ")}` : "";
  toast(`${error.code}: ${error.message}${accepted}`, "error");
}

export function toast(text, kind = "info") {
  const box = document.getElementById("toasts");
  const item = el("div", { class: `toast ${kind}` }, text);
  box.append(item);
  while (box.children.length > 4) box.firstChild.remove();   // the newest few only
  setTimeout(() => item.remove(), kind === "error" ? 8000 : 3000);
}

// A tiny element builder: el("div", {class: "x", onclick: f}, child, "text", ...).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) node.append(child);
  }
  return node;
}

// "30s", "10m", "2h", "1d", or plain seconds -> seconds (NaN if not understood).
export function parseSpan(text) {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$/i.exec(text);
  if (!match) return NaN;
  return parseFloat(match[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2].toLowerCase()];
}
