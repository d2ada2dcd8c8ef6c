"""What a campaign saves: the corpus entries, their repro scripts and traces."""

__all__: list[str] = []
