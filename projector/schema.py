"""The search view's Tantivy schema and how a frame becomes a document.

Fields:
    id          u64, stored, indexed, fast    the frame id (its log offset): lookups and
                                              deletes by a term query on it
    ts          u64, stored, indexed, fast    capture time, UTC microseconds: range filters and
                                              time order (a date field took ~1 µs a frame more
                                              to build: a datetime, and its conversion)
    where       text (words, positions),      the words of the app name, of the window title
                two or three values, not      and of the page's address when there is one (a
                stored                        phrase does not span two of them): query
                                              words match here as in the text (separate app
                                              and title fields made the app filter two
                                              intersections, each walking every frame of a
                                              common app)
    within      whitespace-split, doc ids     every suffix of every word of the app name,
                only, not stored              title and address: the ``app`` filter's substring is a
                                              prefix here ("afana" starts a suffix of
                                              "grafana"), a walk over a few terms where a
                                              contains-regex over ``where`` read every term
                                              of every month (+8 ms a search at 1M frames);
                                              built once per distinct app, title and address
    text        text (words, positions),      plaintext frames only, NFKC-normalised; stored
                stored                        for snippets and ``show``
    body        bytes, stored, not indexed    the text as captured, only where NFKC changed it
                                              (most screen text is ASCII, which it never does)
    cipher      bytes, stored                 encrypted text, decrypted for snippets
    btok        whitespace-split, doc ids     blind tokens of encrypted frames, as one
                only, not stored              string of hex words: ``from_dict`` pays per
                                              value and ``bytes.hex`` per call, ~100 a
                                              frame (one value each: 6 µs a frame more)
    enc         u64, indexed                  1, only on frames whose text is encrypted (a
                                              field costs ~0.6 µs a document whatever it holds)
    ocr         u64, indexed                  1, only on plaintext frames whose text was OCR'd:
                                              the search that forgives a misread letter looks
                                              at these frames alone (``query/_fuzzy.py``)
    meta        bytes, stored, not indexed    MessagePack [text source, capture reason,
                                              thumbnail path or nil, thumbnail encrypted,
                                              app name, window title, page address]

Few fields on purpose: ``Document.from_dict`` costs ~0.8 µs a field whatever its size, and
building documents is on the rebuild's critical path (four stored-only fields in one ``meta``
took 3 µs a frame off it, and dropping a raw copy of the id and of the app name 2 µs more).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

import msgspec

from base import tokens
from eventlog.events import CaptureReason, FrameCaptured, TextSource

if TYPE_CHECKING:
    import tantivy

SCHEMA_VERSION = 11


def build_schema() -> tantivy.Schema:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("id", stored=True, indexed=True, fast=True)
    sb.add_unsigned_field("ts", stored=True, indexed=True, fast=True)
    sb.add_text_field("where", tokenizer_name=tokens.ANALYZER_NAME)
    sb.add_text_field("within", tokenizer_name="whitespace", index_option="basic")
    sb.add_text_field(
        "text", stored=True, tokenizer_name=tokens.ANALYZER_NAME, index_option="position"
    )
    sb.add_bytes_field("body", stored=True)
    sb.add_bytes_field("cipher", stored=True)
    sb.add_text_field("btok", tokenizer_name="whitespace", index_option="basic")
    sb.add_unsigned_field("enc", indexed=True)
    sb.add_unsigned_field("ocr", indexed=True)
    sb.add_bytes_field("meta", stored=True)
    return sb.build()


def register_analyzers(index: tantivy.Index) -> None:
    """Custom analyzers are not saved with an index: call this on every open."""
    index.register_tokenizer(tokens.ANALYZER_NAME, tokens.analyzer())


def frame_query(schema: tantivy.Schema, frame_id: int) -> tantivy.Query:
    """The one document of frame ``frame_id``."""
    import tantivy

    return tantivy.Query.term_query(schema, "id", frame_id)


def folded(text: str) -> str:
    """The form the ``app`` filter compares: NFKC, lowercased."""
    return tokens.normalize(text).lower()


@lru_cache(maxsize=8192)
def _place(app: str, title: str, url: str) -> tuple[list[str], str]:
    """A document's ``where`` and ``within`` for an app name, window title and page address:
    they repeat frame after frame, and titles are often not ASCII (an em dash: NFKC, ~1 µs
    each)."""
    words = {*tokens.words(app), *tokens.words(title), *tokens.words(url)}
    suffixes = " ".join(sorted({word[i:] for word in words for i in range(len(word))}))
    where = [tokens.normalize(app), tokens.normalize(title)]
    if url:
        where.append(tokens.normalize(url))
    return where, suffixes


Meta = tuple[TextSource, CaptureReason, str | None, bool, str, str, str]
_meta = msgspec.msgpack.Encoder()
_meta_decoder = msgspec.msgpack.Decoder(Meta)


def frame_meta(meta: bytes) -> Meta:
    """A document's ``meta``: text source, capture reason, thumbnail path, thumbnail
    encrypted, app name, window title, page address."""
    return _meta_decoder.decode(meta)


def frame_document(frame: FrameCaptured, schema: tantivy.Schema) -> tantivy.Document:
    """Built with ``Document.from_dict`` against the schema: a wrongly typed value fails here,
    not at commit (where tantivy-py 0.27 would poison every later commit)."""
    import tantivy

    where, within = _place(frame.app, frame.title, frame.url)
    fields: dict[str, Any] = {
        "id": frame.frame_id,
        "ts": frame.captured_us,
        "where": where,
        "within": within,
        "meta": _meta.encode(
            (
                frame.text_source,
                frame.reason,
                frame.thumb,
                frame.thumb_encrypted,
                frame.app,
                frame.title,
                frame.url,
            )
        ),
    }
    if frame.encrypted:
        fields["enc"] = 1
        fields["cipher"] = frame.ciphertext
        fields["btok"] = _hex_words(frame.blind_tokens)
    else:
        text = fields["text"] = tokens.normalize(frame.text)
        if text != frame.text:
            fields["body"] = frame.text.encode()
        if frame.text_source == "ocr":
            fields["ocr"] = 1
    return tantivy.Document.from_dict(fields, schema)


def _hex_words(tokens: tuple[bytes, ...]) -> str:
    """Tokens in hex, separated by spaces; in one call when they are all one length (they
    are: ``BLIND_TOKEN_BYTES``, unless a log was written by hand)."""
    lengths = set(map(len, tokens))
    if len(lengths) == 1:
        return b"".join(tokens).hex(" ", lengths.pop())
    return " ".join(map(bytes.hex, tokens))


DAY_US = 86_400_000_000


def partition_of(captured_us: int) -> str:
    """Partitions are calendar months (UTC) of capture time: retention and scoped deletion
    rebuild only the months they touch, and a search fans out over ~17 indexes in 500 days."""
    return _month_of_day(captured_us // DAY_US)


@cache
def _month_of_day(day: int) -> str:
    # Per day, cached: formatting a date for every frame was 11% of a rebuild.
    return datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m")
