"""Replay a recorded lab session on the twin alone, and report where it diverged.

`replay_session(file, run)` restores the twin home from the run's start snapshot, then walks
the recorded timeline fast-forwarded: before each recorded call or room sample it advances
the home to the call's virtual tick, runs the same tool call on the twin (bound and added
devices are twin devices here, so every call has a twin answer), and compares:

- **steps**: what the agent observed on hardware vs on the twin: `ok`, the error code, and
  the payload (error messages are not compared: they name nodes and servers). Tools whose
  answer is the wall clock (get_current_time, workflow times) are shown, not scored.
- **latency**: per device, command-to-report latency: from the call to the first report of
  that device after it; real (subscription reports, wall seconds) vs twin (cluster-server
  changes during the replayed call, in-process seconds).
- **trajectories**: room states (session samples vs replay) and the bound devices' numeric
  attributes (real reports vs twin changes), overlaid in PNGs.

The divergence score is the share of compared steps whose answers differ.
"""
from __future__ import annotations

import html
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bridge.tools import call_tool, parse_args
from bridge.twin_backend import TwinBackend
from clusters.values import to_json
from hardware.recording import Recording
from scenarios.simuhome.evaluate import agent_session
from twin.clock import TICKS_PER_SECOND
from twin.home import Home

#: Answers that are the wall clock on hardware and virtual time on the twin.
TIME_TOOLS = frozenset({"get_current_time", "schedule_workflow", "get_workflow_status",
                        "get_workflow_list", "cancel_workflow"})
COMMAND_TOOLS = frozenset({"execute_command", "write_attribute"})
STATE_NAMES = ("temperature", "humidity", "illuminance", "pm10")


def _device_of(call: dict[str, Any]) -> str | None:
    try:
        device_id: str | None = getattr(parse_args(call["tool"], call["args"]), "device_id", None)
        return device_id
    except Exception:  # noqa: BLE001 - a malformed call names no device
        return None


def _comparable(result: dict[str, Any]) -> Any:
    if not result.get("ok"):
        return {"ok": False, "code": result.get("error", {}).get("code")}
    return result


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ (first 20)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                out.append(f"{path}.{key}".lstrip("."))
            else:
                out += diff(a[key], b[key], f"{path}.{key}")
        return out[:20]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, f"{path}.{i}")
        return out[:20]
    return [] if a == b else [path.lstrip(".") or "(value)"]


def _stats(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(ordered), "min": ordered[0], "median": statistics.median(ordered),
            "p95": ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))],
            "max": ordered[-1]}


