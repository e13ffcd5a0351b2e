"""Secret redaction: credentials in screen text are replaced before anything is stored.

Each hit becomes ``[REDACTED:<kind>]`` and its label stays, so ``password: hunter2`` is stored
as ``password: [REDACTED:password]``. The text goes through four scans, each left to right:

1. ``private_key``: a PEM ``-----BEGIN … PRIVATE KEY-----`` body, up to its END line or, when
   OCR lost that line, to the end of the base64-looking lines. First, so that no fragment of a
   key body is half-redacted as something else.
2. Prefixed tokens: ``aws_key``, ``github_token``, ``anthropic_key``, ``openai_key``,
   ``slack_token``, ``jwt``. One regex whose branches all begin with a literal, so the engine
   skips to candidate first letters instead of trying every position. The JWT, Slack and
   API key branches also take a token as OCR reads it (spaces at its separators, a comma
   for a dot, misread letters, pieces split off by a space).
3. ``card``: 13-19 digits, bare or in groups of 3-6 split by one kind of separator, that pass
   the Luhn check.
4. Labelled values (``password``, ``secret``): ``password: …``, ``DB_PASSWORD="…"``,
   ``api_key=…``, ``token: …``, ``Bearer …``, ``curl -u user:pass``, ``scheme://user:pass@``.
   Labels are found with ``str.find`` on a lower-cased copy: a case-insensitive regex of the
   same words ran at 8.5 MB/s on ``screen_corpus.py`` text, lower() and finds at 99 MB/s. Last,
   so that a value already redacted as a token keeps its precise kind.

Scans 1 to 3 are in ``capture/_shapes.py``, scan 4 in ``capture/_labels.py``.

A page's address (``redact_url``) first has the values of its query and fragment parameters
redacted where the parameter's name says it holds a secret that the text scans would not
recognise as one (``code``, ``sig``, ``session``: OAuth codes, signed links, session ids),
then goes through the four scans like any text (``token=…``, ``user:pass@``).

A value that starts with ``[`` is never redacted again, and no pattern matches inside a marker,
so redacting twice changes nothing. Every pattern needs a digit, an upper-case letter or one of
``= : , - _ . / ' " ``` ``; text without them comes back unchanged.

Every repetition is bounded, and each token branch checks after its literal prefix that it
starts a word, so a run of prefixes (``eyJeyJeyJ…``) is scanned once, not once per prefix.
"""

from __future__ import annotations

import re

import msgspec

from capture._labels import labelled_values
from capture._shapes import MARK, Span, cards, prefixed_tokens, private_keys

__all__ = ["KINDS", "Redaction", "redact", "redact_url"]

KINDS = (
    "card",
    "aws_key",
    "github_token",
    "anthropic_key",
    "openai_key",
    "slack_token",
    "jwt",
    "private_key",
    "password",
    "secret",
)


class Redaction(msgspec.Struct, frozen=True):
    """The redacted text and, per kind, how many secrets were replaced."""

    text: str
    counts: dict[str, int]


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}
    for scan in (private_keys, prefixed_tokens, cards, labelled_values):
        text = _apply(text, scan(text), counts)
    return Redaction(text, counts)


def _apply(text: str, spans: list[Span], counts: dict[str, int]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end, kind in spans:
        parts += (text[last:start], f"{MARK}{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    parts.append(text[last:])
    return "".join(parts)


# Parameter names (lower-cased) whose values grant access without looking like a secret to
# the text scans: an OAuth authorization code, a signed link's signature, a session id.
URL_SECRET_PARAMS = frozenset(
    {
        "auth",
        "code",
        "key",
        "otp",
        "session",
        "sessionid",
        "sid",
        "sig",
        "signature",
        "ticket",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
        "x-goog-credential",
        "x-goog-signature",
    }
)
_PARAM = re.compile(r"([?&#;])([^=&#;?]{1,64})=([^&#;]*)")


def redact_url(url: str) -> Redaction:
    """Replace the secrets in a page's address with ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}

    def param(match: re.Match[str]) -> str:
        sep, name, value = match.groups()
        if not value or value.startswith("["):
            return match[0]
        if name.lower() in URL_SECRET_PARAMS:
            counts["secret"] = counts.get("secret", 0) + 1
            return f"{sep}{name}={MARK}secret]"
        # One parameter at a time: a labelled value would otherwise run on into the next
        # parameters ("access_token=…&token_type=bearer" all redacted).
        alone = redact(f"{name}={value}")
        if not alone.counts:
            return match[0]
        for kind, n in alone.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return sep + alone.text

    body = redact(_PARAM.sub(param, url))
    for kind, n in body.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    return Redaction(body.text, counts)
