"""Secrets told by their shape: private key blocks, prefixed tokens and card numbers.

Scans 1 to 3 of ``capture.redact`` (its docstring gives the order and the reasons). Each scan
returns the spans to replace, left to right, and never one that starts inside a marker.
"""

from __future__ import annotations

import re

MARK = "[REDACTED:"
"""How every replacement starts: ``[REDACTED:<kind>]``."""

Span = tuple[int, int, str]
"""A secret's ``(start, end, kind)`` in the text."""


# --- 1. private keys ---------------------------------------------------------------------

# OCR reads the five dashes as em or en dashes, or drops some ('-----BEGIN PRIVATE KEY—--').
# At most five trailing dashes: more would swallow the next line's '-----END' when a key with
# no body is printed on one line.
_PEM_BEGIN = re.compile(r"[-—–]{2,10} ?BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?[-—–]{0,5}")
_PEM_END = re.compile(r"[-—–]{2,10} ?END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?[-—–]{0,5}")
# A body line of a key whose END line is lost: base64, armour headers (Proc-Type: 4,ENCRYPTED),
# OCR's stray spaces, and the literal \n of a key pasted as a JSON string.
_PEM_BODY_LINE = re.compile(r"[A-Za-z0-9+/=:,.\\ \t-]{1,8192}")
_PEM_MAX_CHARS = 65536  # an 8192-bit RSA key in PEM is about 6.5 KB
_PEM_MAX_LINES = 400


def private_keys(text: str) -> list[Span]:
    if "PRIVATE KEY" not in text:
        return []
    spans: list[Span] = []
    begin = _PEM_BEGIN.search(text)
    # Each END line is searched for once, not once per header: many headers and no footer
    # would otherwise rescan the rest of the text for every header.
    end = _PEM_END.search(text, begin.end()) if begin else None
    while begin:
        body = begin.end()
        following = _PEM_BEGIN.search(text, body)
        if end and end.start() < body:
            end = _PEM_END.search(text, body)
        closed = (
            end is not None
            and end.start() - body <= _PEM_MAX_CHARS
            and (following is None or following.start() > end.start())
        )
        if end is not None and closed:
            start, stop = _strip(text, body, end.start())
            resume = end.end()
        else:
            start, stop = _truncated_body(text, body)
            resume = stop
        if start < stop and not text.startswith(MARK, start):
            spans.append((start, stop, "private_key"))
        if following and following.start() < resume:
            following = _PEM_BEGIN.search(text, resume)
        begin = following
    return spans


def _strip(text: str, start: int, stop: int) -> tuple[int, int]:
    while start < stop and text[start].isspace():
        start += 1
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return start, stop


def _truncated_body(text: str, pos: int) -> tuple[int, int]:
    """The run of base64-looking lines after a header that has no END line."""
    line_end = _line_end(text, pos)
    if not text[pos:line_end].strip():  # the header ends its line: the body starts below
        pos = min(line_end + 1, len(text))
    start = stop = pos
    for _ in range(_PEM_MAX_LINES):
        line_end = _line_end(text, pos)
        if not text[pos:line_end].strip() or not _PEM_BODY_LINE.fullmatch(text, pos, line_end):
            break
        stop, pos = line_end, line_end + 1
        if pos > len(text):
            break
    return _strip(text, start, stop)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


# --- 2. prefixed tokens ------------------------------------------------------------------

# Each branch checks, after its literal prefix, that the prefix starts a word: the check
# before the prefix would cost the engine its first-letter skip (63 vs 124 MB/s measured). A
# token must also end a word, as a card must: a token glued to a card is neither, before or
# after the other is redacted, which keeps a second redaction from finding anything new.
_TOKEN = re.compile(
    r"(?:A(?:KIA|SIA|BIA|CCA)(?<![\w-]....)[0-9A-Z]{16}"
    r"|gh[pousr]_(?<![\w-]....)[A-Za-z0-9]{36,255}"
    r"|github_pat_(?<![\w-]...........)[A-Za-z0-9_]{22,255}"
    r"|sk-(?<![\w-]...)[A-Za-z0-9_-]{20,1000}"
    r"|xox[a-z](?<![\w-]....)(?:\.xox[a-z])?-[0-9]{1,20}-[A-Za-z0-9-]{10,1000}"
    r"|xapp-(?<![\w-].....)[0-9]{1,20}-[A-Za-z0-9-]{10,1000}"
    r"|hooks\.slack\.com/services/[A-Za-z0-9_/]{20,200}"
    r"|eyJ(?<![\w-]...)[\w-]{8,8000}\.eyJ[\w-]{8,8000}(?:\.[\w-]{0,8000})?)(?![\w-])",
    re.ASCII,
)
# 'ghp_xxxx…', 'xoxb-xxxxxxxxx-xxxx…': a documented token shape filled with x or *.
X_FILLED = re.compile(r"(?:[A-Za-z0-9]{1,12}[_-]){0,3}[xX*•](?:[_.-]?[xX*•]){3,}")
_SLACK_WEBHOOK = "hooks.slack.com/services/"


