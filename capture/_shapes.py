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

# OCR's way with a token (measured on real windows: tests/test_redact_ocr.py): a space after
# the dots of a JWT and around the hyphens of a Slack token or an API key's prefix, a comma
# for a dot, a line break where the terminal wrapped it, a space inside a long run of
# letters, and misread letters: 'eyI' or 'ey1' for 'eyJ', ']' or '|' for l, I or J, '@' for
# 0, '0' for o. The JWT, Slack and API key branches take all of that; the shape is then
# checked on the token with its spaces and line breaks squeezed out and its commas read as
# dots (``_squeezed``).
_T = r"[\w|@\]-]"  # a character of a token body, OCR's misreadings included
_SPACED = rf"{_T}{{1,2000}}(?:[ \n]{_T}{{1,2000}}){{0,32}}"
_DOT = r" ?[.,] ?"
# Each branch checks, after its literal prefix, that the prefix starts a word: the check
# before the prefix would cost the engine its first-letter skip (63 vs 124 MB/s measured). A
# token must also end a word, as a card must: a token glued to a card is neither, before or
# after the other is redacted, which keeps a second redaction from finding anything new.
_TOKEN = re.compile(
    r"(?:A(?:KIA|SIA|BIA|CCA)(?<![\w-]....)[0-9A-Z]{16}"
    r"|gh[pousr]_(?<![\w-]....)[A-Za-z0-9]{36,255}"
    r"|github_pat_(?<![\w-]...........)[A-Za-z0-9_]{22,255}"
    r"|sk-(?<![\w-]...)(?:(?:proj|svcacct|admin|ant(?: ?- ?[a-z]{3,5}[0-9]{2})?) ?- ?)?"
    r"[A-Za-z0-9_-]{1,1000}"
    rf"|x[o0]x[a-z](?<![\w-]....)(?:\.x[o0]x[a-z])?(?: ?- ?[0-9]{{1,20}}){{1,4}} ?- ?{_T}{{1,1000}}"
    r"|xapp-(?<![\w-].....)[0-9]{1,20}-[A-Za-z0-9-]{10,1000}"
    r"|hooks\.slack\.com/services/[A-Za-z0-9_/]{20,200}"
    # Three segments, each perhaps split by OCR, or two with no space in the second.
    rf"|ey[JIl1|](?<![\w-]...)(?:{_SPACED}{_DOT}ey[JIl1|]?{_SPACED}{_DOT}{_T}{{1,8000}}"
    rf"|{_SPACED}{_DOT}ey[JIl1|]?{_T}{{1,8000}}(?:\.{_T}{{0,8000}})?))(?![\w-])",
    re.ASCII,
)
_JWT = re.compile(r"ey[JIl1|][^.]{8,}\.ey[^.]{8,}(?:\.[^.]*)?", re.ASCII)
_SLACK = re.compile(r"x[o0]x[a-z](?:\.x[o0]x[a-z])?-[0-9]{1,20}-[^\s]{10,}", re.ASCII)
# The shortest last part of a token of each kind: a JWT's signature (HS256: 32 bytes, 43
# characters of base64), a Slack bot token's secret (24), a whole OpenAI key (a legacy
# 'sk-' and 48 characters) and a whole Anthropic key ('sk-ant-api03-', 93 characters, 'AA').
# A shorter one followed by a space and a piece that looks like a token's, or a piece
# before one that does, is the same token split by OCR (``_rejoined``).
_TAIL = {"jwt": 43, "slack_token": 24, "openai_key": 51, "anthropic_key": 108}
_PIECE = re.compile(r" ([\w|@\]-]{1,2000})", re.ASCII)
# A piece of a token rather than a word: a digit, '_', '-', '@', '|' or ']', or a capital
# after its first letter. 'ok', 'done' and 'The' end a token; 'ftJeZ4', '_whiL' do not.
_TOKEN_LIKE = re.compile(r"[\w|@\]-]*(?:[0-9_|@\]-]|(?<=.)[A-Z])[\w|@\]-]*", re.ASCII)
# 'ghp_xxxx…', 'xoxb-xxxxxxxxx-xxxx…': a documented token shape filled with x or *.
X_FILLED = re.compile(r"(?:[A-Za-z0-9]{1,12}[_-]){0,3}[xX*•](?:[_.-]?[xX*•]){3,}")
_SLACK_WEBHOOK = "hooks.slack.com/services/"


