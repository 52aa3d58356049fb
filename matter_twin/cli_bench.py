"""`twin bench`: one word per benchmark suite, each suite's verbs under it.

The suites come from the one registry (scenarios/suites.py); each has its verbs here as one
Typer app (or, for a suite with a single verb, one command). Mounted in matter_twin/cli.py as
`app.add_typer(bench_app, name="bench")`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from matter_twin.cli_homeflow import homeflow_app
from matter_twin.cli_lifelong import lifelong
from matter_twin.cli_personal import personal_app
from matter_twin.cli_simuhome import simuhome_app
from matter_twin.cli_smh import smh_app
from scenarios.suites import SUITES

#: Each registered suite's verbs: a Typer app (`twin bench NAME VERB`) or one command (`twin bench NAME`).
SUITE_CLIS: dict[str, typer.Typer | Callable[..., Any]] = {
    "simuhome": simuhome_app, "lifelong": lifelong, "personal": personal_app, "smh": smh_app,
    "homeflow": homeflow_app,
}
if set(SUITE_CLIS) != set(SUITES):   # a suite without verbs, or verbs without a suite
    raise RuntimeError(f"suites {sorted(SUITES)} but CLI verbs for {sorted(SUITE_CLIS)}")

bench_app = typer.Typer(help="Benchmark suites on the twin: each suite's tasks, agents, scoring and reports "
                             "under its own word (the suites are listed below, from scenarios/suites.py). "
                             "SimuHome's verbs also answer here directly (`twin bench run` is `twin bench "
                             "simuhome run`).\n\n"
                             "Examples:\n\n"
                             "    twin bench simuhome run --agent reference --out runs/reference\n\n"
                             "    twin bench simuhome validate --no-solve\n\n"
                             "    twin bench personal run --agent reference --out runs/personal\n\n"
                             "    twin bench lifelong --scenario pref-r --seeds 1 --out runs/lifelong\n\n"
                             "    twin bench smh run --agent reference --setting both --out runs/smh\n\n"
                             "    twin bench run --agent reference --out runs/reference",
                        no_args_is_help=True, rich_markup_mode="markdown")

for _name, _suite in SUITES.items():
    _cli = SUITE_CLIS[_name]
    if isinstance(_cli, typer.Typer):
        bench_app.add_typer(_cli, name=_name, help=_suite.summary, short_help=_suite.summary)
    else:
        bench_app.command(_name, short_help=_suite.summary)(_cli)

# SimuHome's verbs at `twin bench VERB` too, as before suites had their own word (hidden: the
# help lists suites).
for _info in simuhome_app.registered_commands:
    bench_app.command(_info.name, hidden=True)(_info.callback)
