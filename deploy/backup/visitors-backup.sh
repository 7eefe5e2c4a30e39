#!/usr/bin/env bash
# visitors-backup.sh exports a running visitors through its owner API
# (GET /api/v1/export) with a backup token, to a dated file in DIR, then
# deletes the backups in DIR older than KEEP days. It exits non-zero, and
# keeps nothing of this run and deletes nothing, if the export failed, is
# empty or is not a whole dump. See docs/deploy.md#backups.
#
#   visitors-backup.sh -url URL -token-file FILE -dir DIR [-keep DAYS]
#
# The token is read from FILE (first line), never from the command line,
# which ps shows; curl gets it on its standard input.
set -euo pipefail
umask 077

usage() {
	echo "usage: visitors-backup.sh -url URL -token-file FILE -dir DIR [-keep DAYS]" >&2
	exit 2
}

url="" token_file="" dir="" keep=14
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	-url) url=$2 ;;
	-token-file) token_file=$2 ;;
	-dir) dir=$2 ;;
	-keep) keep=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[ -n "$url" ] && [ -n "$token_file" ] && [ -n "$dir" ] || usage
case $keep in
'' | *[!0-9]* | 0) echo "visitors-backup: -keep $keep: want a whole number of days, at least 1" >&2; exit 2 ;;
esac

token=$(head -n 1 "$token_file")
if [ -z "$token" ]; then
	echo "visitors-backup: $token_file holds no token" >&2
	exit 1
fi
mkdir -p "$dir"

stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
out="$dir/visitors-$stamp.json"
[ ! -e "$out" ] || out="$dir/visitors-$stamp-$$.json"
part="$dir/.visitors-$stamp-$$.part"
trap 'rm -f "$part"' EXIT

# A failure after the first byte cuts the connection: curl then exits
# non-zero, so a cut dump is never kept.
if ! code=$(printf 'header = "Authorization: Bearer %s"\n' "$token" |
	curl --config - --silent --show-error --max-time 1800 -o "$part" -w '%{http_code}' "${url%/}/api/v1/export"); then
	echo "visitors-backup: the export from $url failed" >&2
	exit 1
fi
if [ "$code" != 200 ]; then
	echo "visitors-backup: the export from $url answered $code: $(head -c 300 "$part")" >&2
	exit 1
fi
if [ ! -s "$part" ]; then
	echo "visitors-backup: the export from $url is empty" >&2
	exit 1
fi
if [ "$(head -c 30 "$part")" != '{"format":"visitors-export-1",' ] || [ "$(tail -c 3 "$part")" != ']}' ]; then
	echo "visitors-backup: the export from $url is not a whole visitors-export-1 dump" >&2
	exit 1
fi
mv "$part" "$out"
echo "visitors-backup: wrote $out ($(wc -c <"$out") bytes)"

# Only after a good export: delete the backups older than -keep days.
find "$dir" -maxdepth 1 -type f -name 'visitors-*.json' -mmin +$((keep * 24 * 60)) -print -delete |
	sed 's/^/visitors-backup: deleted /'
