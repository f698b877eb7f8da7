"""Pages of the evaluation app."""
