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

A page's address (``redact_url``) first loses the credentials of its userinfo (``:TOKEN@``,
``user:pass@``, a token alone as the user), the tokens of its path (after ``/reset/``,
``/invite/`` and the like, or a long piece of mixed case and digits anywhere) and the values
of its query, fragment and path parameters where the parameter's name, percent-decoded, says
it holds a secret that the text scans would not recognise as one (``code``, ``sig``,
``session_id``, ``JSESSIONID``: OAuth codes, signed links, session ids), then goes through
the four scans like any text (``token=…``).

A value that starts with ``[`` is never redacted again, and no pattern matches inside a marker,
so redacting twice changes nothing. Every pattern needs a digit, an upper-case letter or one of
``= : , - _ . / ' " ``` ``; text without them comes back unchanged.

Every repetition is bounded, and each token branch checks after its literal prefix that it
starts a word, so a run of prefixes (``eyJeyJeyJ…``) is scanned once, not once per prefix.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import msgspec

from capture._labels import labelled_values
from capture._shapes import MARK, Span, cards, prefixed_tokens, private_keys

__all__ = ["KINDS", "Redaction", "redact", "redact_url", "secret_spans"]

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


SCANS = (private_keys, prefixed_tokens, cards, labelled_values)


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}
    for scan in SCANS:
        text = _apply(text, scan(text), counts)
    return Redaction(text, counts)


def secret_spans(text: str) -> list[Span]:
    """Where ``redact(text)`` replaces something, as ``(start, end, kind)`` in ``text`` itself
    (what the camera paints black in the pixels), in order of start.

    Each scan reads the text the scans before it left, markers and all; so every character of
    that text carries the range of ``text`` it stands for (a marker's characters, the whole
    secret it replaced), and a later scan's span is mapped back through them. Only a text
    with a secret pays for that.
    """
    found: list[Span] = []
    starts: list[int] = []
    ends: list[int] = []
    for scan in SCANS:
        spans = [span for span in scan(text) if span[1] > span[0]]
        if not spans:
            continue
        if not found:
            starts, ends = list(range(len(text))), list(range(1, len(text) + 1))
        new_starts: list[int] = []
        new_ends: list[int] = []
        last = 0
        for start, end, kind in spans:
            first, after = starts[start], ends[end - 1]
            found.append((first, after, kind))
            marker = len(MARK) + len(kind) + 1
            new_starts += starts[last:start] + [first] * marker
            new_ends += ends[last:start] + [after] * marker
            last = end
        starts, ends = new_starts + starts[last:], new_ends + ends[last:]
        text = _apply(text, spans, {})
    return sorted(found)


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


# Parameter names whose values grant access without looking like a secret to the text scans:
# an OAuth authorization code, a signed link's signature, a session id. Compared percent-
# decoded ('%63ode' is 'code'), lower-cased and without '-' and '_' ('session_id', 'X-Amz-
# Signature'); any name holding 'sessid' or 'sessionid' is a session id too ('JSESSIONID',
# 'PHPSESSID', 'ASPSESSIONIDQQGG').
URL_SECRET_PARAMS = frozenset(
    {
        "auth",
        "code",
        "key",
        "otp",
        "session",
        "sid",
        "sig",
        "signature",
        "ticket",
        "xamzcredential",
        "xamzsecuritytoken",
        "xamzsignature",
        "xgoogcredential",
        "xgoogsignature",
    }
)
# A path segment after one of these names is a token when it looks like one ('/reset/<token>',
# '/invite/<token>'): password resets, invitations, magic sign-in and shared links.
URL_SECRET_PATHS = frozenset(
    {
        "activate",
        "auth",
        "confirm",
        "invitation",
        "invite",
        "key",
        "login",
        "magic",
        "magiclink",
        "reset",
        "share",
        "signin",
        "token",
        "verify",
    }
)
# The value stops at '?' too: a ';jsessionid=…' path parameter is followed by the query.
_PARAM = re.compile(r"([?&#;])([^=&#;?]{1,64})=([^&#;?]*)")
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,30}://)([^/?#@\s]{1,512})@")
_PATH = re.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,30}://[^/?#]*)([^?#]*)")
_SEGMENT = re.compile(r"(?<=/)([^/;]{1,64}/)?([A-Za-z0-9_-]{16,512})(?=[/;]|$)")


def redact_url(url: str) -> Redaction:
    """Replace the secrets in a page's address with ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}

    def count(kind: str) -> str:
        counts[kind] = counts.get(kind, 0) + 1
        return f"{MARK}{kind}]"

    def userinfo(match: re.Match[str]) -> str:
        scheme, info = match.groups()
        if MARK in info:  # redacted before: a marker holds a colon of its own
            return match[0]
        user, colon, password = info.partition(":")
        if colon and password and not password.startswith("["):
            return f"{scheme}{user}:{count('password')}@"
        if not colon and _random(user, 16):  # a token alone as the user: https://TOKEN@host
            return f"{scheme}{count('secret')}@"
        return match[0]

    def segment(match: re.Match[str]) -> str:
        before, value = match[1] or "", match[2]
        named = _plain(before.rstrip("/")) in URL_SECRET_PATHS and _random(value, 16)
        # A slug's words are kept: only a long piece of it can be a token on its own.
        longest = max(re.split(r"[-_]", value), key=len)
        if named or _random(longest, 24, cases=True):
            return before + count("secret")
        return match[0]

    def path(match: re.Match[str]) -> str:
        start, rest = match.groups()
        return start + _SEGMENT.sub(segment, rest)

    def param(match: re.Match[str]) -> str:
        sep, name, value = match.groups()
        if not value or value.startswith("["):
            return match[0]
        plain = _plain(name)
        if plain in URL_SECRET_PARAMS or "sessid" in plain or "sessionid" in plain:
            return f"{sep}{name}={count('secret')}"
        # One parameter at a time: a labelled value would otherwise run on into the next
        # parameters ("access_token=…&token_type=bearer" all redacted). The name is read
        # decoded, so that '%74oken=' is a token's label too.
        decoded = unquote(name)
        alone = redact(f"{decoded}={value}")
        if not alone.counts or not alone.text.startswith(f"{decoded}="):
            return match[0] if not alone.counts else sep + _counted(alone, counts).text
        _counted(alone, counts)
        return f"{sep}{name}={alone.text[len(decoded) + 1 :]}"

    url = _AUTHORITY.sub(userinfo, url, count=1)
    if not url.lower().startswith("file:"):
        url = _PATH.sub(path, url, count=1)
    body = redact(_PARAM.sub(param, url))
    return _counted(body, counts)


def _counted(found: Redaction, counts: dict[str, int]) -> Redaction:
    """``found`` with its counts added to ``counts``, and those as its counts."""
    for kind, n in found.counts.items():
        counts[kind] = counts.get(kind, 0) + n
    return Redaction(found.text, counts)


def _plain(name: str) -> str:
    return unquote(name).lower().replace("-", "").replace("_", "")


def _random(value: str, length: int, *, cases: bool = False) -> bool:
    """Whether ``value`` looks like a token: ``length`` characters at least, with digits and
    letters (and both cases when ``cases``: a long word of one case, a hex hash or a slug
    is an ordinary name in an address)."""
    if len(value) < length or not any(c.isdigit() for c in value):
        return False
    if cases:
        return any(c.isupper() for c in value) and any(c.islower() for c in value)
    return any(c.isalpha() for c in value)
