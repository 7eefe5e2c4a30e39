#!/usr/bin/env bash
# install-deps.sh installs the Debian packages the tests and the load test
# use: wrk (load generator), util-linux (taskset, unshare for the
# disk-full test), chromium (renders badges in the browser test),
# redis-server and redis-cli (the Redis store's tests start their own
# servers and cluster on free ports; a system Redis is never used),
# systemd's tools systemd-analyze and systemd-socket-activate (the tests
# of deploy/systemd verify its units and activate the binary by socket;
# no running systemd is needed), nginx and caddy (./deploy's tests run
# each, with its own configuration, in front of the binary; no system
# service is used), curl (deploy/backup/visitors-backup.sh, which
# ./deploy's backup drill runs, and the docs' examples, which
# scripts/gendocs runs), podman and runc (./deploy's container
# test builds and runs the image of deploy/container with them, without a
# daemon; runc because Debian 12's crun refuses hybrid cgroups), and
# ca-certificates, which deploy/container/build.sh copies into the image. Go
# modules come through the module proxy on their own.
set -euo pipefail
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v taskset >/dev/null || need+=(util-linux)
command -v unshare >/dev/null || need+=(util-linux)
command -v chromium >/dev/null || need+=(chromium)
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v systemd-socket-activate >/dev/null || need+=(systemd)
{ command -v nginx || test -x /usr/sbin/nginx; } >/dev/null || need+=(nginx)
command -v caddy >/dev/null || need+=(caddy)
command -v curl >/dev/null || need+=(curl)
command -v podman >/dev/null || need+=(podman)
{ command -v runc || test -x /usr/sbin/runc; } >/dev/null || need+=(runc)
test -r /etc/ssl/certs/ca-certificates.crt || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq "${need[@]}"
fi
wrk --version 2>&1 | head -1 || true
chromium --version
redis-server --version
systemd-analyze --version | head -1
PATH=$PATH:/usr/sbin nginx -v
caddy version
podman --version
