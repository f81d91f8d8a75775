"""The API client authenticates on the real API server as kubernetes_asyncio configures it
(requests go straight through the library's aiohttp session, the credentials still
come from the library's configuration).

Each case asks the API server who it is (a SelfSubjectReview, which every authenticated user
may create) through `services.kube.client.KubeClient`: the testbed's client certificate, its
static bearer token, an exec plugin whose token changes (refreshed by the client's refresh
task) and in-cluster service-account credentials whose token file is rewritten (re-read by the
configuration's refresh hook).
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from services.config.settings import KubeSettings
from services.kube import client as kube_client
from services.kube import errors
from services.kube.client import KubeClient
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.e2e

REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
EXEC_API = "client.authentication.k8s.io/v1"
EXEC_PLUGIN = f"""
import datetime, json, os, pathlib
token = pathlib.Path(os.environ["TOKEN_FILE"]).read_text().strip()
expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
print(json.dumps({{"apiVersion": "{EXEC_API}", "kind": "ExecCredential",
                  "status": {{"token": token,
                              "expirationTimestamp": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")}}}}))
"""
"""An exec credential plugin handing out the token in $TOKEN_FILE, expiring at once (within
the loader's 5-minute skew), so every refresh runs it again."""


@pytest.fixture(scope="module")
def accounts(control_plane: ControlPlane) -> Iterator[tuple[str, dict[str, str]]]:
    """A namespace with ServiceAccounts `first` and `second`, and a token of each."""
    with kube.fresh_namespace(control_plane, "auth") as namespace:
        tokens = {}
        for name in ("first", "second"):
            control_plane.kubectl("create", "serviceaccount", name, "-n", namespace)
            tokens[name] = control_plane.kubectl("create", "token", name, "-n", namespace,
                                                 "--duration=1h").strip()
        yield namespace, tokens


@pytest.fixture
async def connected() -> AsyncIterator[list[KubeClient]]:
    """Clients the test connects, closed after it."""
    clients: list[KubeClient] = []
    yield clients
    for client in clients:
        await client.close()


async def connect(clients: list[KubeClient], settings: KubeSettings) -> KubeClient:
    client = await kube_client.connect(settings)
    clients.append(client)
    return client


async def who(client: KubeClient) -> tuple[str, list[str]]:
    """The user name and groups the API server authenticated the request as."""
    review = await client.request("POST", REVIEWS, body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    user = review["status"]["userInfo"]
    return user["username"], user.get("groups", [])


async def test_a_client_certificate_kubeconfig_authenticates_as_the_certificates_subject(
        control_plane: ControlPlane, connected: list[KubeClient]) -> None:
    client = await connect(connected, KubeSettings(kubeconfig=control_plane.kubeconfig))
    name, groups = await who(client)
    assert name == "gangsched-admin"
    assert "system:masters" in groups


async def test_a_bearer_token_kubeconfig_authenticates_as_the_tokens_user(
        control_plane: ControlPlane, connected: list[KubeClient], tmp_path: Path) -> None:
    path = kube.token_kubeconfig(control_plane, tmp_path / "kubeconfig", control_plane.token)
    client = await connect(connected, KubeSettings(kubeconfig=path))
    name, groups = await who(client)
    assert name == "gangsched-admin-token"
    assert "system:masters" in groups


async def test_a_refused_token_is_kube_forbidden_with_the_401(
        control_plane: ControlPlane, connected: list[KubeClient], tmp_path: Path) -> None:
    path = kube.token_kubeconfig(control_plane, tmp_path / "kubeconfig", "not-a-token")
    client = await connect(connected, KubeSettings(kubeconfig=path))
    with pytest.raises(errors.KubeForbidden) as refused:
        await who(client)
    assert refused.value.status == 401
    assert refused.value.detail == "HTTP 401 Unauthorized: Unauthorized"


async def test_an_exec_plugins_new_token_is_used_once_the_client_refreshes_it(
        control_plane: ControlPlane, connected: list[KubeClient], tmp_path: Path,
        accounts: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    namespace, tokens = accounts
    monkeypatch.setattr(kube_client, "TOKEN_REFRESH_SECONDS", 0.2)
    plugin, token_file = tmp_path / "plugin.py", tmp_path / "token"
    plugin.write_text(EXEC_PLUGIN)
    token_file.write_text(tokens["first"])
    path = kube.user_kubeconfig(control_plane, tmp_path / "kubeconfig", {"exec": {
        "apiVersion": EXEC_API, "command": sys.executable, "args": [str(plugin)],
        "env": [{"name": "TOKEN_FILE", "value": str(token_file)}],
        "interactiveMode": "Never"}})
    client = await connect(connected, KubeSettings(kubeconfig=path))
    assert (await who(client))[0] == f"system:serviceaccount:{namespace}:first"
    token_file.write_text(tokens["second"])

    async def second() -> bool:
        return (await who(client))[0] == f"system:serviceaccount:{namespace}:second"

    await eventually_async(second, timeout=30, what="the refreshed token used")


async def test_in_cluster_credentials_reread_a_rotated_token_through_the_refresh_hook(
        control_plane: ControlPlane, connected: list[KubeClient], tmp_path: Path,
        accounts: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> None:
    namespace, tokens = accounts
    token_file = tmp_path / "token"
    token_file.write_text(tokens["first"])
    server = urlsplit(control_plane.server)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", str(server.hostname))
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.port))
    # where a pod's kubelet mounts them, and how long the library keeps a token it read
    incluster = "kubernetes_asyncio.config.incluster_config"
    monkeypatch.setattr(f"{incluster}.SERVICE_TOKEN_FILENAME", str(token_file))
    monkeypatch.setattr(f"{incluster}.SERVICE_CERT_FILENAME", str(control_plane.ca_file))
    monkeypatch.setattr(f"{incluster}.TOKEN_REFRESH_PERIOD", datetime.timedelta(0))
    client = await connect(connected, KubeSettings())
    assert client.host == control_plane.server
    assert (await who(client))[0] == f"system:serviceaccount:{namespace}:first"
    token_file.write_text(tokens["second"])  # the kubelet rotated it

    async def second() -> bool:
        return (await who(client))[0] == f"system:serviceaccount:{namespace}:second"

    # read again once the credentials asked for a request are no longer reused
    await eventually_async(second, timeout=kube_client.CREDENTIALS_REUSE_SECONDS + 10,
                           what="the rotated token used")
