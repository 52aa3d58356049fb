"""`twin`: run a simulated Matter home, call its agent tools, generate homes, serve HTTP.

The wall clock is read only here, at the edge (`twin run`, `twin serve --speed`); the home
itself only moves when told to. Bad input (a missing file, JSON that does not parse, a home
file that does not validate) prints one line and exits with code 2; a tool that answers
with an error exits with code 1.
"""
from __future__ import annotations

import errno
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

# Only light modules at the top: each command imports what it uses when it runs, and the
# command groups below are imported only when one of their commands runs (start-up time).
from matter_twin.console import (
    CliError,
    LazyGroup,
    TwinApp,
    check_tcp_port,
    codes_rows,
    fast_forward,
    load_home,
    one_line,
    print_codes,
    print_device_code,
    room_table,
)
from matter_twin.defaults import DEFAULT_EMBEDDED
from matter_twin.extras import require
from twin.node.defaults import DEFAULT_BASE_PORT, DEFAULT_WINDOW_TIMEOUT_S, WINDOW_CHOICES

if TYPE_CHECKING:
    from rich.console import Console


class _Commands(LazyGroup):
    lazy = {"bench": "matter_twin.cli_bench:bench_app", "bridge": "matter_twin.cli_bridge:bridge_app",
            "device": "matter_twin.cli_device:device_app", "lab": "matter_twin.cli_lab:lab_app",
            "calibrate": "matter_twin.cli_calibrate:calibrate"}


app = TwinApp(name="twin", cls=_Commands, add_completion=False, no_args_is_help=True,
           pretty_exceptions_enable=False, rich_markup_mode="markdown",
           help="A Matter-protocol digital twin of a smart home.\n\n"
                "Every simulated device is a Matter node; rooms follow physics on a 0.1 s "
                "virtual clock; agents drive it through the SimuHome tools.\n\n"
                "Examples:\n\n"
                "    twin run --speed 60                    # one virtual minute per second\n\n"
                "    twin run --speed max --duration 3600 --json > hour.json\n\n"
                "    twin tool get_rooms '{}'\n\n"
                "    twin home generate --seed 7 --rooms 4 --devices 12 -o home.yaml\n\n"
                "    twin serve --home home.yaml --port 8080")
home_app = TwinApp(name="home", no_args_is_help=True, rich_markup_mode="markdown",
                   help="Create home files.\n\nExamples:\n\n"
                        "    twin home generate --seed 7 --rooms 4 --devices 12 -o home.yaml\n\n"
                        "    twin run --home home.yaml")
app.optional_values = {"--mqtt": "embedded"}   # `twin run --mqtt [URL]`


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version
        try:
            print(f"twin (matter-twin) {version('matter-twin')}")
        except PackageNotFoundError:   # run from a source tree that pip never installed
            print("twin (matter-twin) not installed: run from a source tree")
        raise typer.Exit()


@app.callback()
def _main(show_version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                            help="Print the version and exit.")) -> None:
    pass

app.add_typer(home_app, name="home")

HomeOption = typer.Option(None, "--home", help="Home file (YAML or JSON). Default: the built-in home.",
                          show_default=False)
BackendOption = typer.Option(None, "--backend", help="A bridge config (YAML): twin devices, Matter "
                             "nodes via python-matter-server, or both. Replaces --home.", show_default=False)
RunsOption = typer.Option(None, "--runs", help="A directory of benchmark runs (`twin bench run --out "
                          "DIR/NAME`) for the live page's runs view.", show_default=False)
SeedOption = typer.Option(None, "--seed", help="Seed of the home's random generator "
                          "(default: the home file's seed, or 0).", show_default=False)
FaultsOption = typer.Option(None, "--faults", help="A faults file (YAML): seeded faults in virtual time "
                            "(offline, latency, loss, failing commands, stuck, sensor bias/drift/noise/stale, "
                            "reboot, commissioning); see docs/faults.md.", show_default=False)


