"""The guard inside the Python agent frameworks, each an optional extra:

    compaction_guard.integrations.langchain   GuardedSummarizer for SummarizationMiddleware(summarizer=...)
    compaction_guard.integrations.pydantic_ai GuardedHistory, a history processor (ProcessHistory)
    compaction_guard.integrations.google_adk  GuardedEventsSummarizer for EventsCompactionConfig(summarizer=...)

Each asks the framework's own model with the framework's own prompt, checks the answer against
the messages it replaces (compaction_guard.api), redoes a failed one aggressively, then builds
one by extraction: an exception, an error text, a refusal, a loop or a preamble never becomes the
history, and the agent's turn goes on. Each run is recorded in the frameworks' state
(`compaction-guard --agent frameworks --status`). Importing one imports nothing of the detectors:
they load on the first compaction.
"""
