from __future__ import annotations

import hashlib
import hmac
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from backscroll.crypto import BLIND_TOKEN_BYTES, FORMAT_VERSION, FrameCrypto
from base.errors import DecryptionError, StoreError
from base.tokens import words

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
CRYPTO = FrameCrypto(KEY)
FRAME_IDS = st.integers(min_value=0, max_value=2**64 - 1)


def _hkdf_sha256(key: bytes, info: bytes) -> bytes:
    """RFC 5869 with an empty salt, written out independently of the code under test."""
    prk = hmac.digest(b"\0" * 32, key, "sha256")
    return hmac.digest(prk, info + b"\x01", "sha256")


# -- text -----------------------------------------------------------------------------------


def test_text_round_trips() -> None:
    text = "Connection refused — retrying in 5 s\nnaïve café 東京 🙂"
    assert CRYPTO.decrypt_text(7, CRYPTO.encrypt_text(7, text)) == text


def test_empty_text_round_trips() -> None:
    assert CRYPTO.decrypt_text(1, CRYPTO.encrypt_text(1, "")) == ""


@given(frame_id=FRAME_IDS, text=st.text())
def test_any_text_round_trips_for_any_frame_id(frame_id: int, text: str) -> None:
    assert CRYPTO.decrypt_text(frame_id, CRYPTO.encrypt_text(frame_id, text)) == text


def test_the_same_text_encrypts_differently_each_time() -> None:
    # A fresh random nonce per blob: equal texts must not be visible as equal blobs.
    assert CRYPTO.encrypt_text(1, "same words") != CRYPTO.encrypt_text(1, "same words")


def test_text_is_compressed_before_it_is_encrypted() -> None:
    text = "".join(f"line {i % 10}: the build passed\n" for i in range(800))[:20_000]
    assert len(text) == 20_000
    blob = CRYPTO.encrypt_text(1, text)
    # Ciphertext does not compress, so a small blob proves zstd ran on the plaintext.
    assert len(blob) < 1_000
    assert CRYPTO.decrypt_text(1, blob) == text


def test_a_blob_starts_with_the_version_byte_and_a_nonce() -> None:
    blob = CRYPTO.encrypt_thumb(1, b"\xff\xd8jpeg")
    assert blob[0] == FORMAT_VERSION
    # version + 12-byte nonce + ciphertext (same length as the plaintext) + 16-byte tag
    assert len(blob) == 1 + 12 + len(b"\xff\xd8jpeg") + 16


# -- thumbnails -----------------------------------------------------------------------------


def test_a_thumbnail_round_trips_unchanged() -> None:
    jpeg = random.Random(1).randbytes(20_000)
    assert CRYPTO.decrypt_thumb(42, CRYPTO.encrypt_thumb(42, jpeg)) == jpeg


# -- failures -------------------------------------------------------------------------------


def test_a_wrong_key_is_detected_and_names_the_frame() -> None:
    blob = CRYPTO.encrypt_text(12, "secret")
    with pytest.raises(DecryptionError, match=r"^frame 12: .*wrong key"):
        FrameCrypto(OTHER_KEY).decrypt_text(12, blob)


def test_a_wrong_key_is_detected_for_thumbnails() -> None:
    blob = CRYPTO.encrypt_thumb(12, b"jpeg bytes")
    with pytest.raises(DecryptionError, match="frame 12"):
        FrameCrypto(OTHER_KEY).decrypt_thumb(12, blob)


def test_every_changed_byte_is_detected() -> None:
    blob = CRYPTO.encrypt_text(3, "a short text")
    for index in range(len(blob)):
        tampered = bytearray(blob)
        tampered[index] ^= 0x01
        with pytest.raises(DecryptionError, match="frame 3"):
            CRYPTO.decrypt_text(3, bytes(tampered))


def test_a_truncated_blob_is_detected() -> None:
    blob = CRYPTO.encrypt_text(3, "a short text")
    for length in (0, 1, 20, len(blob) - 1):
        with pytest.raises(DecryptionError, match="frame 3"):
            CRYPTO.decrypt_text(3, blob[:length])


def test_a_blob_moved_to_another_frame_is_detected() -> None:
    text_blob = CRYPTO.encrypt_text(100, "frame one hundred")
    thumb_blob = CRYPTO.encrypt_thumb(100, b"jpeg of frame one hundred")
    with pytest.raises(DecryptionError, match="frame 101"):
        CRYPTO.decrypt_text(101, text_blob)
    with pytest.raises(DecryptionError, match="frame 101"):
        CRYPTO.decrypt_thumb(101, thumb_blob)


def test_a_thumbnail_blob_read_as_text_is_detected_and_vice_versa() -> None:
    with pytest.raises(DecryptionError):
        CRYPTO.decrypt_text(5, CRYPTO.encrypt_thumb(5, b"jpeg"))
    with pytest.raises(DecryptionError):
        CRYPTO.decrypt_thumb(5, CRYPTO.encrypt_text(5, "text"))


def test_decryption_errors_are_store_errors_callers_can_catch() -> None:
    assert issubclass(DecryptionError, StoreError)


def test_frame_ids_outside_64_bits_are_refused() -> None:
    for frame_id in (-1, 2**64):
        with pytest.raises(ValueError, match="frame id"):
            CRYPTO.encrypt_text(frame_id, "x")