def prefixed_tokens(text: str) -> list[Span]:
    spans: list[Span] = []
    for match in _TOKEN.finditer(text):
        token, start = match.group(), match.start()
        kind = _token_kind(token)
        if kind is None:
            continue
        if token.startswith(_SLACK_WEBHOOK):  # the path after /services/ is the secret
            start += len(_SLACK_WEBHOOK)
        spans.append((start, match.end(), kind))
    return spans


def _token_kind(token: str) -> str | None:
    if X_FILLED.fullmatch(token):
        return None
    if token.startswith("sk-ant-"):
        return "anthropic_key"
    if token.startswith("sk-"):
        # A bare 'sk-' also starts slugs (CSS 'sk-fading-circle-2'); real keys mix cases and
        # digits, and project, service-account and admin keys say so in their prefix.
        if token.startswith(("sk-proj-", "sk-svcacct-", "sk-admin-")) or _mixed(token[3:]):
            return "openai_key"
        return None
    if token.startswith(("xox", "xapp-")):
        # Placeholders such as 'xoxe.xoxp-1-RANDOMSTRINGHERE' have no digit after the id.
        return "slack_token" if any(c.isdigit() for c in token.split("-", 2)[-1]) else None
    if token.startswith(_SLACK_WEBHOOK):
        return "slack_token"
    if token.startswith("eyJ"):
        return "jwt"
    if token.startswith(("gh", "github_pat_")):
        return "github_token"
    # AKIAIOSFODNN7EXAMPLE and AKIAXXXXXXXXXXXXXXXX are the documentation's placeholders.
    return None if token.endswith("EXAMPLE") or set(token[4:]) == {"X"} else "aws_key"


def _mixed(body: str) -> bool:
    return (
        any(c.isdigit() for c in body)
        and any(c.isupper() for c in body)
        and any(c.islower() for c in body)
    )


# --- 3. cards ----------------------------------------------------------------------------

# A card is a word of its own (no letter, digit or _ on either side); the start is checked
# after the first digit for the same first-character skip as the tokens. Three groups at
# least: two groups of at most six digits cannot hold thirteen.
_CARD = re.compile(
    r"[0-9](?<![0-9A-Za-z_][0-9])"
    r"(?:[0-9]{12,18}(?![0-9A-Za-z_])|[0-9]{2,5}(?:[ -][0-9]{3,6}(?![0-9A-Za-z_])){2,7})"
)
_GROUP = re.compile(r"[0-9]+")


def cards(text: str) -> list[Span]:
    spans: list[Span] = []
    for match in _CARD.finditer(text):
        groups = [(g.start(), g.end()) for g in _GROUP.finditer(text, match.start(), match.end())]
        # Only windows that start where the number starts, longest first: a card may be
        # followed by other numbers ('4111 1111 1111 1111 2024'), but a tracking number's tail
        # ('6205 [5000 0000 0000 005]') is not a card.
        i = 0
        while i < len(groups):
            for j in range(len(groups) - 1, i - 1, -1):
                if _is_card(text, groups[i : j + 1]):
                    spans.append((groups[i][0], groups[j][1], "card"))
                    break
            else:
                break
            i = j + 1
    return spans


def _is_card(text: str, groups: list[tuple[int, int]]) -> bool:
    digits = "".join(text[a:b] for a, b in groups)
    if not 13 <= len(digits) <= 19 or digits[0] == "0":  # no issuer number starts with 0
        return False
    if len(digits) == 14 and digits[:2] in ("19", "20"):
        return False  # a YYYYMMDDhhmmss stamp: 14-digit cards (Diners) start with 30, 36, 38
    if len(groups) > 1:
        separators = {text[b] for _, b in groups[:-1]}
        if len(separators) > 1 or any(not 3 <= b - a <= 6 for a, b in groups):
            return False
    return _luhn(digits)


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        d = ord(char) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0
