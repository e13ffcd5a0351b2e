"""Backscroll: a local, private, searchable memory of what you saw on your screen."""
