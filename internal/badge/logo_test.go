package badge

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"visitors/internal/golden"
	"visitors/internal/race"
)

func mustLogo(tb testing.TB, name string) *Logo {
	tb.Helper()
	l, err := LookupLogo([]byte(name))
	if err != nil {
		tb.Fatalf("LookupLogo(%q): %v", name, err)
	}
	return l
}

func TestLookupLogo(t *testing.T) {
	tests := []struct {
		name, want string // want "" means ErrLogo
	}{
		{"github", "github"}, {"GitHub", "github"}, {"go", "go"}, {"Go", "go"},
		{".NET", "dotnet"}, {"dotnet", "dotnet"}, {"C++", "cplusplus"}, {"Node.js", "nodedotjs"},
		{"docker", "docker"}, {"rust", "rust"},
		{"", ""}, {"no-such-logo-anywhere", ""}, {"<script>", ""}, {"\xff\xfe", ""},
		{strings.Repeat("a", MaxLogoBytes+1), ""}, {"git hub x", ""},
	}
	for _, tt := range tests {
		l, err := LookupLogo([]byte(tt.name))
		switch {
		case tt.want == "" && err != ErrLogo:
			t.Errorf("LookupLogo(%q) = %v, %v; want ErrLogo", tt.name, l, err)
		case tt.want != "" && (err != nil || l.Slug() != tt.want):
			t.Errorf("LookupLogo(%q) = %v, %v; want %s", tt.name, l, err, tt.want)
		}
	}
}

// TestLogosAllInflate: every embedded logo inflates to path data that
// needs no escaping in an attribute, and there are as many as generated.
func TestLogosAllInflate(t *testing.T) {
	valid := regexp.MustCompile(`^[MmZzLlHhVvCcSsQqTtAa0-9eE.,+\- ]+$`)
	ls := logos()
	if len(ls) != logoCount {
		t.Fatalf("%d logos, want %d", len(ls), logoCount)
	}
	total := 0
	for i := range ls {
		p := ls[i].Path()
		if !valid.Match(p) {
			t.Fatalf("logo %s: path %.40q… is not plain path data", ls[i].Slug(), p)
		}
		if i > 0 && ls[i-1].slug >= ls[i].slug {
			t.Fatalf("logos not sorted: %s before %s", ls[i-1].slug, ls[i].slug)
		}
		total += len(p)
	}
	if total != logoPathBytes {
		t.Errorf("logos inflate to %d bytes, want %d", total, logoPathBytes)
	}
}

// TestGoldenLogo compares badges with a logo with testdata/logo-*.svg.
func TestGoldenLogo(t *testing.T) {
	for _, style := range []Style{Flat, ForTheBadge} {
		b := &Badge{Label: []byte("visitors"), Value: []byte("1.2k"), Color: []byte("#4c1"), LabelColor: []byte("#555"), Style: style, Logo: mustLogo(t, "go")}
		golden.Check(t, filepath.Join("testdata", "logo-"+style.String()+".svg"), AppendSVG(nil, b))
	}
	b := &Badge{Value: []byte("42"), Color: []byte("#007ec6"), LabelColor: []byte("#555"), Logo: mustLogo(t, "github"), LogoColor: []byte("#181717")}
	golden.Check(t, filepath.Join("testdata", "logo-nolabel.svg"), AppendSVG(nil, b))
}

