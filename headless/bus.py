"""D-Bus calls of the headless desktops: one blocking method call on a bus by its address,
and the accessibility bus turned on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headless.processes import DesktopError

if TYPE_CHECKING:
    from dbus_fast.aio import MessageBus


def variant(signature: str, value: Any) -> Any:
    from dbus_fast import Variant

    return Variant(signature, value)


# The bus itself: destination, path and interface of its own methods.
DBUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


def call(address: str, *message: Any, timeout: float = 5.0) -> list[Any]:
    """One blocking D-Bus method call on the bus at ``address`` (``message``: ``ask``'s
    arguments after the bus); its reply body."""
    from dbus_fast.aio import MessageBus

    async def one_call() -> list[Any]:
        bus = await MessageBus(bus_address=address).connect()
        try:
            return await ask(bus, *message)
        finally:
            bus.disconnect()

    return asyncio.run(asyncio.wait_for(one_call(), timeout))


async def ask(
    bus: MessageBus,
    destination: str,
    path: str,
    interface: str,
    member: str,
    signature: str = "",
    body: Sequence[Any] = (),
) -> list[Any]:
    """One D-Bus method call on the connected ``bus``; its reply body."""
    from capture import ax

    try:
        return await ax.call(bus, destination, path, interface, member, signature, body)
    except ax.CallError as exc:
        raise DesktopError(f"{destination} {member}: {exc.name}") from None


def accessibility_enabled(bus_address: str) -> str:
    """Set org.a11y.Status.IsEnabled on the session bus at ``bus_address`` (toolkits that
    ask, Qt and Chromium, only publish their tree when it is true); the address of the
    accessibility bus."""
    call(
        bus_address,
        "org.a11y.Bus",
        "/org/a11y/bus",
        "org.freedesktop.DBus.Properties",
        "Set",
        "ssv",
        ["org.a11y.Status", "IsEnabled", variant("b", True)],
    )
    return str(call(bus_address, "org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus", "GetAddress")[0])


def name_has_owner(address: str, name: str) -> bool:
    return bool(call(address, *DBUS, "NameHasOwner", "s", [name])[0])
