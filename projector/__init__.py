"""projector package."""
