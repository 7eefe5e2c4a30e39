// Package deploy holds the configurations of the reverse proxies that
// may be put in front of visitors: nginx/visitors.conf for nginx and
// caddy/Caddyfile for Caddy, which docs/deploy.md shows. It has no code;
// its tests run the real nginx and caddy with those files in front of
// the real visitors binary.
package deploy
