"""The client's credentials: the API key, held so no repr shows it, and the values that
redaction masks by value (:func:`sdk._errors.redact`).

Registered for masking: the key, a password in the base URL, and the latest credential
header values a request carried (at most ``MAX_HEADER_SECRETS``; a bearer token also
bare). The key and the URL's password stay registered while the client lives; all are
released on close.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping

from .._errors import register_secret, release_secret

__all__ = ["Credentials", "without_userinfo"]

MAX_HEADER_SECRETS = 32
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


class _Secret:
    """Holds the API key; its repr never shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<api key>" if self.value else "<no api key>"


class Credentials:
    """The API key (``key``, whose repr never shows it) and the secrets registered for
    masking on the client's behalf (see the module doc)."""

    __slots__ = ("_pinned", "_secrets", "key")

    def __init__(self, api_key: str | None, url_password: str | None) -> None:
        self.key = _Secret(api_key)
        self._secrets: OrderedDict[str, None] = OrderedDict()
        self._pinned = {s for s in (api_key, url_password) if s}  # kept while headers come and go
        self.register(api_key)
        self.register(url_password)

    def __repr__(self) -> str:
        return f"Credentials({self.key!r})"

    def register(self, secret: str | None) -> None:
        if not secret:
            return
        if secret in self._secrets:
            self._secrets.move_to_end(secret)
            return
        if register_secret(secret):
            self._secrets[secret] = None
            while len(self._secrets) > MAX_HEADER_SECRETS:  # the oldest header value goes
                oldest = next(s for s in self._secrets if s not in self._pinned)
                del self._secrets[oldest]
                release_secret(oldest)

    def register_headers(self, headers: Mapping[str, str]) -> None:
        """Mask the values of the credential headers a request carries, by value."""
        for k, v in headers.items():
            if k.lower() in SECRET_HEADERS and isinstance(v, str):
                self.register(v)
                scheme, _, token = v.partition(" ")
                if token and scheme.lower() in ("bearer", "basic", "token"):
                    self.register(token.strip())

    def release(self) -> None:
        for secret in self._secrets:
            release_secret(secret)
        self._secrets.clear()


def without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` before the host shown as ``***@``."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@", r"\1***@", url, count=1)
