"""Secret redaction: credentials in screen text are replaced before anything is stored.

Each hit becomes ``[REDACTED:<kind>]`` and its label stays, so ``password: hunter2`` is stored
as ``password: [REDACTED:password]``. The text goes through four scans, each left to right:

1. ``private_key``: a PEM ``-----BEGIN … PRIVATE KEY-----`` body, up to its END line or, when
   OCR lost that line, to the end of the base64-looking lines. First, so that no fragment of a
   key body is half-redacted as something else.
2. Prefixed tokens: ``aws_key``, ``github_token``, ``anthropic_key``, ``openai_key``,
   ``slack_token``, ``jwt``. One regex whose branches all begin with a literal, so the engine
   skips to candidate first letters instead of trying every position.
3. ``card``: 13-19 digits, bare or in groups of 3-6 split by one kind of separator, that pass
   the Luhn check.
4. Labelled values (``password``, ``secret``): ``password: …``, ``DB_PASSWORD="…"``,
   ``api_key=…``, ``token: …``, ``Bearer …``, ``curl -u user:pass``, ``scheme://user:pass@``.
   Labels are found with ``str.find`` on a lower-cased copy: a case-insensitive regex of the
   same words ran at 8.5 MB/s on ``screen_corpus.py`` text, lower() and finds at 99 MB/s. Last,
   so that a value already redacted as a token keeps its precise kind.

A value that starts with ``[`` is never redacted again, and no pattern matches inside a marker,
so redacting twice changes nothing. Every pattern needs a digit, an upper-case letter or one of
``= : , - _ . / ' " ``` ``; text without them comes back unchanged.

Every repetition is bounded, and each token branch checks after its literal prefix that it
starts a word, so a run of prefixes (``eyJeyJeyJ…``) is scanned once, not once per prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

__all__ = ["KINDS", "Redaction", "redact"]

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

_MARK = "[REDACTED:"
_QUOTES = "\"'`"
_QUOTE_SET = frozenset(_QUOTES)

Span = tuple[int, int, str]


class Redaction(msgspec.Struct, frozen=True):
    """The redacted text and, per kind, how many secrets were replaced."""

    text: str
    counts: dict[str, int]


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}
    for scan in (_private_keys, _tokens, _cards, _labelled):
        text = _apply(text, scan(text), counts)
    return Redaction(text, counts)


def _apply(text: str, spans: list[Span], counts: dict[str, int]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    last = 0
    for start, end, kind in spans:
        parts += (text[last:start], f"{_MARK}{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    parts.append(text[last:])
    return "".join(parts)


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


def _private_keys(text: str) -> list[Span]:
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
        if start < stop and not text.startswith(_MARK, start):
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
_X_FILLED = re.compile(r"(?:[A-Za-z0-9]{1,12}[_-]){0,3}[xX*•](?:[_.-]?[xX*•]){3,}")
_SLACK_WEBHOOK = "hooks.slack.com/services/"


def _tokens(text: str) -> list[Span]:
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
    if _X_FILLED.fullmatch(token):
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


# --- 4. labelled values ------------------------------------------------------------------


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_IDENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_IDENT_MAX = 64
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Endings also catch words run together (PGPASSWORD, mytoken); short words must stand alone
# (bypass, compass, oauth are not labels).
_PASSWORD_ENDINGS = ("password", "passwd", "passphrase")
_PASSWORD_WORDS = frozenset({"pass", "pwd"})
_SECRET_ENDINGS = ("secret", "token", "apikey")
_SECRET_WORDS = frozenset({"credential", "credentials", "creds", "auth"})
# A label that names something about the secret, not the secret: password_file, tokenUrl,
# credentialsId, SECRET_NAME, passwordVariable, AuthSource.
_NOT_THE_SECRET = _word_set(
    "id ids name names url uri urls endpoint host file path dir type kind mode method label "
    "field input prompt length len size min max count limit policy hash hashed salt reset "
    "expiry expires expiration ttl timeout source provider enabled required variable var ref "
    "regex pattern header param format version algorithm scope usage env arn location manager "
    "user username login email hint text placeholder status"
)
_NOT_A_HOLDER = frozenset({"public", "change", "reset", "forgot"})  # publicToken, ChangePassword
# An empty operator (white space only) is for '--password hunter2'; 'is' for prose.
_OPERATOR = re.compile(
    r"""(["'`]?)[ \t]{0,8}(=>|:=|[!=]==?|[:=,]|is(?=[ \t])|(?=[ \t]))[ \t]{0,8}"""
)
_API_KEY = re.compile(r"api[-_ ]?key(?![a-z])")
_BARE_VALUE = re.compile(r"\S{1,512}")
_URL_PARAM_VALUE = re.compile(r"[^\s&#]{1,512}")
_VALUE_MAX = 512
_TOKEN68 = r"([A-Za-z0-9._~+/-]{8,4096}=*)"  # RFC 7235 credentials
_BEARER = re.compile(r"(?:Bearer|bearer|BEARER)[ \t]+" + _TOKEN68)
_AUTHORIZATION = re.compile(
    r"""(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?i:basic|token|api-token|bearer)[ \t]+"""
    + _TOKEN68
)
_CURL_USER = re.compile(r"(?:--user|-u)(?:[ \t]+|=)(\S{1,256})")
_URL_CREDENTIALS = re.compile(r"://[^\s:/@]{1,64}:([^\s/@]{1,256})@")

# Values that are not secrets: references ($VAR, ${x}, {{ x }}, %X%, <your token>, &lt;…),
# already-redacted markers ([REDACTED:…]) and masks.
_REFERENCE_STARTS = ("$", "{", "<", "[", "%", "&lt;")
_DUMMY_VALUES = _word_set(
    "password passwd pass secret token apikey api_key none null nil true false undefined "
    "empty required optional redacted hidden masked changeme placeholder test"
)
_DUMMY_MARK = re.compile(r"fake|dummy|placeholder|changeme|your")
# A value that names a secret rather than holding it: env.DB_PASSWORD, '#add-password',
# arn:…:policy/IAMUserChangePassword. The word must follow a separator or a camel-case hump;
# 'thisismypassword' and 'Password123' are passwords.
_NAMES_A_SECRET = re.compile(
    r"(?:[_./:#$-]|(?<=[a-z])(?=[A-Z]))(?i:password|passwd|secret|token|api_?key|credentials?)"
)
_DOTTED_NUMBER = re.compile(r"[0-9]+(?:[.:/-][0-9]+)+")
_CODE_REFERENCE = re.compile(
    r"[A-Za-z_][\w.]*\("
    r"|(?:self|this|env|os|process|config|settings|args|opts|options|params|props|request|req"
    r"|ctx|data|vars|values|secrets|input|form)\.",
    re.ASCII,
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _labelled(text: str) -> list[Span]:
    low = text.lower()
    if len(low) != len(text):  # a few characters (İ) lower to two: keep offsets aligned
        low = text.translate(_ASCII_LOWER)
    hits = sorted((pos, trigger) for trigger in _HANDLERS for pos in _find_all(low, trigger))
    spans: list[Span] = []
    cursor = 0
    for pos, trigger in hits:
        if pos < cursor:  # inside a value already redacted
            continue
        span = _HANDLERS[trigger](text, low, pos, len(trigger))
        if span and span[0] >= cursor:
            spans.append(span)
            cursor = span[1]
    spans.sort()  # a value compared from the left ("x" == password) precedes its label
    return spans


def _find_all(low: str, word: str) -> list[int]:
    found = []
    pos = low.find(word)
    while pos >= 0:
        found.append(pos)
        pos = low.find(word, pos + 1)
    return found


def _label(text: str, low: str, pos: int, size: int) -> Span | None:
    """``<identifier with a secret word> <operator> <value>``: the value's span and kind."""
    start = pos
    while start > 0 and pos - start < _IDENT_MAX and text[start - 1] in _IDENT:
        start -= 1
    if start > 0 and text[start - 1] in _IDENT:  # longer than any label
        return None
    end = pos + size
    while end < len(text) and end - pos < _IDENT_MAX and text[end] in _IDENT:
        end += 1
    operator = _OPERATOR.match(text, end)
    op = operator.group(2) if operator else None
    flag = text.startswith("--", start)
    if operator is None or (op == "" and not flag):
        return _compared_before(text, start, end)
    kind = _label_kind(text[start:end])
    if kind is None:
        return None
    opening = text[start - 1] if start and text[start - 1] in _QUOTES else ""
    closing = operator.group(1)
    if closing and closing != opening:  # the label ends a longer string: "…a-strong-password":
        return None
    value = _value(text, operator.end(), url_param=start > 0 and text[start - 1] in "?&")
    if value is None:
        return None
    v_start, v_end, quote = value
    if opening and not closing and quote == opening:  # 'password = '.$x: the string ended
        return None
    if op == ":" and not closing and not quote and operator.end() == operator.end(2):
        return None  # 'io.jsonwebtoken:jjwt-jackson': a bare label is written 'label: value'
    if op == "," and not (opening and closing and quote and _looks_random(text[v_start:v_end])):
        return None  # getenv("API_TOKEN", "…"), but not ("password", "email")
    if op in ("==", "!=", "===", "!==") and not _looks_random(text[v_start:v_end]):
        return None  # if token == 'login': code compares labels with keywords
    if op == "is" and not quote:
        return None  # 'the password is "centipede"', but not 'the password is wrong'
    if op == "" and text.startswith("-", v_start):
        return None  # '--password --verbose': the next flag, not a value
    if not _is_secret_value(text[v_start:v_end], quoted=bool(quote)):
        return None
    return v_start, v_end, kind


def _label_kind(identifier: str) -> str | None:
    words = [w.lower() for w in _WORDS.findall(identifier)]
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        # A short word is the label only at its end (db_pass, user_auth, X-Octopus-ApiKey): in
        # the middle it is part of a name (118_arm_pass_all.dpatch, SCM_CREDS.diff).
        last = all(w.isdigit() for w in words[i + 1 :])
        if word.endswith(_PASSWORD_ENDINGS) or (word in _PASSWORD_WORDS and last):
            kind = "password"
        elif word.endswith(_SECRET_ENDINGS) or (
            last
            and (
                (word in _SECRET_WORDS and not (word == "auth" and before == "o"))
                or (word == "key" and before == "api")
            )
        ):
            kind = "secret"
        else:
            continue
        if _NOT_A_HOLDER.intersection(words[:i]) or _NOT_THE_SECRET.intersection(words[i + 1 :]):
            return None
        return kind
    return None


def _value(text: str, pos: int, url_param: bool) -> tuple[int, int, str] | None:
    """The value at ``pos``: quoted (the span inside the quotes) or bare (up to white space)."""
    if text.startswith("@", pos) and text[pos + 1 : pos + 2] in _QUOTE_SET:
        pos += 1  # C# verbatim string @"…"
    if text[pos : pos + 1] in _QUOTE_SET:
        quote = text[pos]
        limit = min(len(text), pos + 1 + _VALUE_MAX)
        close = pos + 1
        while (close := text.find(quote, close, limit)) > 0 and text[close - 1] == "\\":
            close += 1
        if close > 0 and "\n" not in text[pos + 1 : close]:
            return pos + 1, close, quote
        pos += 1  # unterminated, as when a line is cut: the rest of the word is the value
    bare = (_URL_PARAM_VALUE if url_param else _BARE_VALUE).match(text, pos)
    if bare is None:
        return None
    end = bare.end()
    while end > pos and text[end - 1] in ",;" + _QUOTES:
        end -= 1
    return pos, end, ""


def _is_secret_value(value: str, quoted: bool) -> bool:
    if len(value) < 3 or value.startswith(_REFERENCE_STARTS) or len(set(value)) == 1:
        return False  # flags (0, 1), references, masks (******, ######)
    if _MARK in value:
        return False  # already redacted inside: replacing it whole would lose that count
    low = value.lower()
    if low in _DUMMY_VALUES or _DUMMY_MARK.search(low) or _X_FILLED.fullmatch(value):
        return False
    if _NAMES_A_SECRET.search(value) or _DOTTED_NUMBER.fullmatch(value):
        return False  # env.DB_PASSWORD; an OID, version or date: SERVER_AUTH = '1.3.6.1.5.5.7.3.1'
    return quoted or not _CODE_REFERENCE.match(value)


def _looks_random(value: str) -> bool:
    """Digits or symbols, as a key has and a keyword ('login', "account") has not."""
    return len(value) >= 8 and any(not c.isalpha() and c not in " _-." for c in value)


def _compared_before(text: str, start: int, end: int) -> Span | None:
    """``"value" == password``: a literal compared with the label from its left."""
    i = start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i < 2 or text[i - 2 : i] not in ("==", "!="):
        return None
    i -= 2
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i < 2 or text[i - 1] not in _QUOTE_SET:
        return None
    open_at = text.rfind(text[i - 1], max(0, i - 2 - _VALUE_MAX), i - 1)
    kind = _label_kind(text[start:end])
    if open_at < 0 or kind is None or "\n" in text[open_at:i]:
        return None
    value = text[open_at + 1 : i - 1]
    if not (_looks_random(value) and _is_secret_value(value, quoted=True)):
        return None
    return open_at + 1, i - 1, kind


def _bearer(text: str, low: str, pos: int, size: int) -> Span | None:
    if pos and text[pos - 1].isalpha():  # cupbearer
        return None
    match = _BEARER.match(text, pos)
    return _scheme_value(match, capitalised=text.startswith("Bearer", pos))


def _authorization(text: str, low: str, pos: int, size: int) -> Span | None:
    if low.startswith("authorization", pos):
        return _scheme_value(_AUTHORIZATION.match(text, pos), capitalised=True)
    return _label(text, low, pos, size)


def _scheme_value(match: re.Match[str] | None, capitalised: bool) -> Span | None:
    if match is None:
        return None
    start, end = match.span(1)
    value = match.group(1)
    # Prose says 'bearer instruments'; a credential has a digit or symbol, or at least is long
    # and follows the HTTP spelling 'Bearer'.
    if not (any(not c.isalpha() for c in value) or (capitalised and len(value) >= 16)):
        return None
    return (start, end, "secret") if _is_secret_value(value, quoted=True) else None


def _api_key(text: str, low: str, pos: int, size: int) -> Span | None:
    if not _API_KEY.match(low, pos):
        return None
    if low[pos + 3] == " ":  # 'API Key: …' as a form label
        value = _OPERATOR.match(text, pos + 7)
        if value is None or value.group(2) not in (":", "="):
            return None
        found = _value(text, value.end(), url_param=False)
        if found is None:
            return None
        secret = text[found[0] : found[1]]  # two words are prose-like: 'API key: see below'
        if _looks_random(secret) and _is_secret_value(secret, quoted=bool(found[2])):
            return found[0], found[1], "secret"
        return None
    return _label(text, low, pos, size)


def _curl_user(text: str, low: str, pos: int, size: int) -> Span | None:
    """``curl -u user:password``: the password, or the user when the password is empty."""
    if pos and text[pos - 1] == "-":
        pos -= 1
    if pos and not text[pos - 1].isspace():
        return None
    match = _CURL_USER.match(text, pos)
    if match is None:
        return None
    start, end = _unquote(text, *match.span(1))
    colon = text.find(":", start, end)
    if colon < 0 or text.startswith(_REFERENCE_STARTS, start) or _MARK in text[start:end]:
        return None  # no password; a reference: <user:password>, ${user}:${password}
    user, password = _unquote(text, start, colon), _unquote(text, colon + 1, end)
    target = password if password[0] < password[1] else user
    value = text[target[0] : target[1]]
    if value.isdigit() or not _is_secret_value(value, quoted=True):
        return None  # docker's -u 1000:1000 is a uid and gid
    return target[0], target[1], "password"


def _unquote(text: str, start: int, end: int) -> tuple[int, int]:
    if start < end and text[start] in _QUOTES:
        start += 1
    if start < end and text[end - 1] in _QUOTES:
        end -= 1
    return start, end


def _url_credentials(text: str, low: str, pos: int, size: int) -> Span | None:
    match = _URL_CREDENTIALS.match(text, pos)
    if match is None or _MARK in match[0] or not _is_secret_value(match[1], quoted=True):
        return None
    return match.start(1), match.end(1), "password"


# Trigger (found in the lower-cased text) -> handler(text, lower-cased text, position, length).
_HANDLERS: dict[str, Callable[[str, str, int, int], Span | None]] = {
    "pass": _label,
    "pwd": _label,
    "secret": _label,
    "token": _label,
    "cred": _label,
    "auth": _authorization,
    "api": _api_key,
    "bearer": _bearer,
    "-u": _curl_user,
    "://": _url_credentials,
}
