// Package deploy holds the configurations of the reverse proxies that
// may be put in front of visitors: nginx/visitors.conf for nginx and
// caddy/Caddyfile for Caddy, which docs/deploy.md shows, and
// backup/visitors-backup.sh, the cron job of its section Backups. It has
// no code; its tests run the real nginx and caddy with those files in
// front of the real visitors binary, and the backup script and restore
// drill against it.
package deploy
