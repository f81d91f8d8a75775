"""Proof of origin of decisions: an HMAC-SHA256 over subject and bytes, carried in a header.

Layer: contracts. Pure (hashlib/hmac only); never does I/O, never logs key material.

The planner signs every message it publishes on DECISIONS; the binder acts only on a decision
whose signature checks out with the same key, so a NATS user who may publish on the decisions
subjects still cannot make the binder bind or delete anything. The signature travels in the
`Gangsched-Signature` header, not in the decision, so decisions, the outbox and `replay
--verify` are unchanged by it. Why HMAC rather than Ed25519: see docs/design-notes.md.

Header shape: `v1 <key id> <signature>`, the key id being the first 16 hex digits of the
SHA-256 of the key (it names which key signed, never reveals it) and the signature the
URL-safe base64 of HMAC-SHA256(key, `gangsched-decision-v1\\n<subject>\\n` + data).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field

SIGNATURE_HEADER = "Gangsched-Signature"
VERSION = "v1"
MIN_KEY_BYTES = 32
"""The shortest key taken: 256 bits, as HMAC-SHA256's own output."""
_DOMAIN = b"gangsched-decision-v1\n"


class UnusableKey(ValueError):
    """A key that cannot be used (too short, empty); the message says what to give."""


@dataclass(frozen=True)
class DecisionKey:
    """The shared secret of the planner (signs) and the binder (verifies).

    `secret` is never shown (`repr` hides it); `key_id` names it in headers and messages.
    """

    secret: bytes = field(repr=False)

    @classmethod
    def from_text(cls, text: str) -> DecisionKey:
        """The key written in a key file or Secret: its text with surrounding white space
        removed, taken as bytes (so `openssl rand -hex 32` gives a 64-byte key).

        Raises:
            UnusableKey: fewer than MIN_KEY_BYTES bytes.
        """
        secret = text.strip().encode()
        if len(secret) < MIN_KEY_BYTES:
            raise UnusableKey(f"the decision key has {len(secret)} bytes; it needs at least "
                            f"{MIN_KEY_BYTES} (e.g. the output of `openssl rand -hex 32`)")
        return cls(secret)

    @property
    def key_id(self) -> str:
        """The first 16 hex digits of SHA-256(secret)."""
        return hashlib.sha256(self.secret).hexdigest()[:16]

    def sign(self, subject: str, data: bytes) -> str:
        """The header value signing `data` published on `subject`."""
        return f"{VERSION} {self.key_id} {self._mac(subject, data)}"

    def check(self, subject: str, data: bytes, header: str | None) -> str | None:
        """Why `data` on `subject` with signature header `header` is not the planner's, or None
        when the signature is valid.

        Shapes: the reason is one line naming what is wrong (missing, malformed, another key,
        or not matching), never key material.
        """
        if not header:
            return f"not signed (no {SIGNATURE_HEADER} header)"
        parts = header.split(" ")
        if len(parts) != 3 or parts[0] != VERSION:
            return f"malformed {SIGNATURE_HEADER} header"
        if parts[1] != self.key_id:
            return f"signed with another key (key id {parts[1][:16]}, this binder's {self.key_id})"
        if not hmac.compare_digest(parts[2], self._mac(subject, data)):
            return "signature does not match the message (altered or forged)"
        return None

    def _mac(self, subject: str, data: bytes) -> str:
        digest = hmac.new(self.secret, _DOMAIN + subject.encode() + b"\n" + data,
                          hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")
