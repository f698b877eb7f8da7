"""Pages of the judging app."""