def with_faults(home: Any, faults_file: Path | None) -> Any:
    """Schedule a faults file's faults on `home`; a bad file is one CliError line."""
    from twin.faults import load_fault_file
    from twin.schema import UserFileError
    if faults_file is not None:
        try:
            home.faults.load(load_fault_file(faults_file), str(faults_file))
        except UserFileError as err:
            raise CliError(str(err)) from None
    return home


# ---- twin run --------------------------------------------------------------------------


def _real_time(home: Any, speed: float, end_tick: int | None, view: Callable[[], Any],
               console: Console) -> bool:
    """Runs the home at `speed` until `end_tick` or Ctrl-C; True if Ctrl-C stopped it."""
    import signal

    from rich.live import Live

    from twin.clock import TICKS_PER_SECOND, Pacer
    # Ctrl-C sets a flag instead of raising KeyboardInterrupt: the exception can surface inside
    # a finalizer, where Python only reports it, and the loop then ran on (seen once in CI).
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    pacer = Pacer(speed, time.monotonic(), home.clock.tick)
    try:
        # Transient: `run` prints the final table once afterwards (it used to show twice).
        with Live(view(), console=console, refresh_per_second=4, transient=True) as live:
            while not stop.is_set() and (end_tick is None or home.clock.tick < end_tick):
                target = pacer.target(time.monotonic())
                if end_tick is not None:
                    target = min(target, end_tick)
                if target > home.clock.tick:
                    home.advance((target - home.clock.tick) / TICKS_PER_SECOND)
                    live.update(view())
                # Sleep until the next tick is due, but wake at least 4x a second for the view.
                wake = pacer.wall_time_of(home.clock.tick + 1) - time.monotonic()
                time.sleep(min(max(wake, 0.0), 0.25))
    finally:
        signal.signal(signal.SIGINT, previous)
    return stop.is_set()


