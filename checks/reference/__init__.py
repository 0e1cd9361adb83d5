"""Step 5: minimal reference model."""
