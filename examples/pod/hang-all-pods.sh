#!/usr/bin/env bash
# tpudoctor hang on every pod of a JobSet (GKE / xpk), merged into one report:
#   examples/pod/hang-all-pods.sh JOBSET_NAME [NAMESPACE]
# Each pod's tpudoctor sidecar (examples/pod/jobset-hang-sidecar.yaml) takes the training process's stacks
# twice, 5 s apart, and writes its JSON report; `tpudoctor hang --merge` analyses all pods together and names
# the pod the others wait for. Exit status: 1 when the job is hung, 0 when it moves.
set -euo pipefail
jobset="${1:?usage: $0 JOBSET_NAME [NAMESPACE]}"
namespace="${2:-default}"
out="$(mktemp -d)/hang"
mkdir -p "$out"
pods=$(kubectl get pods -n "$namespace" -l "jobset.sigs.k8s.io/jobset-name=$jobset" -o name)
for pod in $pods; do
  name="${pod#pod/}"
  # --exit-zero: a hung worker still writes its report; the merge decides the exit status.
  timeout 120 kubectl exec -n "$namespace" "$name" -c tpudoctor -- \
    sh -c 'tpudoctor hang --format json --exit-zero --interval 5s --worker "$JOB_COMPLETION_INDEX"' \
    > "$out/$name.json" 2> "$out/$name.err" || echo "no report from $name (see $out/$name.err)" >&2 &
done
wait
echo "reports in $out" >&2
tpudoctor hang --merge "$out"
