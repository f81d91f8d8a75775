"""Checking the CA, client certificate and client key files before the client's TLS context
is built from them.

Layer: kube. kubernetes_asyncio builds its TLS context as its `ApiClient` is made
(`ssl.create_default_context(cafile=...)`, then `load_cert_chain(cert, key)`): a file that is
not PEM leaves it as a bare `ssl.SSLError` (`[X509: NO_CERTIFICATE_OR_CRL_FOUND]`) that names
no file, and an encrypted key makes OpenSSL ask for its passphrase on the terminal. Here the
same files are loaded the same way first, each on its own, so that what is wrong is told in
one line naming the file (or the kubeconfig field it came from).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from services.kube import errors


@dataclass(frozen=True)
class TlsNames:
    """How messages name each file: `kubeconfig /k: cluster "c": certificate-authority-data`,
    `in-cluster CA file /var/run/.../ca.crt`."""

    ca: str
    cert: str
    key: str


class _Encrypted(Exception):
    """The key asked for a passphrase (raised by `_no_passphrase`)."""


def check(ca: str | None, cert: str | None, key: str | None, names: TlsNames) -> None:
    """Load the files as the client's TLS context will, each on its own. `None`: not used.

    Raises:
        KubeNoCredentials: `ca` or `cert` holds no PEM certificate, `key` no PEM private key,
            or one that is not `cert`'s, or one that is encrypted; a file cannot be read.
    """
    if ca:
        _check_certificates(ca, names.ca)
    if cert:
        _check_certificates(cert, names.cert)
        _check_key(cert, key, names)


def _check_certificates(path: str, name: str) -> None:
    """Raises: KubeNoCredentials: `path` cannot be read or holds no PEM certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=path)
    except ssl.SSLError as error:
        raise errors.KubeNoCredentials(f"{name} is not a PEM certificate") from error
    except OSError as error:
        raise errors.KubeNoCredentials(f"{name}: cannot read it: {error.strerror}") from error


def _check_key(cert: str, key: str | None, names: TlsNames) -> None:
    """Load `cert` with `key` (None: the key in `cert`), as the client will.

    Raises:
        KubeNoCredentials: the key is not PEM, not `cert`'s, encrypted, or cannot be read.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_cert_chain(cert, keyfile=key, password=_no_passphrase)
    except _Encrypted as error:
        raise errors.KubeNoCredentials(
            f"{names.key} is encrypted: a key with a passphrase is not supported") from error
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise errors.KubeNoCredentials(
                f"{names.key} is not the private key of the client certificate") from error
        raise errors.KubeNoCredentials(f"{names.key} is not a PEM private key") from error
    except OSError as error:
        raise errors.KubeNoCredentials(f"{names.key}: cannot read it: {error.strerror}") from error


def _no_passphrase() -> bytes:
    """The password callback of `load_cert_chain`: called only for an encrypted key.

    Raises:
        _Encrypted: always (without a callback, OpenSSL would prompt on the terminal).
    """
    raise _Encrypted
