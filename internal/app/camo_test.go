package app

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
	"visitors/internal/visit"
)

// TestEmptyCamoRangesTreatNobodyAsCamo: `-camo-ranges ""` turns camo's
// treatment off: through the flags and fairRules, camo's User-Agent from
// GitHub's own addresses (in the default ranges) or any other is an
// ordinary client, whose repeat view within -repeat-window is a repeat.
func TestEmptyCamoRangesTreatNobodyAsCamo(t *testing.T) {
	cfg, err := ParseFlags([]string{"-store", "memory", "-camo-ranges", "", "-repeat-window", "1h", "-client-rate", "0"}, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Fair.CamoRanges.Empty() {
		t.Fatalf("-camo-ranges \"\": ranges %q, want none", cfg.Fair.CamoRanges.String())
	}
	now := func() time.Time { return storetest.At(0, "12:00") }
	st := memstore.New(memstore.Options{Now: now})
	rules, closeUniques, err := fairRules(cfg, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeUniques()
	r := &visit.Recorder{Store: st, Rules: rules, Uniques: rules.Uniques, Now: now}
	for _, a := range []string{"140.82.115.1", "192.30.252.10", "2a0a:a440::1", "127.0.0.1", "::1"} {
		v := visit.Visit{Key: []byte("readme-" + a), Count: true, Client: netip.MustParseAddr(a), UserAgent: "github-camo (876de43e)"}
		if o, err := r.Record(context.Background(), &v); err != nil || !o.Counted {
			t.Fatalf("camo's User-Agent from %s = %+v, %v; want counted", a, o, err)
		}
		if o, err := r.Record(context.Background(), &v); err != nil || o.Counted || o.NotCounted != visit.Repeat {
			t.Errorf("its repeat from %s within -repeat-window = %+v, %v; want refused as a repeat (no camo)", a, o, err)
		}
	}
}
