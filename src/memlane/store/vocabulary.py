"""The fixed sets of values a note's frontmatter draws from: its ``type`` (Claude Code's four)
and memlane's ``kind``. A module of their own, so that a command's options can offer them
without loading the note parser."""

NOTE_TYPES = ("user", "feedback", "project", "reference")
NOTE_KINDS = ("principle", "correction", "decision", "guideline", "pitfall", "process", "model")
