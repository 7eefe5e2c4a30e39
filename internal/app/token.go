package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"time"

	"visitors/internal/api"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/redisstore"
)

// tokenUsage is "visitors token"'s usage, before its flags.
const tokenUsage = `Usage:
  visitors token [-data dir | -store redis ...] -name NAME (-prefix PREFIX | -backup)

token makes an owner token and prints it, once: with -prefix it acts on
the keys that start with PREFIX (sign in with it at /dashboard, or send it
to /api/v1/ as Authorization: Bearer TOKEN); with -backup it may only
export. The root token revokes it (the dashboard's Tokens page).
`

// Token runs "visitors token": it makes a token as POST /api/v1/tokens
// does (api.MakeToken), stores it in the store -store names, the
// embedded one in -data (the service must be stopped: its lock is
// taken) or Redis (while it serves), and prints its secret and id.
func Token(args []string, getenv func(string) string, stdout io.Writer) error {
	cl, b := backupCommand("token", tokenUsage, getenv)
	name := cl.fs.String("name", "", "the token's `name`, 1 to 64 bytes: what the token list shows")
	prefix := cl.fs.String("prefix", "", "the token acts on the keys that start with this `prefix` (not empty: every key is the root token's)")
	backup := cl.fs.Bool("backup", false, "a backup token: it may only export, and acts on no key")
	if err := cl.parseNone(args, subcommandForms, getenv, stdout); err != nil {
		return err
	}
	t, secret, err := api.MakeToken(rand.Reader, *name, *prefix, *backup, time.Now())
	if err != nil {
		return cl.refuse(err)
	}
	var st interface {
		store.TokenStore
		Close() error
	}
	switch b.kind {
	case StoreEmbedded:
		st, err = boltstore.Open(boltstore.Options{Dir: b.data})
	case StoreRedis:
		st, err = redisstore.Open(redisOptions(b.redis, redisstore.Options{}))
	default:
		return fmt.Errorf("token: -store %s: want embedded or redis", b.kind) // not past its form
	}
	if err != nil && b.kind == StoreEmbedded {
		return fmt.Errorf("token: open the store: %w (a running service holds its lock: stop it first, or make the token on /dashboard's Tokens page)", err)
	}
	if err != nil {
		return fmt.Errorf("token: open the store: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.PutToken(ctx, t); err != nil {
		st.Close()
		return fmt.Errorf("token: store the token: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("token: close the store: %w", err)
	}
	scope := "prefix " + fmt.Sprintf("%q", t.Prefix)
	if t.Backup() {
		scope = "backup: export only"
	}
	_, err = fmt.Fprintf(stdout, "%s\n# id %s, name %q, %s; shown this once: sign in at /dashboard with it\n", secret, t.ID, t.Name, scope)
	return err
}