def _short(result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return f"error {result.get('error', {}).get('code')}"
    body = {k: v for k, v in result.items() if k != "ok"}
    text = json.dumps(body, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def replay_session(path: str | Path, run: int | None = None) -> dict[str, Any]:
    """Replay one run of a recording; returns steps, latencies, trajectories and a summary."""
    rec = Recording(path)
    try:
        meta = rec.run(run)
        calls = [c for c in rec.rows("calls", meta["run"]) if c["source"] != "shadow"]
        samples = rec.rows("samples", meta["run"])
        reports = rec.rows("reports", meta["run"])
        events = rec.rows("events", meta["run"])
    finally:
        rec.close()
    devices: dict[str, Any] = meta["devices"] or {}
    home = Home.restore(meta["snapshot"])
    backend = TwinBackend(home)
    session = agent_session()   # as the agent's session answered
    tick0 = meta["tick"]
    twin_reports: list[dict[str, Any]] = []
    clock = {"call_start": 0.0}

    def changed(server: Any, name: str) -> None:
        twin_reports.append({"tick": home.clock.tick, "t": time.perf_counter() - clock["call_start"],
                             "device": server.endpoint.device.id, "cluster": server.name,
                             "attribute": name, "value": to_json(server.get(name))})
    for device in home.devices.values():
        for server in device.servers():
            server.listeners.append(changed)

    timeline = sorted([(c["tick"], 0, i) for i, c in enumerate(calls)]
                      + [(s["tick"], 1, i) for i, s in enumerate(samples)])
    steps: list[dict[str, Any]] = []
    replay_samples: list[dict[str, Any]] = []
    twin_latency: dict[str, list[float]] = {}
    for tick, kind, index in timeline:
        if tick > home.clock.tick:
            home.advance((tick - home.clock.tick) / TICKS_PER_SECOND)
        if kind == 1:
            sample = samples[index]
            try:
                state = backend.room_states(sample["room"])
            except Exception:  # noqa: BLE001 - a room the twin lacks: nothing to overlay
                continue
            replay_samples.append({"tick": home.clock.tick, "room": sample["room"], **state})
            continue
        call = calls[index]
        device = _device_of(call)
        seen = len(twin_reports)
        clock["call_start"] = time.perf_counter()
        result = call_tool(backend, call["tool"], call["args"], session)
        if call["tool"] in COMMAND_TOOLS and device is not None:
            mine = [r for r in twin_reports[seen:] if r["device"] == device]
            if mine:
                twin_latency.setdefault(device, []).append(mine[0]["t"])
        recorded = call["result"]
        scored = call["tool"] not in TIME_TOOLS
        differences = diff(_comparable(recorded), _comparable(result)) if scored else []
        steps.append({"step": call["step"], "tool": call["tool"], "device": device,
                      "kind": (devices.get(device) or {}).get("kind", "twin") if device else "-",
                      "tick": call["tick"], "scored": scored, "diverged": bool(differences),
                      "differences": differences, "hardware": _short(recorded), "twin": _short(result),
                      "hardware_result": recorded, "twin_result": result})

    # Real (and session-twin) command-to-report latency, from the recording.
    real_latency: dict[str, list[float]] = {}
    by_device: dict[str, list[dict[str, Any]]] = {}
    for r in reports:
        by_device.setdefault(r["device"], []).append(r)
    for call in calls:
        device = _device_of(call)
        if call["tool"] not in COMMAND_TOOLS or device is None or not call["result"].get("ok"):
            continue
        kind = (devices.get(device) or {}).get("kind", "twin")
        source = "twin" if kind == "twin" else "real"
        after = [r["wall"] for r in by_device.get(device, []) if r["source"] == source and r["wall"] >= call["wall"]]
        if after:
            real_latency.setdefault(device, []).append(min(after) - call["wall"])
    latency = {d: {"kind": (devices.get(d) or {}).get("kind", "twin"), "session": _stats(real_latency.get(d, [])),
                   "replay": _stats(twin_latency.get(d, []))}
               for d in sorted(real_latency.keys() | twin_latency.keys())}

    scored = [s for s in steps if s["scored"]]
    diverged = [s for s in scored if s["diverged"]]
    per_device: dict[str, dict[str, int]] = {}
    for s in scored:
        entry = per_device.setdefault(s["device"] or "-", {"compared": 0, "diverged": 0})
        entry["compared"] += 1
        entry["diverged"] += int(s["diverged"])
    summary = {
        "recording": str(path), "run": meta["run"], "started": meta["time"],
        "steps": len(steps), "compared_steps": len(scored), "diverged_steps": len(diverged),
        "score": len(diverged) / len(scored) if scored else 0.0,
        "diverged_twin_only": sum(1 for s in diverged if s["kind"] == "twin"),
        "diverged_real": sum(1 for s in diverged if s["kind"] not in ("twin", "-")),
        "per_device": per_device,
        "latency": latency,
        "events": _count([e["kind"] for e in events]),
        "shadow_divergences": [e["detail"] for e in events if e["kind"] == "divergence"],
        "network": meta["network"],
    }
    trajectories = _trajectories(tick0, meta["wall"], samples, replay_samples, reports, twin_reports, devices)
    return {"summary": summary, "steps": steps, "trajectories": trajectories}


def _count(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _trajectories(tick0: int, wall0: float, samples: list[dict[str, Any]], replay_samples: list[dict[str, Any]],
                  reports: list[dict[str, Any]], twin_reports: list[dict[str, Any]],
                  devices: dict[str, Any]) -> dict[str, Any]:
    rooms: dict[str, Any] = {}
    for s in samples:
        room = rooms.setdefault(s["room"], {"session": {v: [] for v in STATE_NAMES},
                                            "replay": {v: [] for v in STATE_NAMES}})
        for v in STATE_NAMES:
            if s[v] is not None:
                room["session"][v].append(((s["tick"] - tick0) / TICKS_PER_SECOND, s[v]))
    for s in replay_samples:
        room = rooms.get(s["room"])
        if room is not None:
            for v in STATE_NAMES:
                room["replay"][v].append(((s["tick"] - tick0) / TICKS_PER_SECOND, s[v]))
    real = {d for d, info in devices.items() if info.get("kind") in ("bound", "couple", "shadow")}
    attrs: dict[str, Any] = {}
    for r in reports:
        if r["device"] in real and r["source"] == "real" and _number(r["value"]) is not None:
            key = f"{r['device']} {r['cluster']}.{r['attribute']}"
            attrs.setdefault(key, {"hardware": [], "twin": []})["hardware"].append(
                (r["wall"] - wall0, _number(r["value"])))
    for r in twin_reports:
        key = f"{r['device']} {r['cluster']}.{r['attribute']}"
        if key in attrs and _number(r["value"]) is not None:
            attrs[key]["twin"].append(((r["tick"] - tick0) / TICKS_PER_SECOND, _number(r["value"])))
    return {"rooms": rooms, "attributes": attrs}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, (int, float)) else None


# ---- the report -------------------------------------------------------------------------

def _plots(result: dict[str, Any], out: Path) -> list[tuple[str, Path]]:
    try:
        import matplotlib
    except ImportError:  # an optional extra: the report says what is missing
        result["summary"]["plots"] = "none: the PNG overlays need matplotlib (pip install -e '.[plots]')"
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    for room, data in sorted(result["trajectories"]["rooms"].items())[:12]:
        fig, axes = plt.subplots(len(STATE_NAMES), 1, figsize=(7, 8), sharex=True)
        for ax, var in zip(axes, STATE_NAMES):
            for label, style in (("session", "-"), ("replay", "--")):
                points = data[label][var]
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], style,
                            label="hardware session" if label == "session" else "twin replay")
            ax.set_ylabel(var)
        axes[0].legend(loc="best", fontsize=8)
        axes[-1].set_xlabel("seconds since the run started")
        fig.suptitle(f"room {room}")
        path = out / f"room-{room}.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        made.append((f"Room {room}", path))
    rooms = result["trajectories"]["rooms"].values()
    end = max((p[0] for room in rooms for points in room["session"].values() for p in points), default=0.0)
    for key, data in sorted(result["trajectories"]["attributes"].items())[:24]:
        fig, ax = plt.subplots(figsize=(7, 3))
        for label, style in (("hardware", "o-"), ("twin", "x--")):
            points = sorted(data[label])
            if points:
                points.append((max(end, points[-1][0]), points[-1][1]))  # the last value holds to the end
                ax.step([p[0] for p in points], [p[1] for p in points], style, where="post", label=label,
                        markevery=list(range(len(points) - 1)))
        ax.set_title(key)
        ax.set_xlabel("seconds since the run started")
        ax.legend(loc="best", fontsize=8)
        path = out / ("device-" + key.replace(" ", "-").replace(".", "-") + ".png")
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)
        made.append((key, path))
    return made


