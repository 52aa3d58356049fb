"""`twin`: run a simulated Matter home, call its agent tools, generate homes, serve HTTP.

The wall clock is read only here, at the edge (`twin run`, `twin serve --speed`); the home
itself only moves when told to. Bad input (a missing file, JSON that does not parse, a home
file that does not validate) prints one line and exits with code 2; a tool that answers
with an error exits with code 1.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

import click
import typer
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from matter_twin.cli_bench import bench_app

TICKS_PER_SECOND = 10
FAST_FORWARD_CHUNK = 3000  # ticks per progress update (five virtual minutes)

err_console = Console(stderr=True)


class CliError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


# Typer may vendor its own click; catch usage errors from whichever one parses the line.
_CLICK_ERRORS = tuple({click.ClickException,
                       *(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")})
_ABORTS = tuple({click.Abort, typer.Abort, KeyboardInterrupt})


class _App(typer.Typer):
    """Typer, but every usage error and bad input is one line on stderr, never a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", False)
        try:
            code = super().__call__(*args, **kwargs)
        except CliError as err:
            _one_line(str(err))
            sys.exit(2)
        except _CLICK_ERRORS as err:
            if err.format_message():  # empty after no_args_is_help printed the help
                _one_line(err.format_message())
            sys.exit(err.exit_code)
        except _ABORTS:
            _one_line("interrupted")
            sys.exit(130)
        if isinstance(code, int):
            sys.exit(code)
        return code


def _one_line(message: str) -> None:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)