// TestLogoWidth: with a logo, the label's box holds the logo (14 px at
// the style's logo offset), a 3 px gap, the label and the style's
// padding; the value's box is unchanged and starts where the label's
// ends; the label is centred in the space after the logo; the logo is
// drawn in its color, or whitesmoke.
func TestLogoWidth(t *testing.T) {
	padding := map[Style]float64{Flat: 5, FlatSquare: 5, Plastic: 5, ForTheBadge: 12}
	logoX := map[Style]float64{Flat: 5, FlatSquare: 5, Plastic: 5, ForTheBadge: 9}
	for s := range styleNames {
		style := Style(s)
		for _, label := range []string{"visitors", "WWWWWWWWWW", ""} {
			for _, color := range []string{"", "#abc"} {
				b := &Badge{Label: []byte(label), Value: []byte("1234"), Color: []byte("#4c1"), LabelColor: []byte("#555"), Style: style, Logo: mustLogo(t, "github"), LogoColor: []byte(color)}
				svg := AppendSVG(nil, b)
				d := mustParse(t, svg)
				lt, vt := wantTextWidth(style, label), wantTextWidth(style, "1234")
				lw := logoX[style] + 14 + logoX[style]
				if label != "" {
					lw = tenth(logoX[style] + 14 + 3 + lt + padding[style])
				}
				vw := tenth(vt + 2*padding[style])
				if got := mustNum(t, d.Width); !near(got, lw+vw) {
					t.Errorf("%s %q: width %v, want %.1f", style, label, got, lw+vw)
				}
				boxes := d.G[0].Rects
				if !near(mustNum(t, boxes[0].Width), lw) || !near(mustNum(t, boxes[1].X), lw) || !near(mustNum(t, boxes[1].Width), vw) {
					t.Errorf("%s %q: boxes %+v, want label %.1f, value at %.1f, %.1f wide", style, label, boxes, lw, lw, vw)
				}
				if label != "" {
					want := logoX[style] + 14 + 3 + lt/2
					if got := mustNum(t, d.G[1].Texts[len(d.G[1].Texts)/2-1].X); !near(got, tenth(want)) {
						t.Errorf("%s %q: label centred at %v, want %.1f", style, label, got, want)
					}
				}
				wantFill := color
				if wantFill == "" {
					wantFill = "#f5f5f5"
				}
				wantLogo := `<svg x="` + strings.TrimSuffix(strings.TrimSuffix(formatNum(logoX[style]), ".0"), ".0") + `" y="`
				if !strings.Contains(string(svg), wantLogo) || !strings.Contains(string(svg), `<path fill="`+wantFill+`" d="M12 .297c`) {
					t.Errorf("%s %q: no logo at x=%v filled %s:\n%s", style, label, logoX[style], wantFill, svg)
				}
			}
		}
	}
}

func formatNum(f float64) string { return string(appendNum(nil, f)) }

// TestNoLogoUnchanged: a badge without a logo is byte for byte what it
// was before logos (the golden files of TestGolden hold that too) and
// holds no nested svg.
func TestNoLogoUnchanged(t *testing.T) {
	for s := range styleNames {
		if svg := mustBadge(Style(s), "visitors", "1"); strings.Count(string(svg), "<svg") != 1 {
			t.Errorf("%s: a badge without a logo has a nested svg:\n%s", Style(s), svg)
		}
	}
}

// TestLogoAllocs: a badge with a logo allocates nothing once the logo
// has been drawn once and dst has room (a server's pooled buffer grows
// to the largest logo once), and looking a logo up allocates nothing.
func TestLogoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	b := &Badge{Label: []byte("visitors"), Value: []byte("1.2k"), Color: []byte("#4c1"), LabelColor: []byte("#555"), Logo: mustLogo(t, "github")}
	dst := AppendSVG(make([]byte, 0, 16384), b)
	for s := range styleNames {
		b.Style = Style(s)
		if got := testing.AllocsPerRun(200, func() { dst = AppendSVG(dst[:0], b) }); got > 0 {
			t.Errorf("AppendSVG(%s with logo) allocs = %v, want 0", b.Style, got)
		}
	}
	name := []byte("GitHub")
	if got := testing.AllocsPerRun(200, func() { LookupLogo(name) }); got > 0 {
		t.Errorf("LookupLogo allocs = %v, want 0", got)
	}
}

func BenchmarkBadgeLogo(b *testing.B) {
	for _, logo := range []string{"github", "go"} {
		b.Run("logo="+logo, func(b *testing.B) {
			bd := &Badge{Label: []byte("visitors"), Value: []byte("12345"), Color: []byte("#4c1"), LabelColor: []byte("#555"), Logo: mustLogo(b, logo)}
			dst := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendSVG(dst[:0], bd)
			}
		})
	}
	b.Run("lookup", func(b *testing.B) {
		name := []byte("GitHub")
		b.ReportAllocs()
		for b.Loop() {
			LookupLogo(name)
		}
	})
}

// FuzzLookupLogo: any name is found or refused with ErrLogo, never a
// panic, and what is found is the slug the name turns into.
func FuzzLookupLogo(f *testing.F) {
	for _, s := range []string{"github", "GitHub", ".NET", "C++", "", "\xff", "a&b", strings.Repeat("+", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		l, err := LookupLogo([]byte(name))
		if err != nil {
			if err != ErrLogo {
				t.Fatalf("LookupLogo(%q) = %v, want ErrLogo", name, err)
			}
			return
		}
		if want := string(appendSlug(nil, []byte(name))); l.Slug() != want || len(name) > MaxLogoBytes {
			t.Fatalf("LookupLogo(%q) = %s, want %s", name, l.Slug(), want)
		}
		if len(l.Path()) == 0 {
			t.Fatalf("LookupLogo(%q): empty path", name)
		}
	})
}
