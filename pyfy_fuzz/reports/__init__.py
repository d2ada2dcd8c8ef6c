"""What is read off a corpus and its campaigns: reports, history, triage view."""

__all__: list[str] = []
