"""Write only: a dataset's plan (:class:`..plan.dataset_plan.DatasetPlan`) becomes its array's
metadata and references in the builder; nothing here reads the file or decides anything."""