def _fmt(value: Any) -> str:
    return f"{value * 1000:.1f} ms" if isinstance(value, float) else str(value)


def _sections(result: dict[str, Any], images: list[tuple[str, Path]]) -> list[tuple[str, list[str], list[list[str]]]]:
    s = result["summary"]
    sections = [("Summary", ["", ""], [
        ["recording", s["recording"]], ["run", str(s["run"])], ["started (twin time)", s["started"]],
        ["steps compared", str(s["compared_steps"])], ["steps diverged", str(s["diverged_steps"])],
        ["divergence score", f"{s['score']:.3f}"], ["diverged on twin-only devices", str(s["diverged_twin_only"])],
        ["diverged on real devices", str(s["diverged_real"])],
        ["events", ", ".join(f"{k} {v}" for k, v in sorted(s["events"].items())) or "none"],
        ["network", json.dumps(s["network"]) if s["network"] else "as is"]]
        + ([["plots", s["plots"]]] if "plots" in s else []))]
    sections.append(("Per step: hardware session vs twin replay",
                     ["step", "tool", "device", "kind", "hardware", "twin", "diverged"],
                     [[str(x["step"]), x["tool"], x["device"] or "-", x["kind"], x["hardware"], x["twin"],
                       ("yes: " + ", ".join(x["differences"][:3])) if x["diverged"]
                       else ("not scored" if not x["scored"] else "no")] for x in result["steps"]]))
    rows = []
    for device, lat in s["latency"].items():
        for label in ("session", "replay"):
            st = lat[label]
            rows.append([device, lat["kind"], label, str(st["n"])] +
                        [_fmt(st.get(k, "-")) for k in ("min", "median", "p95", "max")])
    sections.append(("Command-to-report latency", ["device", "kind", "measured in", "n", "min", "median",
                                                   "p95", "max"], rows))
    if s["shadow_divergences"]:
        sections.append(("Shadow divergences", ["step", "device", "attribute", "real", "twin", "after s"],
                         [[str(d["step"]), d["device"], d["attribute"], repr(d["real"]), repr(d["twin"]),
                           str(d["after_s"])] for d in s["shadow_divergences"]]))
    sections.append(("Trajectories", [], [[title, path.name] for title, path in images]))
    return sections


