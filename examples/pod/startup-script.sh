#!/bin/bash
# TPU VM startup script: each worker checks itself at boot and writes its report to Cloud Storage.
#
#   gcloud compute tpus tpu-vm create my-pod --zone us-central2-b --accelerator-type v4-32 \
#     --version tpu-ubuntu2204-base --metadata-from-file startup-script=examples/pod/startup-script.sh
#   tpudoctor merge gs://MY_BUCKET/tpudoctor/my-pod/
#
# tpudoctor reads the worker number (agent-worker-number) and the slice size (worker-network-endpoints)
# from the metadata server, so {worker} is filled on every worker. The VM's service account needs
# storage.objects.create on the bucket.
set -euo pipefail
python3 -m pip install --quiet --upgrade tpudoctor
tpudoctor check --step 1 --step 3 --step 4 --exit-zero --format json \
  -o "gs://MY_BUCKET/tpudoctor/${TPUDOCTOR_RUN:-boot}/{worker}.json" || echo "tpudoctor: check on $(hostname) failed" >&2
