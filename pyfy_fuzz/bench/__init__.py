"""The campaign's own cost, measured."""

__all__: list[str] = []
