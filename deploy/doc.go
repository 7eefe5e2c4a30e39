// Package deploy holds the configurations of the reverse proxies that
// may be put in front of visitors: nginx/visitors.conf for nginx and
// caddy/Caddyfile for Caddy, which docs/deploy.md shows,
// backup/visitors-backup.sh, the cron job of its section Backups, and
// container/, the image of its section In a container (a Dockerfile and
// build.sh). It has no code; its tests run the real nginx and caddy with
// those files in front of the real visitors binary, the backup script
// and restore drill against it, and the image, built and run by podman
// without a daemon, as the doc says.
package deploy