app = _App(name="twin", add_completion=False, no_args_is_help=True,
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
home_app = _App(name="home", no_args_is_help=True, help="Create and inspect home files.")
app.add_typer(home_app, name="home")
app.add_typer(bench_app, name="bench")
from matter_twin.cli_bridge import bridge_app  # noqa: E402  (the bridge's own sub-commands)
app.add_typer(bridge_app, name="bridge")

HomeOption = typer.Option(None, "--home", help="Home file (YAML or JSON). Default: the built-in home.",
                          show_default=False)
BackendOption = typer.Option(None, "--backend", help="A bridge config (YAML): twin devices, Matter "
                             "nodes via python-matter-server, or both. Replaces --home.", show_default=False)
SeedOption = typer.Option(None, "--seed", help="Seed of the home's random generator "
                          "(default: the home file's seed, or 0).", show_default=False)


def load_home(home_file: Optional[Path], seed: Optional[int]) -> Any:
    """The home to run: from a file, or the built-in default. Bad files raise CliError."""
    from twin.home import Home, HomeFileError
    if home_file is not None and not home_file.exists():
        raise CliError(f"{home_file}: no such file")
    try:
        if home_file is None:
            return Home.default(seed=0 if seed is None else seed)
        return Home.load(home_file, seed=seed)
    except HomeFileError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{home_file}: {err}") from None


# ---- twin run --------------------------------------------------------------------------


class RunExtension(Protocol):
    """Something that runs alongside `twin run`: the extension point for Matter nodes.

    A factory in `RUN_EXTENSIONS` is called with the home before the run starts. The
    extension's `start(console)` may bring devices up (for example as Matter nodes inside a
    network namespace) and print pairing codes; `panel()` adds a renderable below the room
    table on each refresh (None for nothing); `stop()` runs on the way out, also on Ctrl-C.
    All three are called on the runner's thread, between clock steps.
    """

    def start(self, console: Console) -> None: ...

    def panel(self) -> RenderableType | None: ...

    def stop(self) -> None: ...


RUN_EXTENSIONS: list[Callable[[Any], RunExtension]] = []


def room_table(home: Any, speed: str = "") -> Table:
    title = f"{home.name} — {home.clock.format() if hasattr(home.clock, 'format') else home.now}"
    table = Table(title=title, caption=f"tick {home.clock.tick}" + (f" · speed {speed}" if speed else ""))
    table.add_column("Room")
    for column in ("Temperature °C", "Humidity %RH", "Illuminance lux", "PM10 µg/m³", "Devices"):
        table.add_column(column, justify="right")
    for room_id, room in home.rooms.items():
        table.add_row(room.name or room_id, f"{room.temperature:.2f}", f"{room.humidity:.2f}",
                      f"{room.illuminance:.0f}", f"{room.pm10:.1f}", str(len(home.devices_in(room_id))))
    return table


def _view(home: Any, speed: str, extensions: list[RunExtension]) -> RenderableType:
    parts: list[RenderableType] = [room_table(home, speed)]
    parts.extend(p for p in (e.panel() for e in extensions) if p is not None)
    return Group(*parts)


def fast_forward(home: Any, ticks: int, console: Console = err_console) -> None:
    """Step `ticks` ticks as fast as possible, with a progress bar on a terminal."""
    columns = (TextColumn("fast-forward"), BarColumn(), TextColumn("{task.fields[time]}"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal or ticks < 10 * FAST_FORWARD_CHUNK) as progress:
        task = progress.add_task("ff", total=ticks, time="")
        done = 0
        while done < ticks:
            n = min(FAST_FORWARD_CHUNK, ticks - done)
            home.advance(n / TICKS_PER_SECOND)  # event-driven: jumps between events
            done += n
            progress.update(task, completed=done, time=str(home.now))


def _real_time(home: Any, speed: float, end_tick: int | None, view: Callable[[], RenderableType],
               console: Console) -> None:
    from twin.clock import Pacer
    pacer = Pacer(speed, time.monotonic(), home.clock.tick)
    with Live(view(), console=console, refresh_per_second=4, transient=not console.is_terminal) as live:
        while end_tick is None or home.clock.tick < end_tick:
            target = pacer.target(time.monotonic())
            if end_tick is not None:
                target = min(target, end_tick)
            if target > home.clock.tick:
                home.advance((target - home.clock.tick) / TICKS_PER_SECOND)
                live.update(view())
            # Sleep until the next tick is due, but wake at least 4x a second for the view.
            wake = pacer.wall_time_of(home.clock.tick + 1) - time.monotonic()
            time.sleep(min(max(wake, 0.0), 0.25))


@app.command()
def run(home_file: Optional[Path] = HomeOption, seed: Optional[int] = SeedOption,
        speed: str = typer.Option("1", "--speed", help="Virtual seconds per wall second, "
                                  "or `max` to fast-forward."),
        duration: Optional[float] = typer.Option(None, "--duration", help="Virtual seconds to run "
                                                 "(required with `--speed max`). Default: until Ctrl-C.",
                                                 show_default=False),
        as_json: bool = typer.Option(False, "--json", help="Print the final snapshot as JSON on stdout."),
        matter: Optional[bool] = typer.Option(None, "--matter/--no-matter", help="Run every device as a "
                                              "commissionable Matter node (default: on, except under pytest "
                                              "in the machine's own network namespace).", show_default=False),
        storage: Path = typer.Option(Path(".storage"), "--storage", help="Where nodes keep attestation "
                                     "credentials, fabrics and counters (one directory per device)."),
        reset_fabrics: bool = typer.Option(False, "--reset-fabrics", help="Forget every commissioning "
                                           "before starting (the nodes open their windows again)."),
        base_port: int = typer.Option(5540, "--base-port", help="UDP port of the first node; the others follow."),
        interface: Optional[str] = typer.Option(None, "--interface", help="Advertise on this network "
                                                "interface only (default: all).", show_default=False),
        http_port: Optional[int] = typer.Option(None, "--http", help="Also serve the tool API on "
                                                "127.0.0.1:PORT (as `twin serve` does).", show_default=False),
        as_bridge: bool = typer.Option(False, "--as-bridge", help="Serve the whole home as ONE Matter Bridge "
                                       "node (Aggregator plus a bridged endpoint per device and room "
                                       "sensor): one commissioning adds everything.")) -> None:
    """Run the home: rooms and devices evolve on the virtual clock.

    Every device is a Matter node that a controller (Home Assistant, chip-tool) commissions
    with the pairing code printed at start (also `twin codes`, and `GET /codes` with `--http`).
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

        twin run --as-bridge                          # the whole home as one Matter bridge
    """
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
    from matter_twin import nodes as cli_node
    if matter and factor is None:
        raise CliError("--matter needs a real-time run (--speed N); --speed max only fast-forwards")
    nodes = factor is not None and (matter if matter is not None else cli_node.matter_default()[0])
    if http_port is not None and not 0 < http_port < 65536:
        raise CliError(f"--http {http_port} is not a TCP port")
    home = load_home(home_file, seed)
    start_tick = home.clock.tick
    end_tick = None if duration is None else start_tick + round(duration * TICKS_PER_SECOND)
    extensions = [factory(home) for factory in RUN_EXTENSIONS]
    interrupted = False
    started: list[RunExtension] = []
    try:
        for ext in extensions:
            ext.start(err_console)
            started.append(ext)
        if factor is None:
            fast_forward(home, end_tick - start_tick)
        elif nodes or http_port is not None:
            try:
                interrupted = cli_node.run(home, factor, end_tick, err_console, matter=nodes, storage=storage,
                                           reset_fabrics=reset_fabrics, base_port=base_port,
                                           interface=interface, http_port=http_port, as_bridge=as_bridge)
            except (OSError, ValueError) as err:  # port in use, unknown interface, foreign storage
                raise CliError(str(err)) from None
        else:
            print(f"running {home.name!r}: {len(home.rooms)} rooms, {len(home.devices)} devices "
                  f"at speed {factor:g} from {home.now}; Ctrl-C to stop", file=sys.stderr, flush=True)
            _real_time(home, factor, end_tick, lambda: _view(home, speed, extensions), err_console)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for ext in reversed(started):
            ext.stop()
    if as_json:
        print(json.dumps(home.snapshot(), indent=2, ensure_ascii=False))
    else:
        Console().print(room_table(home, speed))
    if interrupted:
        err_console.print(f"interrupted at tick {home.clock.tick}")


# ---- twin codes ------------------------------------------------------------------------

@app.command()
def codes(home_file: Optional[Path] = HomeOption, seed: Optional[int] = SeedOption,
          as_json: bool = typer.Option(False, "--json", help="Print the codes as JSON.")) -> None:
    """Print each device's Matter pairing codes: the 11-digit manual code and the `MT:` QR payload.

    They follow from the home's seed and the device id, so they are the same on every run
    (`twin run` prints them too). Give one to a controller in development mode, which must
    trust the public test PAA (the twin's credentials are development ones).

    Examples:

        twin codes

        twin codes --home home.yaml --json

        chip-tool pairing code 1 34970112332 --paa-trust-store-path PAA_DIR
    """
    from matter_twin import nodes as cli_node
    home = load_home(home_file, seed)
    rows = cli_node.codes_rows(home)
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    cli_node.print_codes(Console(), rows)


# ---- twin tool -------------------------------------------------------------------------

@app.command()
def tool(name: str = typer.Argument(..., help="Tool name, e.g. get_room_devices."),
         args: str = typer.Argument("{}", help="The tool's arguments as a JSON object."),
         home_file: Optional[Path] = HomeOption, seed: Optional[int] = SeedOption,
         backend_config: Optional[Path] = BackendOption,
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
        from matter_twin.cli_bridge import run_tool
        result = run_tool(backend_config, name, parsed)
    else:
        home = load_home(home_file, seed)
        if advance:
            fast_forward(home, round(advance * TICKS_PER_SECOND))
        result = call_tool(TwinBackend(home), name, parsed, Session())
    print(json.dumps(result, indent=2, ensure_ascii=False))
    if not result["ok"]:
        _one_line(f"{result['error']['code']}: {result['error']['message']}")
        raise typer.Exit(1)


@app.command("tools")
def list_tools(as_json: bool = typer.Option(False, "--json", help="Print the OpenAI function schemas.")) -> None:
    """List the SimuHome tools and their arguments.

    Examples:

        twin tools

        twin tools --json > tools.json
    """
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
                  rooms: int = typer.Option(4, "--rooms", help="Number of rooms."),
                  devices: int = typer.Option(12, "--devices", help="Number of devices in all."),
                  output: Optional[Path] = typer.Option(None, "-o", "--output",
                                                        help="Write the YAML here (default: stdout).")) -> None:
    """Generate a random but reproducible home file.

    Examples:

        twin home generate --seed 7 --rooms 4 --devices 12 -o home.yaml

        twin run --home home.yaml
    """
    from twin import generator
    from twin.schema import to_yaml
    if rooms < 1 or devices < 0:
        raise CliError("--rooms must be >= 1 and --devices >= 0")
    try:
        spec = generator.generate_home(seed, rooms, devices)
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
    err_console.print(f"wrote {output}: {rooms} rooms, {devices} devices, seed {seed}")


# ---- twin serve ------------------------------------------------------------------------

@app.command()
def serve(home_file: Optional[Path] = HomeOption, seed: Optional[int] = SeedOption,
          backend_config: Optional[Path] = BackendOption,
          host: str = typer.Option("127.0.0.1", "--host", help="Address to bind. Loopback by default; "
                                   "bind elsewhere only on purpose."),
          port: int = typer.Option(8080, "--port", help="TCP port."),
          speed: float = typer.Option(0.0, "--speed", help="Advance virtual time at this factor "
                                      "in the background; 0 = only via POST /clock/advance.")) -> None:
    """Serve the tools over HTTP (FastAPI; OpenAPI docs at /docs).

    Each tool is `POST /tools/<name>` with its arguments as the JSON body; `GET /tools`
    lists the schemas; `GET /clock` and `POST /clock/advance {"seconds": N}` read and move
    virtual time.

    Examples:

        twin serve --home home.yaml --seed 3 --port 8080

        curl -s -X POST localhost:8080/tools/get_rooms -d '{}'

        curl -s -X POST localhost:8080/clock/advance -d '{"seconds": 600}'
    """
    import uvicorn

    from matter_twin.http import create_app
    from bridge.twin_backend import TwinBackend
    if speed < 0:
        raise CliError(f"--speed {speed} must be >= 0")
    if not 0 < port < 65536:
        raise CliError(f"--port {port} is not a TCP port")
    if backend_config is not None:  # real time: the bridge's devices live on the wall clock
        from matter_twin.cli_bridge import serve as serve_backend
        return serve_backend(backend_config, host, port)
    home = load_home(home_file, seed)
    app_ = create_app(TwinBackend(home))
    stop = threading.Event()
    if speed > 0:
        threading.Thread(target=_drive_clock, args=(home, speed, app_.state.lock, stop),
                         daemon=True, name="twin-clock").start()
    try:
        uvicorn.run(app_, host=host, port=port, log_level="info")
    finally:
        stop.set()


def _drive_clock(home: Any, speed: float, lock: threading.Lock, stop: threading.Event) -> None:
    """Background pacing for `twin serve --speed`: steps the home under the app's lock."""
    from twin.clock import Pacer
    pacer = Pacer(speed, time.monotonic(), home.clock.tick)
    while not stop.wait(0.1):
        target = pacer.target(time.monotonic())
        with lock:
            if target > home.clock.tick:
                home.advance((target - home.clock.tick) / TICKS_PER_SECOND)


# ---- twin mcp --------------------------------------------------------------------------

@app.command()
def mcp(backend_config: Optional[Path] = BackendOption, home_file: Optional[Path] = HomeOption,
        seed: Optional[int] = SeedOption,
        http: Optional[int] = typer.Option(None, "--http", help="Serve streamable HTTP on this port "
                                           "(endpoint /mcp) instead of stdio.", show_default=False),
        host: str = typer.Option("127.0.0.1", "--host", help="Address for --http. Loopback by default.")) -> None:
    """Serve the tools as an MCP server (stdio, or streamable HTTP with --http).

    Every tool is listed with its JSON schema. Without --backend the server drives a fresh
    twin home in process; with --backend it drives the bridge config's devices.

    Examples:

        twin mcp                                       # stdio, the built-in home

        twin mcp --backend bridge.yaml --http 8765     # http://127.0.0.1:8765/mcp
    """
    from matter_twin import cli_bridge as bridge_cli
    if http is not None and not 0 < http < 65536:
        raise CliError(f"--http {http} is not a TCP port")
    if backend_config is not None:
        backend = bridge_cli.open_backend(backend_config)
    else:
        from bridge.twin_backend import TwinBackend
        backend = TwinBackend(load_home(home_file, seed))
    bridge_cli.mcp(backend, http, host)


if __name__ == "__main__":
    app()
