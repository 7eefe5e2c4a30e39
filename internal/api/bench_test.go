package api

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	"visitors/internal/store"
)

// BenchmarkAuthenticate is one call of the owner API, GET of a counter,
// with n open-creation tokens stored: as a token that names its id
// (found by it) and as a token from before ids (compared with every
// token stored: the cost each call paid before).
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		e := newEnv(b, 0, func(c *Config) { c.NoFailureLimit = true })
		for i := range n {
			t := store.Token{ID: exactID(fmt.Sprint(i)), Name: OpenName, Prefix: fmt.Sprint(i), Exact: true,
				Hash: sha256.Sum256([]byte(fmt.Sprint("secret-", i)))}
			if err := e.st.PutToken(b.Context(), t); err != nil {
				b.Fatal(err)
			}
		}
		legacy := "legacy-token-secret-0123456789"
		if err := e.st.PutToken(b.Context(), store.Token{ID: "0123456789abcdef", Name: "old", Prefix: "k", Hash: sha256.Sum256([]byte(legacy))}); err != nil {
			b.Fatal(err)
		}
		w := e.do("POST", "/api/v1/tokens", "root", `{"name":"new","prefix":"k"}`)
		var nt NewToken
		if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil || w.Code != 201 {
			b.Fatal(w.Code, w.Body)
		}
		e.tokens["new"] = nt.Token
		e.tokens["legacy"] = legacy
		for _, kind := range []string{"id", "legacy"} {
			name := map[string]string{"id": "new", "legacy": "legacy"}[kind]
			b.Run(fmt.Sprintf("tokens=%d/by=%s", n, kind), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if w := e.do("GET", "/api/v1/counters/k", name, ""); w.Code != 200 {
						b.Fatal(w.Code, w.Body)
					}
				}
			})
		}
	}
}