@app.command()
def run(home_file: Path | None = HomeOption, seed: int | None = SeedOption,
        speed: str = typer.Option("1", "--speed", help="Virtual seconds per wall second, "
                                  "or `max` to fast-forward."),
        duration: float | None = typer.Option(None, "--duration", help="Virtual seconds to run "
                                                 "(required with `--speed max`). Default: until Ctrl-C.",
                                                 show_default=False),
        as_json: bool = typer.Option(False, "--json", help="Print the final snapshot as JSON on stdout."),
        matter: bool | None = typer.Option(None, "--matter/--no-matter", help="Run every device as a "
                                              "commissionable Matter node (default: on, except under pytest "
                                              "in the machine's own network namespace).", show_default=False),
        storage: Path = typer.Option(Path(".storage"), "--storage", help="Where nodes keep attestation "
                                     "credentials, fabrics and counters (one directory per device)."),
        reset_fabrics: bool = typer.Option(False, "--reset-fabrics", help="Forget every commissioning "
                                           "before starting (the nodes open their windows again)."),
        base_port: int = typer.Option(DEFAULT_BASE_PORT, "--base-port",
                                      help="UDP port of the first node; the others follow."),
        interface: str | None = typer.Option(None, "--interface", help="Advertise on this network "
                                                "interface only (default: all).", show_default=False),
        http_port: int | None = typer.Option(None, "--http", help="Also serve the tool API and the live "
                                                "page on 127.0.0.1:PORT (as `twin serve` does).", show_default=False),
        http_host: str = typer.Option("127.0.0.1", "--http-host", help="Address for --http. Loopback by "
                                      "default; bind elsewhere only on purpose."),
        runs_dir: Path | None = RunsOption,
        mqtt: str | None = typer.Option(None, "--mqtt", metavar="[URL]", show_default=False, help="Publish the home "
                                        "over MQTT and take commands (see docs/live-views.md): mqtt://HOST:PORT or "
                                        "mqtts://...; without a URL an embedded broker (amqtt) listens on "
                                        "--mqtt-listen."),
        mqtt_user: str | None = typer.Option(None, "--mqtt-user", show_default=False, help="MQTT username."),
        mqtt_password: str | None = typer.Option(None, "--mqtt-password", envvar="MQTT_PASSWORD", show_default=False,
                                                 help="MQTT password (or the MQTT_PASSWORD environment variable)."),
        mqtt_ca: Path | None = typer.Option(None, "--mqtt-ca", show_default=False, help="CA certificate(s) for "
                                            "TLS (implies TLS)."),
        mqtt_cert: Path | None = typer.Option(None, "--mqtt-cert", show_default=False, help="Client certificate "
                                              "for TLS."),
        mqtt_key: Path | None = typer.Option(None, "--mqtt-key", show_default=False, help="Its private key."),
        mqtt_insecure: bool = typer.Option(False, "--mqtt-insecure", help="TLS without checking the broker's "
                                           "certificate (tests only)."),
        mqtt_prefix: str | None = typer.Option(None, "--mqtt-prefix", show_default=False, help="Topic prefix "
                                               "(default: matter-twin/HOME-NAME, the home name as a slug)."),
        mqtt_sample: float = typer.Option(1.0, "--mqtt-sample", help="Seconds between samples of values that move "
                                          "every tick (room values, levels mid-transition)."),
        mqtt_listen: str = typer.Option(DEFAULT_EMBEDDED, "--mqtt-listen", help="Where the embedded broker listens "
                                        "(--mqtt without a URL)."),
        mqtt_retained_commands: bool = typer.Option(False, "--mqtt-retained-commands", help="Run commands the "
                                                    "broker delivers as retained (by default they are answered "
                                                    "with an error: they would run again at every start)."),
        aggregator: bool = typer.Option(False, "--aggregator", "--as-bridge", help="Serve the whole home as "
                                        "ONE Matter Bridge node (an Aggregator plus a bridged endpoint per "
                                        "device and room sensor): one commissioning adds everything."),
        open_windows: str = typer.Option("all", "--open-windows", help="Whose commissioning windows open at "
                                         "start: `all` (every node without a fabric), `none`, or ids separated "
                                         "by commas. Windows whose manual codes would find each other stay "
                                         "closed (at most 16 open) until `twin pair DEVICE`. `all-qr`: every "
                                         "window, for QR-code pairing (labs); ambiguous manual codes show as "
                                         "`QR only`."),
        window_timeout: int = typer.Option(DEFAULT_WINDOW_TIMEOUT_S, "--window-timeout",
                                           help="Seconds a commissioning window stays open (spec: 180..900)."),
        faults_file: Path | None = FaultsOption,
) -> None:
    """Run the home: rooms and devices evolve on the virtual clock.

    Every device is a Matter node that a controller (Home Assistant, chip-tool) commissions
    with the pairing code printed at start (also `twin codes`, and `GET /codes` with `--http`).
    Like a product out of the box, a node opens its commissioning window at start for
    `--window-timeout` seconds (15 min); `twin pair DEVICE --http PORT` opens it again later.
    Every manual code printed reaches its own node; QR payloads always do.
    Fabrics survive restarts in `--storage`. The credentials are development ones (test PAA).

    At `--speed 1` virtual time follows the wall clock; `--speed 60` runs a virtual minute
    per wall second; `--speed max` fast-forwards `--duration` seconds as fast as the machine
    can. A live table shows each room's temperature, humidity, illuminance and PM10.
    Ctrl-C stops cleanly and still prints the result.

    Examples:

        twin run                                      # real time, until Ctrl-C

        twin run --home home.yaml --speed 10 --duration 600

        twin run --speed max --duration 3600 --json > after_an_hour.json

        twin run --storage ~/twin-fabrics --http 8080   # nodes plus the tool API

        twin run --aggregator                         # the whole home as one Matter bridge node

        twin run --http 8080 --open-windows none       # no windows; later: twin pair kitchen_light --http 8080

        twin run --http 8080 --runs runs/              # live page at http://127.0.0.1:8080/

        twin run --mqtt                                # MQTT through an embedded broker on 127.0.0.1:1883

        twin run --mqtt mqtts://broker.lan:8883 --mqtt-user twin --mqtt-ca ca.pem
        twin run --faults faults.yaml --http 8080      # scheduled faults; more live: POST /faults
    """
    from twin.clock import TICKS_PER_SECOND
    if speed.strip().lower() == "max":
        factor = None
    else:
        try:
            factor = float(speed)
        except ValueError:
            raise CliError(f"--speed {speed!r} is not a number or 'max'") from None
        if not factor > 0 or factor == float("inf"):
            raise CliError(f"--speed {speed!r} must be a positive number or 'max'")
    if duration is not None and not duration >= 0:
        raise CliError(f"--duration {duration} must be >= 0 seconds")
    if factor is None and duration is None:
        raise CliError("--speed max needs --duration SECONDS (fast-forwarding forever never ends)")
    if matter and factor is None:
        raise CliError("--matter needs a real-time run (--speed N); --speed max only fast-forwards")
    if matter is None and factor is not None:
        from matter_twin import cli_run  # the runtime: only for runs that may serve nodes
        matter = cli_run.matter_default()[0]
    with_nodes = factor is not None and bool(matter)
    if http_port is not None and not 0 < http_port < 65536:
        raise CliError(f"--http {http_port} is not a TCP port")
    if not 180 <= window_timeout <= 900:
        raise CliError(f"--window-timeout {window_timeout}: the spec allows 180..900 seconds")
    if http_port is not None and factor is not None:
        check_tcp_port(http_host, http_port, "--http")
    mqtt_settings = None
    if mqtt is not None:
        require("mqtt", "--mqtt")
        from matter_twin.mqtt import MqttSettings
        if factor is None:
            raise CliError("--mqtt needs a real-time run (--speed N); --speed max only fast-forwards")
        if not 0.1 <= mqtt_sample <= 3600:
            raise CliError(f"--mqtt-sample {mqtt_sample}: expected 0.1..3600 seconds")
        mqtt_settings = MqttSettings(url=None if mqtt == "embedded" else mqtt, username=mqtt_user,
                                     password=mqtt_password, ca_file=mqtt_ca, cert_file=mqtt_cert, key_file=mqtt_key,
                                     insecure=mqtt_insecure, prefix=mqtt_prefix, sample_s=mqtt_sample,
                                     listen=mqtt_listen, retained_commands=mqtt_retained_commands)
        try:
            mqtt_settings.endpoint()
        except ValueError as err:
            raise CliError(str(err)) from None
    home = with_faults(load_home(home_file, seed), faults_file)
    start_tick = home.clock.tick
    end_tick = None if duration is None else start_tick + round(duration * TICKS_PER_SECOND)
    from rich.console import Console

    from matter_twin.console import err_console
    interrupted = False
    try:
        if factor is None:
            fast_forward(home, end_tick - start_tick)
        elif with_nodes or http_port is not None or mqtt_settings is not None:
            from matter_twin import cli_run
            try:
                interrupted = cli_run.run(home, factor, end_tick, err_console, matter=with_nodes, storage=storage,
                                           reset_fabrics=reset_fabrics, base_port=base_port,
                                           interface=interface, http_port=http_port, as_bridge=aggregator,
                                           open_windows=_window_choice(open_windows),
                                           window_timeout_s=window_timeout, http_host=http_host,
                                           runs_dir=runs_dir, home_file=home_file, mqtt=mqtt_settings)
            except (OSError, ValueError) as err:  # port in use, unknown interface, foreign storage
                if isinstance(err, OSError) and err.errno == errno.EADDRINUSE and str(err.strerror).startswith("UDP"):
                    raise CliError(f"{err.strerror}: another program (or another `twin run`) has it; run the nodes "
                                   f"on other ports with --base-port PORT (they take PORT, PORT+1, ...)") from None
                raise CliError(str(err)) from None
        else:
            print(f"running {home.name!r}: {len(home.rooms)} rooms, {len(home.devices)} devices "
                  f"at speed {factor:g} from {home.now}; Ctrl-C to stop", file=sys.stderr, flush=True)
            interrupted = _real_time(home, factor, end_tick, lambda: room_table(home, speed), err_console)
    except KeyboardInterrupt:
        interrupted = True
    if as_json:
        print(json.dumps(home.snapshot(), indent=2, ensure_ascii=False))
    else:
        Console().print(room_table(home, speed))
    if interrupted:
        err_console.print(f"interrupted at tick {home.clock.tick}")


