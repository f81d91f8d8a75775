"""One service of `gangsched run` in a process of its own: `python -m services.cli.child`.

Layer: cli (top). Started only by `gangsched run` (`services.cli.run_processes`), never by
hand: its payload (which service, its `Settings` with the NATS credentials and decision key,
the planner's configuration) arrives pickled on stdin from the parent that made it, so no
secret is ever on a command line. It runs the service as `gangsched <service>` would, with
/metrics on a free loopback port for the parent to merge, and reports that port and its
readiness on its channel to the parent; it ends on SIGTERM, and when the parent is gone
(`services.runtime.child_channel`, `services.runtime.parent_death`). Its one argument names
the service (`python -m services.cli.child binder`), so `ps` tells the three apart; the
payload must name the same one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
import sys
from typing import Any, Protocol

import click

from services.cli import exit_codes, serve
from services.config.settings import Settings
from services.planner.core.config import PlannerConfig
from services.runtime.child_channel import ParentChannel, ParentGone
from services.runtime.health import HealthServer, Readiness


@dataclasses.dataclass(frozen=True)
class ChildPayload:
    """What the parent hands a child: the one `service` (of serve.SERVICES) it runs, with
    `settings` (URLs and credentials resolved by the parent) and `planner`."""

    service: str
    settings: Settings
    planner: PlannerConfig


def main() -> None:
    """Run the service of the payload on stdin until SIGTERM (or the parent's end); on an
    expected failure, send its one line to the parent as `{"fatal": line}` (the parent says
    it and ends the run) and exit 1; exit 2 when not started by a parent."""
    try:
        channel, payload = ParentChannel.connect()
    except ParentGone as error:
        print(f"gangsched: {error} (this module is started by `gangsched run`)",
              file=sys.stderr)
        sys.exit(exit_codes.USAGE)
    job = pickle.loads(payload)  # from the parent that started this process, over its pipe
    assert isinstance(job, ChildPayload)
    named = sys.argv[1:]
    if named and named != [job.service]:
        print(f"gangsched: started as the {' '.join(named)} process with a {job.service} "
              "payload", file=sys.stderr)
        sys.exit(exit_codes.USAGE)
    from services.cli.main import configure_logging, run_service

    configure_logging(job.settings.log_level)
    try:
        run_service(_watched(channel, job))
    except click.ClickException as error:
        # what no restart mends (a lost NATS store, a schema behind, missing credentials):
        # the parent ends the run with this line instead of restarting the process
        channel.send({"fatal": error.format_message()})
        sys.exit(error.exit_code)


async def _watched(channel: ParentChannel, job: ChildPayload) -> None:
    channel.watch_parent()
    await serve.serve(job.settings, (job.service,), job.planner, announce=_reporter(channel),
                      is_child=True)


class Channel(Protocol):
    """Where the child's messages go (`ParentChannel`)."""

    def send(self, message: dict[str, Any]) -> None: ...


def _reporter(channel: Channel) -> serve.Announce:
    """Report the /metrics port once, then the readiness whenever it changes (until
    cancelled): `{"http_port": int | None}`, `{"ready": bool, "not_ready": [names], "holds":
    [reasons]}`: the flags not ready and what holds them down (`Readiness.holds`,
    `["NATS disconnected"]`), which the parent's /readyz shows as the child's own does
    (`not ready: planner (NATS disconnected)`), polled every `serve.READY_POLL_SECONDS`."""
    async def report(settings: Settings, readiness: Readiness, health: HealthServer | None,
                     services: tuple[str, ...]) -> None:
        channel.send({"http_port": health.port if health is not None else None})
        last: tuple[list[str], list[str]] | None = None
        while True:
            waiting, holds = readiness.not_ready(), readiness.holds()
            if (waiting, holds) != last:
                channel.send({"ready": not waiting, "not_ready": waiting, "holds": holds})
                last = waiting, holds
            await asyncio.sleep(serve.READY_POLL_SECONDS)

    return report


if __name__ == "__main__":
    from services.cli import child  # the module itself, not `__main__`: the payload's class

    child.main()
