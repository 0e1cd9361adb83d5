"""Step 3: framework and runtime compatibility."""