def _window_choice(text: str) -> str | list[str]:
    choice = text.strip()
    return choice if choice in WINDOW_CHOICES else [n.strip() for n in choice.split(",") if n.strip()]


# ---- twin codes ------------------------------------------------------------------------

@app.command()
def codes(device: str | None = typer.Argument(None, help="Only this node, with its QR code drawn.",
                                                 show_default=False),
          home_file: Path | None = HomeOption, seed: int | None = SeedOption,
          as_json: bool = typer.Option(False, "--json", help="Print the codes as JSON."),
          aggregator: bool = typer.Option(False, "--aggregator", help="The codes of the one bridge node "
                                          "`twin run --aggregator` serves (also: `twin codes @bridge`).")) -> None:
    """Print each node's Matter pairing codes: the 11-digit manual code and the `MT:` QR payload.

    They follow from the home's seed and the device id, so they are the same on every run
    (`twin run` prints them too). With DEVICE, one node's codes and a QR code to scan.
    A code works while that node's commissioning window is open (`twin run` opens them at
    start; `twin pair DEVICE` later). Give one to a controller in development mode, which
    must trust the public test PAA (the twin's credentials are development ones).

    Examples:

        twin codes

        twin codes kitchen_light                 # one node, with a QR code to scan

        twin codes --home home.yaml --json

        chip-tool pairing code 1 34970112332 --paa-trust-store-path PAA_DIR
    """
    home = load_home(home_file, seed)
    aggregator = aggregator or device == "@bridge"
    rows = codes_rows(home, aggregator=aggregator)
    if device is not None:
        rows = [r for r in rows if r["device"] == device]
        if not rows:
            raise CliError(f"no node {device!r}; accepted: {', '.join(r['device'] for r in codes_rows(home))}, "
                           "@bridge (the node of `twin run --aggregator`)")
    from rich.console import Console
    if as_json:
        print(json.dumps(rows[0] if device is not None else rows, indent=2, ensure_ascii=False))
    elif device is not None:
        print_device_code(Console(), rows[0])
    else:
        print_codes(Console(), rows)


