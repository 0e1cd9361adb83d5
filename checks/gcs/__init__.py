"""Step 2: GCS paths and permissions."""