def test_a_master_key_must_be_32_bytes() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        FrameCrypto(b"short")


def test_the_repr_does_not_show_the_key() -> None:
    assert KEY.hex() not in repr(CRYPTO)
    assert "hidden" in repr(CRYPTO)


def test_threads_can_share_one_frame_crypto() -> None:
    def round_trip(i: int) -> bool:
        text = f"frame {i} " * (i % 50)
        return CRYPTO.decrypt_text(i, CRYPTO.encrypt_text(i, text)) == text

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(round_trip, range(400)))


# -- blind tokens ---------------------------------------------------------------------------


def test_blind_tokens_are_sorted_distinct_and_12_bytes() -> None:
    tokens = CRYPTO.blind_tokens("the cat saw the other cat, then the dog")
    assert list(tokens) == sorted(set(tokens))
    assert len(tokens) == len({"the", "cat", "saw", "other", "then", "dog"})
    assert all(len(token) == BLIND_TOKEN_BYTES == 12 for token in tokens)


def test_blind_tokens_hide_word_order_and_frequency() -> None:
    assert CRYPTO.blind_tokens("invoice paid invoice paid invoice") == CRYPTO.blind_tokens(
        "Paid INVOICE"
    )


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "épée"]), min_size=1))
def test_blind_tokens_depend_only_on_the_set_of_words(word_list: list[str]) -> None:
    shuffled = list(word_list)
    random.Random(len(word_list)).shuffle(shuffled)
    doubled = shuffled + word_list
    assert CRYPTO.blind_tokens(" ".join(word_list)) == CRYPTO.blind_tokens(" ".join(doubled))


def test_equal_words_in_different_texts_share_a_token() -> None:
    first = set(CRYPTO.blind_tokens("error: connection refused by host"))
    second = set(CRYPTO.blind_tokens("Refused to load the script"))
    assert first & second == {CRYPTO.blind_token("refused")}


@given(st.text())
def test_a_query_words_token_is_among_the_texts_tokens(text: str) -> None:
    tokens = set(CRYPTO.blind_tokens(text))
    for word in words(text):
        assert CRYPTO.blind_token(word) in tokens


@given(st.lists(st.text(), max_size=6))
def test_a_memo_of_words_gives_the_tokens_made_without_one_and_holds_only_their_words(
    texts: list[str],
) -> None:
    # The blind tokens are an on-disk format: an import that keeps a memo must make the very
    # tokens a search (and every store written before it) expects.
    memo: dict[str, bytes] = {}
    for text in texts:
        assert CRYPTO.blind_tokens(text, memo) == CRYPTO.blind_tokens(text)
    assert memo == {word: CRYPTO.blind_token(word) for text in texts for word in words(text)}


def test_query_words_are_normalised_like_the_text() -> None:
    # Case, compatibility forms (the "ﬁ" ligature, fullwidth letters) and the dotted
    # capital I that lowercases to two code points.
    assert CRYPTO.blind_token("INVOICE") in CRYPTO.blind_tokens("an invoice")
    assert CRYPTO.blind_token("file") in CRYPTO.blind_tokens("ﬁle")
    assert CRYPTO.blind_token("ＡＢＣ") in CRYPTO.blind_tokens("abc")
    assert CRYPTO.blind_token("İ") in CRYPTO.blind_tokens("İ")


def test_text_without_words_has_no_blind_tokens() -> None:
    assert CRYPTO.blind_tokens("") == ()
    assert CRYPTO.blind_tokens(" -- !! ") == ()


def test_blind_tokens_depend_on_the_key() -> None:
    assert CRYPTO.blind_token("invoice") != FrameCrypto(OTHER_KEY).blind_token("invoice")


def test_a_blind_token_is_the_truncated_hmac_under_the_derived_blind_key() -> None:
    # Pins the definition: an index built today must match queries made by later versions.
    blind_key = _hkdf_sha256(KEY, b"backscroll blind v1")
    expected = hmac.new(blind_key, b"invoice", hashlib.sha256).digest()[:12]
    assert CRYPTO.blind_token("invoice") == expected


def test_text_is_sealed_with_the_derived_text_key_and_the_frame_id_bound() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    # Pins the format: key from HKDF "backscroll text v1", associated data naming version,
    # field and frame id, zstd frame inside.
    blob = CRYPTO.encrypt_text(0x0102, "pinned")
    aead = AESGCM(_hkdf_sha256(KEY, b"backscroll text v1"))
    associated = b"\x01backscroll/text/" + (0x0102).to_bytes(8, "big")
    compressed = aead.decrypt(blob[1:13], blob[13:], associated)
    assert zstandard.ZstdDecompressor().decompress(compressed) == b"pinned"


def test_blind_tokens_need_no_cipher_so_a_search_that_decrypts_nothing_imports_none() -> None:
    script = (
        "import sys\n"
        "from backscroll.crypto import FrameCrypto\n"
        "crypto = FrameCrypto(bytes(32))\n"
        "crypto.blind_token('invoice')\n"
        "print('cryptography' in sys.modules)\n"
        "crypto.decrypt_text(1, crypto.encrypt_text(1, 'x'))\n"
        "print('cryptography' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["False", "True"], done.stderr
