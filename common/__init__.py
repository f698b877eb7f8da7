"""Plain helpers shared by every app (no Django): reading input files, checking ids."""
