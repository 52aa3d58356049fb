"""Print the pinned Python requirements of the Home Assistant integrations the e2e test loads.

Run with the HA venv's python: it reads the installed `homeassistant` package (bootstrap's
always-loaded integrations, the manifests' dependencies and after_dependencies) so the list
follows the HA release instead of being copied by hand. With `--skip-pip`, HA installs nothing
itself: what is printed here must be installed beforehand (scripts/install-home-assistant.sh).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import homeassistant
from homeassistant import bootstrap

#: What the test uses beyond bootstrap's defaults: onboarding, the REST/websocket API, Matter.
EXTRA = {"onboarding", "api", "websocket_api", "http", "auth", "config", "matter", "recorder",
         *bootstrap.CORE_INTEGRATIONS,
         # always set up first: LOGGING_INTEGRATIONS up to 2024.x, LOGGING_AND_HTTP_DEPS_INTEGRATIONS since
         *getattr(bootstrap, "LOGGING_INTEGRATIONS", ()), *getattr(bootstrap, "LOGGING_AND_HTTP_DEPS_INTEGRATIONS", ()),
         # onboarding's core_config step starts these config flows (onboarding/views.py)
         "google_translate", "tts", "met", "radio_browser", "shopping_list"}
#: Pulled in only as after_dependencies of integrations we load, never set up by the test's config.
NOT_LOADED = {"cloud", "hassio", "bluetooth", "usb", "zeroconf", "ssdp", "dhcp", "sentry",
              "mqtt", "mqtt_eventstream", "stream", "camera", "assist_pipeline", "conversation"}


def closure(domains: set[str]) -> dict[str, dict]:
    root = Path(homeassistant.__file__).parent / "components"
    seen: dict[str, dict] = {}
    todo = list(domains)
    while todo:
        domain = todo.pop()
        if domain in seen or domain in NOT_LOADED:
            continue
        manifest_path = root / domain / "manifest.json"
        if not manifest_path.exists():
            continue
        manifest = json.loads(manifest_path.read_text())
        seen[domain] = manifest
        todo += manifest.get("dependencies", []) + manifest.get("after_dependencies", [])
    return seen


def requirements() -> list[str]:
    domains = set(bootstrap.DEFAULT_INTEGRATIONS) | EXTRA
    return sorted({req for m in closure(domains).values() for req in m.get("requirements", [])})


def unmet(reqs: list[str]) -> list[str]:
    """The requirements the venv does not satisfy (missing, or another version)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement
    out = []
    for line in reqs:
        req = Requirement(line)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            out.append(line)
            continue
        if not req.specifier.contains(version, prereleases=True):
            out.append(line)
    return out


def main() -> None:
    """No argument: print every requirement. `--unmet`: only those not installed as pinned
    (exit status 1 when there are any)."""
    reqs = requirements()
    if sys.argv[1:] == ["--unmet"]:
        missing = unmet(reqs)
        sys.stdout.write("".join(r + "\n" for r in missing))
        sys.exit(1 if missing else 0)
    sys.stdout.write("".join(r + "\n" for r in reqs))


if __name__ == "__main__":
    main()
