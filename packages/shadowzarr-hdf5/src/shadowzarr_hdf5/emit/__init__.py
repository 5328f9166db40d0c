"""Write only: a dataset's plan becomes its array's metadata and references in the builder
(chunked, contiguous, inline, external); nothing here decides where bytes are."""
