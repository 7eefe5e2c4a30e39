// Package deploy holds the configurations of the reverse proxies that
// may be put in front of visitors: nginx/visitors.conf for nginx and
// caddy/Caddyfile for Caddy, which docs/deploy.md shows,
// backup/visitors-backup.sh, the cron job of its section Backups,
// container/, the image of its section In a container (a Dockerfile and
// build.sh), and compose/compose.yaml, two instances on one Redis. It
// has no code; its tests run the real nginx and caddy with those files
// in front of the real visitors binary, the backup script and restore
// drill against it, the image, built and run by podman without a
// daemon, as the doc says, the compose file's services as the real
// binary on a real redis-server, and scripts/release.sh's archive.
package deploy