def prefixed_tokens(text: str) -> list[Span]:
    spans: list[Span] = []
    for match in _TOKEN.finditer(text):
        token, start, end = match.group(), match.start(), match.end()
        if spans and start < spans[-1][1]:  # inside the pieces the last token took
            continue
        kind = _token_kind(token)
        if kind in _TAIL:
            end = _rejoined(text, end, _tail(kind, token), _TAIL[kind])
            kind = _token_kind(text[start:end])
        if kind is None:
            continue
        if token.startswith(_SLACK_WEBHOOK):  # the path after /services/ is the secret
            start += len(_SLACK_WEBHOOK)
        spans.append((start, end, kind))
    return spans


def _rejoined(text: str, end: int, tail: int, shortest: int) -> int:
    """Where a token whose last part holds ``tail`` characters ends, once the pieces OCR
    split off it are taken back: pieces after one space each, while the part is shorter than
    ``shortest``."""
    while tail < shortest and (piece := _PIECE.match(text, end)):
        if not _TOKEN_LIKE.fullmatch(piece[1]):
            after = _PIECE.match(text, piece.end())
            if after is None or not _TOKEN_LIKE.fullmatch(after[1]):
                break
        tail, end = tail + len(piece[1]), piece.end()
    return end


def _tail(kind: str, token: str) -> int:
    """The characters of a token's last part (``_TAIL``); a JWT without a signature has
    none to split."""
    squeezed = _squeezed(token)
    if kind == "jwt":
        parts = squeezed.split(".")
        return len(parts[2]) if len(parts) == 3 else _TAIL[kind]
    if kind == "slack_token":
        return len(squeezed.rsplit("-", 1)[-1])
    return len(squeezed)


def _squeezed(token: str) -> str:
    return token.replace(" ", "").replace("\n", "").replace(",", ".")


def _token_kind(found: str) -> str | None:
    token = _squeezed(found)
    if X_FILLED.fullmatch(token):
        return None
    if token.startswith("sk-ant-"):
        return "anthropic_key"
    if token.startswith("sk-") and len(token) < 23:  # 'sk-' and 20 characters at least
        return None
    if token.startswith("sk-"):
        # A bare 'sk-' also starts slugs (CSS 'sk-fading-circle-2'); real keys mix cases and
        # digits, and project, service-account and admin keys say so in their prefix.
        if token.startswith(("sk-proj-", "sk-svcacct-", "sk-admin-")) or _mixed(token[3:]):
            return "openai_key"
        return None
    if token.startswith("x"):
        if not token.startswith("xapp-") and not _SLACK.fullmatch(token):
            return None
        # Placeholders such as 'xoxe.xoxp-1-RANDOMSTRINGHERE' have no digit after the id.
        return "slack_token" if any(c.isdigit() for c in token.split("-", 2)[-1]) else None
    if token.startswith(_SLACK_WEBHOOK):
        return "slack_token"
    if token.startswith("ey"):
        return "jwt" if _JWT.fullmatch(token) else None
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


# Every card this scan takes is at least 13 digits with single spaces or dashes between
# them: with spaces and dashes dropped and digits read as 0, a run of 13 zeros. 1.5% of the
# corpus's screens hold one; looking for it (~2 µs a screen of 1.7 KB) spares the others
# the scan (~10 µs).
_DIGITS_AS_ZERO = bytes(48 if 48 <= b <= 57 else 120 for b in range(256))
_THIRTEEN_DIGITS = b"0" * 13


def cards(text: str) -> list[Span]:
    squeezed = text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO, b" -")
    if _THIRTEEN_DIGITS not in squeezed:
        return []
    return _cards(text)


def _cards(text: str) -> list[Span]:
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
