#!/usr/bin/env bash
# Deploy the current build to a host, with a dry-run mode.
set -euo pipefail

HOST="${1:?usage: deploy.sh HOST [--dry-run]}"
DRY_RUN=0
[[ "${2:-}" == "--dry-run" ]] && DRY_RUN=1

log() {
  printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
}

run() {
  if (( DRY_RUN )); then
    log "would run: $*"
  else
    "$@"
  fi
}

for artifact in build/*.tar.gz; do
  log "uploading ${artifact}"
  run scp "$artifact" "deploy@${HOST}:/srv/releases/"
done

cat <<EOF2 | run ssh "deploy@${HOST}" bash
set -e
cd /srv/releases
ls -1t *.tar.gz | head -n 1 | xargs -I{} tar -xzf {} -C /srv/current
systemctl restart app
EOF2

log "done (デプロイ完了)"
