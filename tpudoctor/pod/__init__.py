"""Pod slices: run ``check`` on every worker (through gcloud ssh) and merge per-worker reports into one."""
