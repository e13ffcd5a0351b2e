"""Secret redaction: the peer-derived data set, each kind, placeholders, properties, growth."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bench.redact import false_positive_rate, load_rows, recall, score, score_table
from capture._shapes import _cards, cards
from capture.redact import KINDS, Redaction, redact

DATA = Path(__file__).resolve().parent / "data" / "secrets.jsonl"  # see data/PROVENANCE.md


def redacted(text: str) -> str:
    return redact(text).text


# --- the data set -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def scores() -> dict[str, Any]:
    return score(load_rows(DATA), redacted)


def test_core_recall_is_at_least_99_percent(scores: dict[str, Any]) -> None:
    assert recall(scores, "core") >= 0.99, _report(scores)


def test_extended_recall_is_at_least_95_percent(scores: dict[str, Any]) -> None:
    assert recall(scores, "extended") >= 0.95, _report(scores)


def test_hard_negatives_are_left_alone_at_least_99_percent_of_the_time(
    scores: dict[str, Any],
) -> None:
    assert false_positive_rate(scores, "hard") <= 0.01, _report(scores)


def test_placeholder_negatives_are_mostly_left_alone(scores: dict[str, Any]) -> None:
    # Redacting a placeholder is a mild false positive with no target of its own (strict
    # negatives have none either: the bench reports both); a tenth flags a regression.
    assert false_positive_rate(scores, "placeholder") <= 0.10, _report(scores)


def _report(scores: dict[str, Any]) -> str:
    return score_table(scores) + "\n" + "\n".join(scores["failures"])


# --- the result -------------------------------------------------------------------------


def test_result_is_a_frozen_struct_with_text_and_counts() -> None:
    result = redact("password: hunter2 and 4111 1111 1111 1111")
    assert isinstance(result, Redaction)
    assert result.counts == {"card": 1, "password": 1}
    with pytest.raises(AttributeError):
        result.text = "x"  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(result), type=Redaction) == result


def test_text_without_secrets_comes_back_unchanged_with_no_counts() -> None:
    text = "def main():\n    print('hello, world')  # 2024-06-11 09:12:44\n"
    assert redact(text) == Redaction(text, {})


# --- each kind --------------------------------------------------------------------------

CASES = [
    # (input, expected output)
    ("password: hunter2", "password: [REDACTED:password]"),
    ('DB_PASSWORD="value with spaces"', 'DB_PASSWORD="[REDACTED:password]"'),
    ("api_key=abc123def456", "api_key=[REDACTED:secret]"),
    ("token: 3fea6af1349166ea", "token: [REDACTED:secret]"),
    ('{"client_secret":"s3cr3t-v4lue"}', '{"client_secret":"[REDACTED:secret]"}'),
    ("spring.datasource.password=Sup3r!", "spring.datasource.password=[REDACTED:password]"),
    ("mysql --password=Tr0ub4dor --user=root", "mysql --password=[REDACTED:password] --user=root"),
    ("wget --password hunter22 http://x", "wget --password [REDACTED:password] http://x"),
    ("Authorization: Bearer mF_9.B5f-4.1JqM", "Authorization: Bearer [REDACTED:secret]"),
    ("Authorization: Basic QWxhZGRpbjpvcGVu", "Authorization: Basic [REDACTED:secret]"),
    ("curl -u elastic:P@ssw0rd https://x", "curl -u elastic:[REDACTED:password] https://x"),
    ("postgres://app:s3cr3tpw@db:5432/app", "postgres://app:[REDACTED:password]@db:5432/app"),
    ("id AKIAQXRYONJ3DYBVZXG2 ok", "id [REDACTED:aws_key] ok"),
    ("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", "[REDACTED:github_token]"),
    ("sk-ant-api03-" + "a1B2" * 10, "[REDACTED:anthropic_key]"),
    ("sk-proj-" + "a1B2" * 10, "[REDACTED:openai_key]"),
    ("xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1", "[REDACTED:slack_token]"),
    (
        "https://hooks.slack.com/services/T1/B2/nzk0zace5iLKP35e",
        "https://hooks.slack.com/services/[REDACTED:slack_token]",
    ),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "[REDACTED:jwt]"),
    ("card 4111-1111-1111-1111 exp 12/27", "card [REDACTED:card] exp 12/27"),
    ("4111 1111 1111 1111 2024", "[REDACTED:card] 2024"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[1][:40] for c in CASES])
def test_each_kind_is_replaced_by_its_marker(text: str, expected: str) -> None:
    assert redacted(text) == expected


# As Tesseract read them off real windows (tests/test_redact_ocr.py): spaces after a JWT's
# dots and around a Slack token's hyphens, a comma for a dot, 'eyI' for 'eyJ', a line break
# where the terminal wrapped, a long run of letters split by a space, '@' for 0.
OCR_READINGS = [
    ("eyJhbGci0iJIUZI1NiJ9. eyJzdWIi0iIxMjM0In0. dBjftJeZ4CVPmB92K27u", "[REDACTED:jwt]"),
    ("eyIhbGciOiJIUzI1NiJ9.eyIzdWIiOiIxIn0.c2lnbmF0dXJl", "[REDACTED:jwt]"),
    ("eyJhbGci0i JIUZIINi JS, eyJzdW1i0i 1OMiJ9,dBjftJeZ4CVPmB92K27uhbU", "[REDACTED:jwt]"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx\nMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4", "[REDACTED:jwt]"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBj ftJeZ4CVPmB92K27uhbU done", "[REDACTED:jwt] done"),
    ("xoxb- 263594206564 - 2643817255233 - FGqddMF8tO8v8N70q4i57vs1", "[REDACTED:slack_token]"),
    (
        "xoxb-263594206564-2643817255233-FGqddMF8t08v8N7094 iS7vs1 done",
        "[REDACTED:slack_token] done",
    ),
    ("xoxb-263594206564-2643817255233-FGqddMF8t@8v8N70q4i57vs1", "[REDACTED:slack_token]"),
    ("sk-proj -alB2c3D4e5F6g7H8i9JOk1L2m3N405P6q7R8s9TO done", "[REDACTED:openai_key] done"),
    (
        "sk-ant-api03-Xy9a1B2c3D4e5F697H8i 9JOk1L2m3N405P6q7R8s9TOuvwxyzAA done",
        "[REDACTED:anthropic_key] done",
    ),
]


@pytest.mark.parametrize(("text", "expected"), OCR_READINGS)
def test_tokens_as_ocr_reads_them_are_redacted_whole(text: str, expected: str) -> None:
    assert redacted(text) == expected


OCR_LOOKALIKES = [
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl ok, then the next words",
    "the xoxb- prefix - 2 kinds - see the docs",
    "eyes, eyebrows. eyelids, eyelashes",
    "eyJhbGci, and then eyJ again",
]


@pytest.mark.parametrize("text", OCR_LOOKALIKES)
def test_what_ocr_tolerance_must_not_take(text: str) -> None:
    expected = text.replace("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "[REDACTED:jwt]")
    assert redacted(text) == expected


def test_password_keeps_its_label() -> None:
    assert redacted("password: hunter2") == "password: [REDACTED:password]"


def test_token_inside_a_bearer_header_keeps_its_precise_kind() -> None:
    key = "sk-proj-" + "Xy9" * 16
    assert redacted(f"Authorization: Bearer {key}") == "Authorization: Bearer [REDACTED:openai_key]"


def test_card_must_pass_the_luhn_check() -> None:
    assert redacted("4111 1111 1111 1111") == "[REDACTED:card]"
    assert redacted("4111 1111 1111 1112") == "4111 1111 1111 1112"


def test_card_needs_13_to_19_digits_in_one_kind_of_grouping() -> None:
    for text in (
        "4242 4242 4242",
        "42424242424242424242",
        "4111-1111 1111-1111",
        "978-0-306-40615-7",
    ):
        assert redacted(text) == text


def test_timestamp_is_not_taken_for_a_card() -> None:
    assert (
        redacted("llvm (1:10~++20200121023453+de4b2a7)") == "llvm (1:10~++20200121023453+de4b2a7)"
    )


def test_private_key_keeps_its_header_and_footer() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpQIBAAKCAQEAn6/O8li\n-----END RSA PRIVATE KEY-----"
    assert redacted(key) == (
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private_key]\n-----END RSA PRIVATE KEY-----"
    )


def test_private_key_cut_short_by_ocr_is_redacted_to_the_end_of_its_body() -> None:
    text = (
        "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhk\nKs14IReLcYg=\n(truncated) Show more"
    )
    assert redacted(text) == (
        "key:\n-----BEGIN PRIVATE KEY-----\n[REDACTED:private_key]\n(truncated) Show more"
    )


def test_public_keys_and_certificates_are_not_private_keys() -> None:
    for kind in ("PUBLIC KEY", "CERTIFICATE", "PGP PUBLIC KEY BLOCK"):
        text = f"-----BEGIN {kind}-----\nMIICmzCCAYMCBgF4HR7HNDANBgkq\n-----END {kind}-----"
        assert redacted(text) == text


PLACEHOLDERS = [
    "GH_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_access_key: AKIAIOSFODNN7EXAMPLE",
    "xoxe.xoxp-1-RANDOMSTRINGHERE",
    "Password: ********",
    'password = "somefakekey"',
    "curl -u <user:password> https://test.com",
    "Authorization: Bearer XXXXXXXXXXXX",
]


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_placeholders_are_left_alone(text: str) -> None:
    assert redacted(text) == text


REFERENCES = [
    "password: ${link}",
    'export PGPASSWORD="$db_password"',
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password = env.PERKEEP_TEST_PASSWORD",
    'api_key = os.environ["API_KEY"]',
    "password = getpass.getpass()",
    'curl -u "${username}:${password}" https://x',
    "Authorization: Bearer $API_KEY",
]


@pytest.mark.parametrize("text", REFERENCES)
def test_references_to_secrets_are_not_secrets(text: str) -> None:
    assert redacted(text) == text


NAMES = [
    "PASSWORD_MIN_LENGTH = 8",
    "token_type: bearer",
    'credentialsId: "29f63271-dc2f-4734-8221-5b31b5169bac"',
    'publicToken = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
    "  * 118_arm_pass_all.dpatch: new kludge patch",
    "if token == 'login':",
    "SERVER_AUTH = '1.3.6.1.5.5.7.3.1'",
    "Your password is incorrect. The token expired.",
    "passwordless login enabled",
    "echo 'password = '.$p['config'];",
    'sb.append("MasterUserPassword: " + getMasterUserPassword());',
]


@pytest.mark.parametrize("text", NAMES)
def test_names_and_prose_about_secrets_are_left_alone(text: str) -> None:
    assert redacted(text) == text


def test_empty_assignments_are_left_alone() -> None:
    for text in ('api_key = ""', "secret: ''", "token: \nexpires_in: 3600", "GITHUB_API_KEY=\nX=1"):
        assert redacted(text) == text


# --- properties -------------------------------------------------------------------------

FRAGMENTS = [
    *("password", "PASSWORD", "token", "secret", "api_key", "ApiKey", "auth", "pass", "creds"),
    "--password",
    *(": ", "=", " = ", ":=", "=>", "==", "!=", ",", " is ", '"', "'", "`", "@", "$", "{", "]"),
    *("Bearer ", "Authorization: Basic ", "-u ", "--user ", "://", "http://u:", "[REDACTED:"),
    *("-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "\n", " ", "-", "_"),
    *("AKIA", "ghp_", "github_pat_", "sk-", "sk-ant-", "xoxb-1-", "xapp-", "eyJ", ".", "0", "9"),
    *("4111 1111 1111 1111", "4111111111111111", "hunter2", "Abc123def456GHI789jkl012", "İ"),
    *("eyI", ". ", ", ", "xoxb- ", " - ", "sk-proj -", "a1B2c3D4e5"),  # as OCR reads tokens
]
secretish_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=40
).map("".join)


@given(st.one_of(secretish_text, st.text()))
def test_redacting_twice_changes_nothing(text: str) -> None:
    once = redacted(text)
    assert redacted(once) == once


@given(secretish_text)
def test_counts_match_the_markers_in_the_text(text: str) -> None:
    assume("[REDACTED:" not in text)
    result = redact(text)
    found = re.findall(r"\[REDACTED:(\w+)\]", result.text)
    assert result.counts == {kind: found.count(kind) for kind in set(found)}
    assert set(found) <= set(KINDS)


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzéßø \n\t!?;()"))
def test_text_without_trigger_characters_is_returned_unchanged(text: str) -> None:
    # No digit, upper-case letter or = : , - _ . / ' " `: nothing can be a secret.
    assert redact(text) == Redaction(text, {})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _luhn_complete(digits: str) -> str:
    for check in "0123456789":
        number = digits + check
        total = sum(
            (d * 2 - 9 if d > 4 else d * 2) if i % 2 else d
            for i, d in enumerate(int(c) for c in reversed(number))
        )
        if total % 10 == 0:
            return number
    raise AssertionError("unreachable: one check digit always fits")


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
body = st.text(alphabet=ALNUM, min_size=1)
# Values a person types, with a digit as real ones have: reference starts ($ { < [ %), words
# such as 'undefined' or 'changeme' and masks are left alone by design and tested above.
password_value = st.text(alphabet=ALNUM + "!@^&*+", min_size=8, max_size=40).filter(
    lambda v: (
        any(c.isdigit() for c in v)
        and len(set(v)) > 1
        and not re.search(r"(?i)fake|dummy|placeholder|changeme|your|x{4}", v)
    )
)


@st.composite
def positives(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    """A line holding one secret: (line, expected kind, strings that must not survive)."""
    kind = draw(st.sampled_from(KINDS))
    pad = draw(st.sampled_from(["", "key used: ", "export X=", '"value": "', "(", "\n"]))
    if kind == "card":
        digits = draw(st.sampled_from("3456")) + draw(
            st.text(alphabet="0123456789", min_size=14, max_size=14)
        )
        number = _luhn_complete(digits)
        sep = draw(st.sampled_from(["", " ", "-"]))
        secret = sep.join(number[i : i + 4] for i in range(0, 16, 4))
        return f"{pad}{secret} ok", kind, [secret]
    if kind == "aws_key":
        secret = "AKIA" + draw(
            st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16)
        )
        assume(set(secret[4:]) != {"X"} and not secret.endswith("EXAMPLE"))
    elif kind == "github_token":
        secret = draw(st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])) + draw(
            st.text(alphabet=ALNUM, min_size=36, max_size=40)
        )
        assume(not re.fullmatch(r"gh._[xX]+", secret))
    elif kind == "anthropic_key":
        secret = (
            "sk-ant-api03-" + draw(st.text(alphabet=ALNUM + "_-", min_size=93, max_size=93)) + "AA"
        )
    elif kind == "openai_key":
        secret = "sk-proj-" + draw(st.text(alphabet=ALNUM + "_-", min_size=40, max_size=80))
    elif kind == "slack_token":
        secret = (
            draw(st.sampled_from(["xoxb-", "xoxp-", "xoxa-2-", "xoxs-"]))
            + draw(st.text(alphabet="0123456789", min_size=8, max_size=13))
            + "-"
            + draw(st.text(alphabet=ALNUM, min_size=12, max_size=32))
            + draw(st.sampled_from("0123456789"))
        )
    elif kind == "jwt":
        header = _b64(
            json.dumps({"alg": draw(st.sampled_from(["HS256", "RS256"])), "typ": "JWT"}).encode()
        )
        payload = _b64(json.dumps({"sub": draw(body), "iat": draw(st.integers(0, 2**31))}).encode())
        secret = f"{header}.{payload}.{_b64(draw(st.binary(min_size=16, max_size=64)))}"
    elif kind == "private_key":
        lines = [
            base64.b64encode(draw(st.binary(min_size=24, max_size=48))).decode() for _ in range(3)
        ]
        footer = draw(st.sampled_from(["\n-----END RSA PRIVATE KEY-----", ""]))
        text = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + footer
        return text, kind, lines
    else:
        label = draw(
            st.sampled_from(
                ["password", "DB_PASSWORD", "passwd", "db_pass"]
                if kind == "password"
                else ["api_key", "client_secret", "token", "AUTH_TOKEN", "X-Api-Key"]
            )
        )
        operator = draw(st.sampled_from([": ", "=", " = ", ":=", " => "]))
        quote = draw(st.sampled_from(["", '"', "'"]))
        secret = draw(password_value)
        return f"{label}{operator}{quote}{secret}{quote}", kind, [secret]
    return f"{pad}{secret} ok", kind, [secret]


@given(positives(), st.sampled_from(["", "hello world\n", "$ cat .env\n"]))
def test_no_generated_secret_survives(positive: tuple[str, str, list[str]], before: str) -> None:
    line, kind, secrets = positive
    out = redacted(before + line + "\nnext line")
    assert f"[REDACTED:{kind}]" in out
    for secret in secrets:
        run = min(len(secret), 16)
        assert not any(secret[i : i + run] in out for i in range(len(secret) - run + 1)), out


# --- growth -----------------------------------------------------------------------------

ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "one letter": lambda n: "a" * n,
    "password=": lambda n: "password=" * (n // 9),
    "quoted labels": lambda n: '"password": "' * (n // 14),
    "digits": lambda n: "1" * n,
    "digit groups": lambda n: "4111 " * (n // 5),
    "jwt prefixes": lambda n: "eyJ" * (n // 3),
    "jwt segments split as OCR splits them": lambda n: "eyJa1 bC, " * (n // 10),
    "slack ids spaced as OCR spaces them": lambda n: "xoxb- 1 - " * (n // 10),
    "token pieces after a signature": lambda n: "eyJabcdefgh.eyJabcdefgh.s1" + " a1" * (n // 3),
    "key headers without body": lambda n: "-----BEGIN PRIVATE KEY-----\n!\n" * (n // 30),
    "key body without footer": lambda n: "-----BEGIN PRIVATE KEY-----\n" + "A" * n,
    "curl users": lambda n: " -u a:" * (n // 6),
}


def _seconds(text: str) -> float:
    # The thread's CPU time, not the wall clock: on a machine whose cores are shared, waiting
    # for one is not the redactor's doing.
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        redact(text)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("make", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_time_grows_linearly_on_adversarial_input(make: Callable[[int], str]) -> None:
    # Relative, not absolute: ten times the input may take at most forty times as long, a
    # margin wide enough for a busy machine and far below the hundredfold of a quadratic scan.
    small, large = _seconds(make(20_000)), _seconds(make(200_000))
    assert large < 40 * max(small, 1e-4)


@given(
    st.lists(
        st.sampled_from(["4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "0"])
        | st.text(alphabet="0123456789 -_a\n٣", max_size=30),
        max_size=8,
    ).map("".join)
)
def test_the_quick_look_for_thirteen_digits_never_hides_a_card(text: str) -> None:
    # cards() skips its scan when the text has no 13 digits in a row once spaces and dashes
    # are dropped: that must never lose a card the scan would take.
    assert cards(text) == _cards(text)