# ---- twin pair -------------------------------------------------------------------------

@app.command()
def pair(device: str = typer.Argument(..., help="The node whose window to open (a device id, or "
                                      "sensors@ROOM)."),
         http_port: int = typer.Option(..., "--http", help="The `--http PORT` of the running `twin run`."),
         host: str = typer.Option("127.0.0.1", "--host", help="Where that twin serves HTTP."),
         timeout: int | None = typer.Option(None, "--timeout", show_default=False,
                                               help="Seconds the window stays open (spec: 180..900; default: "
                                               "the twin's --window-timeout)."),
         as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON.")) -> None:
    """Open a node's commissioning window on a running twin, as a button press on a product does.

    The twin must run with `--http PORT`; this calls its `POST /pair/DEVICE`. The node then
    takes its own codes (printed, with a QR code) for `--timeout` seconds. Any other open
    window whose manual code shares this node's short discriminator closes, so the manual
    code reaches this node and no other.

    Examples:

        twin run --http 8080                     # in one terminal

        twin pair living_room_tv --http 8080     # in another; then pair it in Home Assistant

        twin pair sensors@kitchen --http 8080 --timeout 300
    """
    import urllib.error
    import urllib.parse
    import urllib.request
    if not 0 < http_port < 65536:
        raise CliError(f"--http {http_port} is not a TCP port")
    if timeout is not None and not 180 <= timeout <= 900:
        raise CliError(f"--timeout {timeout}: the spec allows 180..900 seconds")
    url = f"http://{host}:{http_port}/pair/{urllib.parse.quote(device, safe='@')}"
    body = json.dumps({} if timeout is None else {"timeout_s": timeout}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as err:
        try:
            answer = json.loads(err.read())
        except ValueError:
            answer = {"error": {"message": f"HTTP {err.code} from {url}"}}
        if err.code == 404 and answer.get("detail") == "Not Found":
            raise CliError(f"{host}:{http_port} answers HTTP but has no /pair: is it `twin run --http`?") from None
        raise CliError(answer.get("error", {}).get("message") or f"HTTP {err.code} from {url}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise CliError(f"no twin answers on {host}:{http_port} ({reason}); start one with "
                       f"`twin run --http {http_port}`") from None
    if as_json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    from matter_twin.console import err_console
    console = Console()
    print_device_code(console, answer["pairing"])
    for other in answer["pairing"].get("closed", []):
        err_console.print(f"closed the window of {other}: its manual code shares this one's short discriminator "
                          f"(`twin pair {other} --http {http_port}` opens it again)", highlight=False)


# ---- twin tool -------------------------------------------------------------------------

@app.command()
def tool(name: str = typer.Argument(..., help="Tool name, e.g. get_room_devices."),
         args: str = typer.Argument("{}", help="The tool's arguments as a JSON object."),
         home_file: Path | None = HomeOption, seed: int | None = SeedOption,
         backend_config: Path | None = BackendOption,
         advance: float = typer.Option(0.0, "--advance", help="Let this many virtual seconds pass "
                                       "before the call (the home starts fresh on every run).")) -> None:
    """Call one SimuHome tool on a fresh home and print its JSON result.

    Arguments use the paper's dotted names (`device.id`, `cluster.id`, ...); underscore
    forms work too. Clusters, attributes and commands may be spec names or numeric ids.
    Exit code 0 on success, 1 if the tool answered with an error (the JSON result says
    why and what is accepted), 2 on bad input.

    Examples:

        twin tool get_rooms '{}'

        twin tool get_room_states '{"room.id": "living_room"}' --advance 600

        twin tool get_cluster_doc '{"query": "fan speed", "top_k": 2}'
    """
    from bridge.tools import TOOL_NAMES, Session, call_tool
    from bridge.twin_backend import TwinBackend
    from twin.clock import TICKS_PER_SECOND
    if name not in TOOL_NAMES:
        raise CliError(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")
    try:
        parsed = json.loads(args)
    except ValueError as err:
        raise CliError(f"arguments are not JSON ({err}); example: '{{\"room.id\": \"kitchen\"}}'") from None
    if not isinstance(parsed, dict):
        raise CliError("arguments must be a JSON object, e.g. '{}'")
    if not advance >= 0:
        raise CliError(f"--advance {advance} must be >= 0 seconds")
    if backend_config is not None:  # a bridge config: twin devices, Matter nodes or both
        from matter_twin import cli_bridge
        result = cli_bridge.run_tool(backend_config, name, parsed)
    else:
        home = load_home(home_file, seed)
        if advance:
            fast_forward(home, round(advance * TICKS_PER_SECOND))
        result = call_tool(TwinBackend(home), name, parsed, Session())
    print(json.dumps(result, indent=2, ensure_ascii=False))
    if not result["ok"]:
        one_line(f"{result['error']['code']}: {result['error']['message']}")
        raise typer.Exit(1)


@app.command("tools")
def list_tools(as_json: bool = typer.Option(False, "--json", help="Print the OpenAI function schemas.")) -> None:
    """List the SimuHome tools and their arguments.

    Examples:

        twin tools

        twin tools --json > tools.json
    """
    from rich.console import Console
    from rich.table import Table

    from bridge.tools import TOOL_SCHEMAS
    if as_json:
        print(json.dumps(TOOL_SCHEMAS, indent=2, ensure_ascii=False))
        return
    table = Table(title="SimuHome tools")
    table.add_column("Tool")
    table.add_column("Arguments (* required)")
    table.add_column("Description")
    for schema in TOOL_SCHEMAS:
        fn = schema["function"]
        params = fn["parameters"]
        names = [p + ("*" if p in params["required"] else "") for p in params["properties"]]
        table.add_row(fn["name"], ", ".join(names) or "-", fn["description"])
    Console().print(table)


# ---- twin home generate ----------------------------------------------------------------

@home_app.command("generate")
def home_generate(seed: int = typer.Option(0, "--seed", help="Seed: same seed, same home."),
                  rooms: int | None = typer.Option(None, "--rooms", help="Number of rooms (default 4)."),
                  devices: int | None = typer.Option(None, "--devices",
                                                     help="Number of devices in all (default 12)."),
                  homemaker: bool = typer.Option(False, "--homemaker", help=(
                      "HomeMaker: floors, nested rooms, devices of every type by room kind, state "
                      "from the weather and the hour (default: one floor of SimuHome's 17 types).")),
                  tier: str | None = typer.Option(None, "--tier", help=(
                      "A HomeMaker home of SMH-Bench's size: simple (~5.5 rooms, 5.5 devices), "
                      "medium (~10.5, 35) or complex (31, 135).")),
                  output: Path | None = typer.Option(None, "-o", "--output",
                                                        help="Write the YAML here (default: stdout).")) -> None:
    """Generate a random but reproducible home file.

    Examples:

        twin home generate --seed 7 --rooms 4 --devices 12 -o home.yaml

        twin home generate --seed 7 --homemaker --rooms 12 --devices 60 -o big.yaml

        twin home generate --seed 7 --tier complex -o complex.yaml

        twin run --home home.yaml
    """
    from twin import generator
    from twin.schema import to_yaml
    if (rooms is not None and rooms < 1) or (devices is not None and devices < 0):
        raise CliError("--rooms must be >= 1 and --devices >= 0")
    try:
        if homemaker or tier is not None:
            spec = generator.make_home(seed, rooms if rooms is not None or tier else 4,
                                       devices if devices is not None or tier else 12, tier=tier)
        else:
            spec = generator.generate_home(seed, 4 if rooms is None else rooms, 12 if devices is None else devices)
    except ValueError as err:
        raise CliError(str(err)) from None
    text = to_yaml(spec)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text)
    except OSError as err:
        raise CliError(f"{output}: {err.strerror or err}") from None
    from matter_twin.console import err_console
    err_console.print(f"wrote {output}: {rooms} rooms, {devices} devices, seed {seed}")


# ---- twin serve ------------------------------------------------------------------------

@app.command()
def serve(home_file: Path | None = HomeOption, seed: int | None = SeedOption,
          backend_config: Path | None = BackendOption,
          host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Loopback by default; "
                                   "bind elsewhere only on purpose."),
          port: int = typer.Option(8080, "--port", help="TCP port."),
          speed: float = typer.Option(1.0, "--speed", help="Advance virtual time at this factor "
                                      "in the background (default: real time, so a first look at the page "
                                      "sees the home move); 0 = paused, only POST /clock/advance (or the "
                                      "live page) moves it."),
          runs_dir: Path | None = RunsOption, faults_file: Path | None = FaultsOption,
          home_tools: bool = typer.Option(False, "--home-tools", help=(
              "Also serve the home tools beyond SimuHome's 17: query_home and the automation "
              "tools (create/list/enable/disable/delete_automation); docs/home.md."))) -> None:
    """Serve the tools over HTTP (FastAPI; OpenAPI docs at /docs) and the live page (at /).

    Each tool is `POST /tools/<name>` with its arguments as the JSON body; `GET /tools`
    lists the schemas; `GET /clock` and `POST /clock/advance {"seconds": N}` read and move
    virtual time. The live page (rooms, devices, clock, pairing codes, workflows, benchmark
    runs, edit mode) is at `/` for twin homes.

    Examples:

        twin serve --home home.yaml --seed 3 --port 8080

        twin serve --speed 60 --runs runs/              # then open http://127.0.0.1:8080/

        curl -s -X POST localhost:8080/tools/get_rooms -d '{}'

        curl -s -X POST localhost:8080/clock/advance -d '{"seconds": 600}'

        twin serve --home-tools    # then POST /tools/create_automation, /tools/query_home
    """
    from bridge.home_tools import HOME_TOOLS
    from bridge.tools import Session
    from matter_twin import cli_bridge
    from matter_twin.http import create_app
    from matter_twin.http_edge import run_server
    from twin.clock import Pace
    if speed < 0:
        raise CliError(f"--speed {speed} must be >= 0")
    if not 0 < port < 65536:
        raise CliError(f"--port {port} is not a TCP port")
    check_tcp_port(host, port, "--port")
    if backend_config is not None:  # real time: the bridge's devices live on the wall clock
        return cli_bridge.serve(backend_config, host, port)
    home = with_faults(load_home(home_file, seed), faults_file)
    pace = Pace(speed or 1.0, paused=speed == 0)
    session = Session(tools=HOME_TOOLS) if home_tools else None
    app_ = create_app(home, session, pace=pace, runs_dir=runs_dir, home_file=home_file)
    stop = threading.Event()
    threading.Thread(target=_drive_clock, args=(home, pace, app_.state.lock, stop),
                     daemon=True, name="twin-clock").start()
    try:
        # Open live pages keep a stream open: give them a second to go at Ctrl-C.
        run_server(app_, host, port, log_level="info", timeout_graceful_shutdown=1)
    finally:
        stop.set()


def _drive_clock(home: Any, pace: Any, lock: threading.Lock, stop: threading.Event) -> None:
    """Background pacing for `twin serve`: steps the home under the app's lock, at the pace
    the live page sets (paused: the clock moves only by POST /clock/advance)."""
    from twin.clock import TICKS_PER_SECOND, Pacer
    version = pace.version
    pacer = Pacer(pace.speed, time.monotonic(), home.clock.tick)
    while not stop.wait(0.1):
        now = time.monotonic()
        with lock:
            target = pacer.target(now)
            if pace.paused or pace.version != version or home.clock.tick > target:
                version = pace.version   # re-anchor from here (paused, new speed, or advanced)
                pacer = Pacer(pace.speed, now, home.clock.tick)
            elif target > home.clock.tick:
                home.advance((target - home.clock.tick) / TICKS_PER_SECOND)


# ---- twin mcp --------------------------------------------------------------------------

@app.command()
def mcp(backend_config: Path | None = BackendOption, home_file: Path | None = HomeOption,
        seed: int | None = SeedOption,
        http: int | None = typer.Option(None, "--http", help="Serve streamable HTTP on this port "
                                           "(endpoint /mcp) instead of stdio.", show_default=False),
        host: str = typer.Option("127.0.0.1", "--host", help="Address for --http. Loopback by default."),
        home_tools: bool = typer.Option(False, "--home-tools", help=(
            "Also serve query_home and the automation tools (docs/home.md)."))) -> None:
    """Serve the tools as an MCP server (stdio, or streamable HTTP with --http).

    Every tool is listed with its JSON schema. Without --backend the server drives a fresh
    twin home in process; with --backend it drives the bridge config's devices.

    Examples:

        twin mcp                                       # stdio, the built-in home

        twin mcp --backend bridge.yaml --http 8765     # http://127.0.0.1:8765/mcp
    """
    from bridge.home_tools import HOME_TOOLS
    from bridge.tools import Session
    from bridge.twin_backend import TwinBackend
    from matter_twin import cli_bridge
    if http is not None and not 0 < http < 65536:
        raise CliError(f"--http {http} is not a TCP port")
    if http is not None:
        check_tcp_port(host, http, "--http")
    if backend_config is not None:
        backend = cli_bridge.open_backend(backend_config)
    else:
        backend = TwinBackend(load_home(home_file, seed))
    cli_bridge.mcp(backend, http, host, Session(tools=HOME_TOOLS) if home_tools else None)


def main() -> None:
    """The `twin` command: the Matter data model is built class by class as used (start-up time)."""
    import gc

    from clusters.lazy_objects import install
    install()
    try:
        app()
    finally:
        # At exit the interpreter's last collection walks every object in a cycle (the data
        # model's classes, the home): a fifth of a short command's CPU. Frozen, they are left
        # to the OS, as Python allows for what is alive at exit; atexit handlers still run.
        gc.freeze()


if __name__ == "__main__":
    main()
