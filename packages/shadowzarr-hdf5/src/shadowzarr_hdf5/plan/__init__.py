"""Read only: where one dataset's values are and how they decode (type, layout, filters, fill
value, chunk locations), decided before anything is written; :mod:`..emit` writes the plan."""
