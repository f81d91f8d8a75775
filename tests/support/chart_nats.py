"""A nats-server run with the chart's rendered nats.conf: its users, passwords and subject
permissions exactly as deploy/chart renders them, on a free loopback port.

Only what exists in the NATS pod alone is made local: the store and pid paths, the pod's
SERVER_NAME, and the monitoring port (left out). Used by integration tests of what the chart's
NATS users may do; tests/e2e/test_deploy.py runs the same configuration beside a cluster.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from services.bus.embedded import EmbeddedNats
from tests.unit.deploy import chart

POD_PATHS = ("/data", "/var/run/nats/nats.pid")


class ChartNats(EmbeddedNats):
    """An `EmbeddedNats` whose configuration is the rendered chart's nats.conf.

    `objects`: a render with the passwords' Secret (the chart's defaults), or one whose
    nats.conf reads them from the environment (`nats.auth.existingSecret`, the plain
    manifests): each user then gets a fresh password, put where the pod's
    `$GANGSCHED_<USER>_PASSWORD` is, as nats-server would read it from its environment.
    """

    def __init__(self, objects: list[dict[str, Any]], data_dir: Path) -> None:
        super().__init__(data_dir)
        secret = chart.find(objects, "Secret", f"{chart.RELEASE}-nats-config")
        conf = chart.secret_data(secret)["nats.conf"]
        try:
            users = chart.find(objects, "Secret", f"{chart.RELEASE}-nats-users")
        except LookupError:  # the users' Secret is the operator's (existingSecret)
            self.passwords = {user: f"p{secrets.token_hex(24)}" for user in chart.USERS}
            for user, password in self.passwords.items():
                conf = conf.replace(f"${_password_variable(user)}", json.dumps(password))
        else:
            self.passwords = chart.secret_data(users)
        self.conf = local_conf(conf, data_dir)

    def _arguments(self, ports_dir: Path) -> list[str]:
        conf = self.data_dir / "nats.conf"
        conf.write_text(self.conf)
        # the file's JetStream block (store under data_dir) and users; a free loopback port
        return ["--config", str(conf), "--addr", self.host, "--port", str(self.port or -1),
                "--ports_file_dir", str(ports_dir)]


def _password_variable(user: str) -> str:
    """The environment variable holding `user`'s password in the NATS pod (nats.yaml)."""
    return f"GANGSCHED_{user.upper()}_PASSWORD"


def local_conf(conf: str, data_dir: Path) -> str:
    """`conf` with the pod's paths under `data_dir`, a fixed server name and no monitor port.

    Raises:
        AssertionError: a path of the pod is no longer in the rendered configuration.
    """
    local = {"/data": data_dir / "jetstream", "/var/run/nats/nats.pid": data_dir / "nats.pid"}
    for path in POD_PATHS:
        assert f'"{path}"' in conf, f"{path} not in the rendered nats.conf"
        conf = conf.replace(f'"{path}"', json.dumps(str(local[path])))
    lines = [line for line in conf.splitlines() if not line.strip().startswith("http_port")]
    return "\n".join(lines).replace("server_name: $SERVER_NAME", 'server_name: "chart-nats-0"')
