"""``backscroll view``: a local web view of the store (timeline, search with pictures,
control, kept memories), served to the person's own browser tab alone (``guard``)."""

from backscroll.view.serve import Address, serve

__all__ = ["Address", "serve"]
