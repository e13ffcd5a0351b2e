"""The kept memories' upkeep beside the store's: ``verify`` checks the kept view against the
log, ``reindex`` seals or opens every version as ``encrypt_text`` says."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from base.errors import KeyUnavailableError
from eventlog.events import MEMORY_TYPES, MemoryKept, MemoryRevised
from projector.kept import KeptView

if TYPE_CHECKING:
    from backscroll.crypto import FrameCrypto
    from backscroll.store import MemoryStore


def resealed(
    event: MemoryKept | MemoryRevised, encrypt: bool, crypto: FrameCrypto | None
) -> MemoryKept | MemoryRevised:
    """A version's event with its text sealed or opened as ``encrypt`` asks (``reindex``
    after ``encrypt_text`` changed); unchanged when it is so already."""
    if event.encrypted == encrypt:
        return event
    if crypto is None:
        raise KeyUnavailableError("kept memories cannot be rewritten: the key is not available")
    version = event.version if isinstance(event, MemoryRevised) else 1
    if event.encrypted:
        opened = crypto.decrypt_memory(event.memory_id, version, event.ciphertext)
        text, value = msgspec.msgpack.decode(opened)
        return msgspec.structs.replace(
            event, text=text, value=value, ciphertext=b"", encrypted=False, blind_tokens=()
        )
    sealed = msgspec.msgpack.encode((event.text, event.value))
    return msgspec.structs.replace(
        event,
        text="",
        value="",
        ciphertext=crypto.encrypt_memory(event.memory_id, version, sealed),
        encrypted=True,
        blind_tokens=crypto.blind_tokens(f"{event.text} {event.value}"),
    )


def verify_kept(store: MemoryStore) -> list[str]:
    """The kept view against the log (the memories it holds, their versions and review, as
    far as it reaches), and no version of a forgotten memory left in the log."""
    saved = KeptView.load(store.layout.views)
    reach = saved.position if saved is not None else -1
    replayed, upto = KeptView(), KeptView()
    versions: dict[str, int] = {}
    for offset, event in store.log.read(types=MEMORY_TYPES):
        replayed.apply(offset, event)
        if offset <= reach:
            upto.apply(offset, event)
        if isinstance(event, MemoryKept | MemoryRevised):
            versions[event.memory_id] = offset
    problems = [
        f"memory {memory_id} was forgotten, but a version of it remains in the log at "
        f"#{offset} (a forget cut short): `backscroll keep forget {memory_id}` erases it"
        for memory_id, offset in versions.items()
        if memory_id in replayed.forgotten
    ]

    def held(view: KeptView) -> dict[str, tuple[int, bool, str]]:
        return {
            m.id: (m.version, m.proposed, m.space)
            for m in view.memories.values()
            if m.id not in replayed.forgotten  # its versions are compacted away
        }

    if saved is not None and held(saved) != held(upto):
        problems.append(
            "the kept memories' view differs from the log: backscroll reindex --views-only"
        )
    return problems
