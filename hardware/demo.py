"""`twin lab demo`: the whole lab workflow without hardware.

matter.js devices (npm `@matter/main`: a dimmable light, a thermostat, a multi-sensor whose
endpoint 1 is a temperature sensor; hardware/standins/devices.mjs, shipped with the package)
stand in for products, in a
network namespace created here (nothing is advertised outside this machine). The session
runs inside it with a managed python-matter-server: the light plays the default home's
living_room_light, the thermostat its bedroom_ac, the sensor feeds the kitchen's temperature;
a script runs, then the recording is replayed and the report written. Needs root.

matter.js comes from the source tree's `.cache/matterjs` when `scripts/install-test-deps.sh`
put it there; otherwise it is installed with npm on first use into the user's cache directory
($XDG_CACHE_HOME or ~/.cache, then matter-twin/matterjs; about 150 MB), once.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import yaml

from hardware.replay import replay_session, write_report

REPO = Path(__file__).resolve().parent.parent
#: The matter.js release the stand-ins are written for (scripts/install-test-deps.sh installs the same).
MATTERJS_VERSION = "0.17.9"
DEVICES_SCRIPT = Path(__file__).resolve().parent / "standins" / "devices.mjs"
#: kind -> (UDP port, passcode, discriminator)
STAND_INS = {"light": (5541, 20202021, 3840), "thermostat": (5542, 20202022, 2816),
             "sensors": (5543, 20202023, 1792)}


class DemoError(Exception):
    """What the demo needs is missing, or a stand-in did not start (one line)."""


def matterjs_dirs() -> list[Path]:
    """Where matter.js may be installed (node_modules folders), in the order they are tried."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [REPO / ".cache" / "matterjs" / "node_modules", cache / "matter-twin" / "matterjs" / "node_modules"]


def installed_matterjs() -> Path | None:
    """The first node_modules folder that holds matter.js, if any."""
    return next((f for f in matterjs_dirs() if (f / "@matter" / "main").is_dir()), None)


def install_matterjs() -> Path:
    """Install matter.js with npm into the user cache; its node_modules folder."""
    target = matterjs_dirs()[-1]
    if shutil.which("npm") is None:
        raise DemoError("the demo needs matter.js, and npm to install it (Debian: apt-get install nodejs npm)")
    target.parent.mkdir(parents=True, exist_ok=True)
    package = target.parent / "package.json"
    if not package.exists():
        package.write_text('{"private": true}\n')
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", f"@matter/main@{MATTERJS_VERSION}"],
                          cwd=target.parent, capture_output=True, text=True)
    if done.returncode != 0 or not (target / "@matter" / "main").is_dir():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DemoError(f"npm could not install matter.js into {target.parent} ({last})")
    return target


def _check() -> None:
    missing = []
    if shutil.which("node") is None:
        missing.append("node (Debian: apt-get install nodejs npm)")
    if shutil.which("matter-server") is None:
        missing.append("matter-server (pip install 'python-matter-server[server]==7.0.1')")
    if shutil.which("ip") is None:
        missing.append("ip (iproute2)")
    if missing:
        raise DemoError("the demo needs " + " and ".join(missing))


@contextlib.contextmanager
def namespace() -> Iterator[str]:
    """A throw-away network namespace: loopback and a veth pair with fd99::1/2."""
    name = f"lab-demo-{uuid.uuid4().hex[:8]}"

    def run(*args: str) -> None:
        subprocess.run(["ip", "netns", "exec", name, *args], check=True, capture_output=True)
    try:
        subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    except subprocess.CalledProcessError as err:
        raise DemoError(f"cannot create a network namespace ({err.stderr.decode().strip()}); "
                        "the demo needs root") from None
    try:
        run("ip", "link", "set", "lo", "up")
        run("ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1")
        for dev, addr in (("v0", "fd99::1/64"), ("v1", "fd99::2/64")):
            run("ip", "addr", "add", addr, "dev", dev, "nodad")
            run("ip", "link", "set", dev, "up")
        yield name
    finally:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def demo_lab(codes: dict[str, str]) -> dict:
    light = {"device.id": "living_room_light", "endpoint.id": 1}
    return {
        "name": "lab demo (matter.js stand-ins)", "home": "default",
        "controller": {"start": {"storage": "controller", "port": 5580}},
        "timeout": 15,
        "devices": [
            {"bind": "living_room_light", "pairing_code": codes["light"], "endpoint": 1},
            {"bind": "bedroom_ac", "pairing_code": codes["thermostat"], "endpoint": 1},
            {"id": "bench_sensor", "room": "kitchen", "pairing_code": codes["sensors"]},
        ],
        "sensors": [{"room": "kitchen", "state": "temperature", "device": "bench_sensor", "endpoint": 1}],
        "session": {"sample_interval": 0.5, "script": [
            {"tool": "get_room_states", "args": {"room.id": "living_room"}},
            {"tool": "execute_command", "args": {**light, "cluster.id": "OnOff", "command.id": "On", "args": {}}},
            {"wait": 1},
            {"tool": "execute_command", "args": {**light, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                                 "args": {"level": 220, "transitionTime": 0, "optionsMask": 0,
                                                          "optionsOverride": 0}}},
            {"wait": 1},
            {"tool": "get_attribute", "args": {**light, "cluster.id": "LevelControl", "attribute.id": "CurrentLevel"},
             "expect": {"value": 220}},
            {"tool": "get_room_states", "args": {"room.id": "living_room"}},
            {"tool": "write_attribute", "args": {"device.id": "bedroom_ac", "endpoint.id": 1,
                                                 "cluster.id": "Thermostat",
                                                 "attribute.id": "OccupiedCoolingSetpoint", "value": 2400}},
            {"tool": "get_room_states", "args": {"room.id": "kitchen"}},
            {"tool": "execute_command", "args": {"device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff",
                                                 "command.id": "On", "args": {}}},
            {"wait": 1},
            {"tool": "get_room_states", "args": {"room.id": "bedroom"}},
        ]},
    }


