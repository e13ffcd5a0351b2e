"""Secrets told by their label: ``password: …``, ``api_key=…``, ``Bearer …``, ``-u user:pass``.

Scan 4 of ``capture.redact``. Labels are found with ``str.find`` on a lower-cased copy (the
reason is in that module's docstring); each trigger word has a handler that reads the label
around it and the value after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from capture._shapes import MARK, X_FILLED, Span

_QUOTES = "\"'`"
_QUOTE_SET = frozenset(_QUOTES)
# OCR reads a straight quote as a curly one, and either end as either curl: the value of
# 'password = "a b c"' read as 'password = “a b c"' ends at any of its closers.
_CLOSERS = {
    '"': '"“”',
    "“": '"“”',
    "”": '"“”',
    "'": "'‘’",
    "‘": "'‘’",
    "’": "'‘’",
    "`": "`",
}


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


def labelled_values(text: str) -> list[Span]:
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
    if text[pos : pos + 1] in _CLOSERS:
        quote = text[pos]
        closers = _CLOSERS[quote]
        limit = min(len(text), pos + 1 + _VALUE_MAX)
        close = pos + 1
        while close < limit and (text[close] not in closers or text[close - 1] == "\\"):
            close += 1
        if close < limit and "\n" not in text[pos + 1 : close]:
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
    if MARK in value:
        return False  # already redacted inside: replacing it whole would lose that count
    low = value.lower()
    if low in _DUMMY_VALUES or _DUMMY_MARK.search(low) or X_FILLED.fullmatch(value):
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
    if colon < 0 or text.startswith(_REFERENCE_STARTS, start) or MARK in text[start:end]:
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
    if match is None or MARK in match[0] or not _is_secret_value(match[1], quoted=True):
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