def write_report(result: dict[str, Any], out: str | Path, fmt: str = "md") -> list[Path]:
    """report.md or report.html, summary.json and the PNGs in `out`; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    images = _plots(result, out)
    sections = _sections(result, images)
    summary_path = out / "summary.json"
    summary = {**result["summary"], "steps": [{k: v for k, v in s.items() if not k.endswith("_result")}
                                              for s in result["steps"]]}
    summary_path.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    if fmt == "html":
        report = out / "report.html"
        report.write_text(_html(sections))
    else:
        report = out / "report.md"
        report.write_text(_markdown(sections))
    return [report, summary_path, *[p for _, p in images]]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(sections: list[tuple[str, list[str], list[list[str]]]]) -> str:
    lines = ["# Lab session: hardware vs twin", ""]
    for title, header, rows in sections:
        lines += [f"## {title}", ""]
        if title == "Trajectories":
            lines += [f"![{t}]({name})" for t, name in rows] + [""]
            continue
        if header:
            lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def _html(sections: list[tuple[str, list[str], list[list[str]]]]) -> str:
    parts = ["<!doctype html><meta charset='utf-8'><title>Lab session</title>",
             "<style>table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>",
             "<h1>Lab session: hardware vs twin</h1>"]
    for title, header, rows in sections:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if title == "Trajectories":
            parts += [f"<figure><img src='{html.escape(n)}'><figcaption>{html.escape(t)}</figcaption></figure>"
                      for t, n in rows]
            continue
        parts.append("<table>")
        if any(header):
            parts.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows]
        parts.append("</table>")
    return "\n".join(parts)


def session_summary(path: str | Path, run: int | None = None) -> str:
    """Markdown summary of a recording (no replay): runs, counts, events, real latencies."""
    rec = Recording(path)
    try:
        runs = rec.runs()
        meta = rec.run(run)
        counts = rec.counts(meta["run"])
        events = rec.rows("events", meta["run"])
        calls = rec.rows("calls", meta["run"])
        reports = rec.rows("reports", meta["run"])
    finally:
        rec.close()
    lines = [f"# {path}", "", f"runs: {', '.join(str(r['run']) for r in runs)}; showing run {meta['run']} "
             f"(started {meta['time']}, {'ended cleanly' if meta['ended'] else 'no clean end (killed?)'})", "",
             "| table | rows |", "|---|---|"] + [f"| {k} | {v} |" for k, v in counts.items()] + [""]
    lines += ["| device | kind | node |", "|---|---|---|"]
    lines += [f"| {d} | {i.get('kind')} | {i.get('node_id', '')} |" for d, i in sorted((meta["devices"] or {}).items())
              if i.get("kind") != "twin"] + [""]
    notable = [e for e in events if e["kind"] not in ("twin_event", "matter_event", "session_start")]
    lines += ["| wall | event | device | detail |", "|---|---|---|---|"]
    lines += [f"| {time.strftime('%H:%M:%S', time.localtime(e['wall']))} | {e['kind']} | {e['device'] or ''} | "
              f"{_cell(json.dumps(e['detail'], default=str)[:120])} |" for e in notable]
    latency: dict[str, list[float]] = {}
    for call in calls:
        device = _device_of(call)
        if call["tool"] in COMMAND_TOOLS and device and call["result"].get("ok"):
            after = [r["wall"] for r in reports if r["device"] == device and r["source"] == "real"
                     and r["wall"] >= call["wall"]]
            if after:
                latency.setdefault(device, []).append(min(after) - call["wall"])
    lines += ["", "| device | commands | real latency min | median | max |", "|---|---|---|---|---|"]
    for device, values in sorted(latency.items()):
        st = _stats(values)
        lines.append(f"| {device} | {st['n']} | {_fmt(st['min'])} | {_fmt(st['median'])} | {_fmt(st['max'])} |")
    return "\n".join(lines)


__all__ = ["diff", "replay_session", "session_summary", "write_report"]
