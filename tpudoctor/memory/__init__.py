"""Memory: what fills HBM at the peak and what to shrink."""
