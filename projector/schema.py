"""The search view's Tantivy schema and how a frame becomes a document.

Fields:
    id          u64, stored, indexed, fast    the frame id (its log offset)
    id_s        raw text                      the same id, for exact term deletes
    ts          date, stored, indexed, fast   capture time: range filters and time order
    app, title  text (words), stored          searchable words of the app name and title
    app_lc      raw text                      the app name, normalised and lowercased, as one
                                              term: the ``app`` filter is a contains-regex over
                                              these few terms, and word prefixes over titles
                                              (query/search.py; 3-grams of app and title
                                              answered it too, but cost 35% of indexing speed)
    text        text (words, positions)       plaintext frames only; never stored here
    body        bytes, stored, not indexed    UTF-8 plaintext for snippets (a stored text
                                              field would also index it as one huge term)
    cipher      bytes, stored                 encrypted text, decrypted for snippets
    btok        raw text, many values         blind tokens (hex) of encrypted frames
    source      raw text, stored              ax / ocr / none
    enc         u64, stored, indexed, fast    1 when the text is encrypted
    thumb       raw text, stored              thumbnail path, relative to the home
    thumb_enc   u64, stored                   1 when the thumbnail is encrypted
    reason      raw text, stored              why the frame was captured
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from backscroll import tokens
from eventlog.events import FrameCaptured

if TYPE_CHECKING:
    import tantivy

SCHEMA_VERSION = 3


def build_schema() -> tantivy.Schema:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("id_s", tokenizer_name="raw")
    sb.add_date_field("ts", stored=True, indexed=True, fast=True)
    sb.add_text_field("app", stored=True, tokenizer_name=tokens.ANALYZER_NAME)
    sb.add_text_field("title", stored=True, tokenizer_name=tokens.ANALYZER_NAME)
    sb.add_text_field("app_lc", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", tokenizer_name=tokens.ANALYZER_NAME, index_option="position")
    sb.add_bytes_field("body", stored=True)
    sb.add_bytes_field("cipher", stored=True)
    sb.add_text_field("btok", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("source", stored=True, tokenizer_name="raw")
    sb.add_unsigned_field("enc", stored=True, indexed=True, fast=True)
    sb.add_text_field("thumb", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("thumb_enc", stored=True)
    sb.add_text_field("reason", stored=True, tokenizer_name="raw", index_option="basic")
    return sb.build()


def register_analyzers(index: tantivy.Index) -> None:
    """Custom analyzers are not saved with an index: call this on every open."""
    index.register_tokenizer(tokens.ANALYZER_NAME, tokens.analyzer())


def folded(text: str) -> str:
    """The form the ``app`` filter compares: NFKC, lowercased."""
    return tokens.normalize(text).lower()


def frame_document(frame: FrameCaptured, schema: tantivy.Schema) -> tantivy.Document:
    """Built with ``Document.from_dict`` against the schema: a wrongly typed value fails here,
    not at commit (where tantivy-py 0.27 would poison every later commit)."""
    import tantivy

    fields: dict[str, Any] = {
        "id": frame.frame_id,
        "id_s": str(frame.frame_id),
        "ts": datetime.fromtimestamp(frame.captured_us / 1_000_000, UTC),
        "app": tokens.normalize(frame.app),
        "title": tokens.normalize(frame.title),
        "app_lc": folded(frame.app),
        "source": frame.text_source,
        "enc": int(frame.encrypted),
        "thumb_enc": int(frame.thumb_encrypted),
        "reason": frame.reason,
    }
    if frame.encrypted:
        fields["cipher"] = frame.ciphertext
        fields["btok"] = [token.hex() for token in frame.blind_tokens]
    else:
        fields["text"] = tokens.normalize(frame.text)
        fields["body"] = frame.text.encode()
    if frame.thumb:
        fields["thumb"] = frame.thumb
    return tantivy.Document.from_dict(fields, schema)


DAY_US = 86_400_000_000


def partition_of(captured_us: int) -> str:
    """Partitions are calendar months (UTC) of capture time: retention and scoped deletion
    rebuild only the months they touch, and a search fans out over ~17 indexes in 500 days."""
    return _month_of_day(captured_us // DAY_US)


@cache
def _month_of_day(day: int) -> str:
    # Per day, cached: formatting a date for every frame was 11% of a rebuild.
    return datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m")