def run_demo(folder: Path) -> Iterator[str]:
    """Run the demo in `folder`; yields progress lines."""
    _check()
    modules = installed_matterjs()
    if modules is None:
        yield (f"installing matter.js (npm @matter/main@{MATTERJS_VERSION}, about 150 MB) into "
               f"{matterjs_dirs()[-1].parent}, once")
        modules = install_matterjs()
    folder.mkdir(parents=True, exist_ok=True)
    scripts = folder / "matterjs"
    scripts.mkdir(exist_ok=True)
    if (scripts / "node_modules").is_symlink() or (scripts / "node_modules").exists():
        (scripts / "node_modules").unlink()
    (scripts / "node_modules").symlink_to(modules)
    shutil.copy(DEVICES_SCRIPT, scripts / "devices.mjs")
    os.makedirs("/data", exist_ok=True)
    with namespace() as ns:
        yield f"network namespace {ns} created"
        codes: dict[str, str] = {}
        for kind, (port, passcode, discriminator) in STAND_INS.items():
            env = dict(os.environ, MATTER_STORAGE_PATH=str(folder / f"mjs-{kind}"), MATTER_LOG_LEVEL="warn")
            with open(folder / f"{kind}.log", "w") as log:
                subprocess.Popen(["ip", "netns", "exec", ns, "node", str(scripts / "devices.mjs"), kind, str(port),
                                  str(passcode), str(discriminator)], stdout=log, stderr=subprocess.STDOUT,
                                 env=env, cwd=str(scripts))
        deadline = time.monotonic() + 90
        for kind in STAND_INS:
            while kind not in codes:
                lines = (folder / f"{kind}.log").read_text(errors="replace").splitlines()
                ready = [line for line in lines if line.startswith("ready ")]
                if ready:
                    codes[kind] = ready[-1].split()[2]
                elif time.monotonic() > deadline:
                    raise DemoError(f"matter.js {kind} did not start (see {folder / (kind + '.log')})")
                else:
                    time.sleep(0.2)
            yield f"matter.js {kind} is up, pairing code {codes[kind]}"
        lab_file = folder / "demo-lab.yaml"
        lab_file.write_text(yaml.safe_dump(demo_lab(codes), sort_keys=False))
        # A fresh start each time: the stand-ins are new, so old node ids mean nothing.
        for stale in (folder / "demo-lab.state.json", folder / "controller"):
            if stale.is_dir():
                shutil.rmtree(stale)
            elif stale.exists():
                stale.unlink()
        yield f"wrote {lab_file}; running the session (commissioning takes a few seconds)"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                   COLUMNS="100")
        recording = folder / "demo-lab.session.sqlite"
        # The session runs inside the namespace (where the controller and the stand-ins are);
        # its progress lines come through as they happen.
        session = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "matter_twin.cli", "lab", "run",
                                    str(lab_file), "-r", str(recording)], env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        assert session.stdout is not None
        for line in session.stdout:
            if line.strip():
                yield line.rstrip()
        if session.wait() not in (0, 1):
            raise DemoError(f"the session failed (exit {session.returncode})")
    result = replay_session(recording)
    for path in write_report(result, folder / "report", "md"):
        yield f"wrote {path}"
    s = result["summary"]
    yield (f"replay on the twin alone: {s['compared_steps']} steps compared, {s['diverged_steps']} answered "
           f"differently (twin-only devices: {s['diverged_twin_only']}); real light's command-to-report latency median "
           f"{1000 * s['latency'].get('living_room_light', {}).get('session', {}).get('median', 0):.0f} ms")
    yield (f"done. Next: twin lab report {recording}; open {folder / 'report' / 'report.md'}; "
           f"edit {lab_file} and run it yourself with `twin lab run` inside a namespace that sees your devices")


__all__ = ["DemoError", "demo_lab", "run_demo"]
