"""Reading byte ranges of source files: local paths and file:// URLs, and HTTP(S)."""
