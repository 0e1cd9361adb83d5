"""Step 4: logs."""
