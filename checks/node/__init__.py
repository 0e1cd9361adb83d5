"""Step 1: TPU node state and resources."""
