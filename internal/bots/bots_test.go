package bots

import (
	"fmt"
	"hash/maphash"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// browsers are people's User-Agents: none is a bot.
var browsers = []string{
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
	"",
}

// reference is the list as one regular expression: the slow, obvious
// matcher the Detector must agree with.
var reference = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?:" + strings.Join(Patterns(), ")|(?:") + ")")
})

func instances(tb testing.TB) []string {
	tb.Helper()
	b, err := os.ReadFile("testdata/instances.txt")
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestEveryListedBotIsABot: each pattern's example User-Agent from the
// list is a bot, and the Detector agrees with the plain regexp on it.
func TestEveryListedBotIsABot(t *testing.T) {
	d := New()
	ins := instances(t)
	if len(ins) < 1000 {
		t.Fatalf("only %d example User-Agents", len(ins))
	}
	for _, ua := range ins {
		if !d.Is(ua) {
			t.Errorf("Is(%q) = false, want true", ua)
		}
	}
}

func TestBrowsersAreNotBots(t *testing.T) {
	d := New()
	for _, ua := range browsers {
		uncached := d.Is(ua)
		if cached := d.Is(ua); uncached || cached {
			t.Errorf("Is(%q) = %v uncached, %v cached; want false", ua, uncached, cached)
		}
	}
}

// TestLinkPreviewsAreBots: the fetchers that draw a link's card in a
// chat or a social network are bots (the rule).
func TestLinkPreviewsAreBots(t *testing.T) {
	d := New()
	for _, ua := range []string{
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Twitterbot/1.0",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"TelegramBot (like TwitterBot)",
		"WhatsApp/2.23.20.0",
		"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)",
		"Synapse (bot; +https://github.com/matrix-org/synapse)",
		"http.rb/5.1.1 (Mastodon/4.2.1; +https://mastodon.social/)",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	} {
		if !d.Is(ua) {
			t.Errorf("Is(%q) = false, want true", ua)
		}
	}
}

// TestFastMatchAgreesWithRegexp: the literal index gives the verdict of
// the list's expressions, on bots (every 7th listed one: the reference
// takes 5 ms a User-Agent), browsers and near misses.
func TestFastMatchAgreesWithRegexp(t *testing.T) {
	d := New()
	var in []string
	for i, ua := range instances(t) {
		if i%7 == 0 {
			in = append(in, ua)
		}
	}
	in = append(in, browsers...)
	in = append(in, "wget", "Wget/1.21", "xsentry/1", "sentry/1", "a sentry/1", "SSL Labs", "SSL Labs x", "AdsBot-Google-Mobile", "AdsBot-Google", "ClaudeBot", "claudebot", "CLAUDEBOT",
		"x ds9", "xds9 ", "ds", "Mozilla BW/", "BW/2", "xY!J", "curl/8", "xcurl", "ab SSL Labs", "SSL Lab")
	for _, ua := range in {
		if got, want := d.match(ua), reference().MatchString(ua); got != want {
			t.Errorf("match(%q) = %v, regexp says %v", ua, got, want)
		}
	}
}

// TestCacheIsBounded: a flood of distinct User-Agents does not grow the
// cache past MaxCached.
func TestCacheIsBounded(t *testing.T) {
	d := New()
	ua := []byte("Mozilla/5.0 flood 0000000")
	for i := range 3 * MaxCached {
		for j, n := len(ua)-1, i; j > len(ua)-8; j, n = j-1, n/10 {
			ua[j] = byte('0' + n%10)
		}
		d.Is(string(ua))
	}
	if got := d.Cached(); got > MaxCached || got == 0 {
		t.Errorf("Cached() = %d after %d User-Agents, want 1..%d", got, 3*MaxCached, MaxCached)
	}
}

func TestIsAllocatesNothingWhenCached(t *testing.T) {
	d := New()
	ua := browsers[0]
	d.Is(ua)
	if got := testing.AllocsPerRun(100, func() { d.Is(ua) }); got != 0 {
		t.Errorf("Is allocs = %v, want 0", got)
	}
}

// FuzzDetector: the fast matcher agrees with the list's expressions on
// any User-Agent.
func FuzzDetector(f *testing.F) {
	for _, s := range append(browsers, "Wget/1", "x sentry/2", "Spider spider.com", "SSL Labs", "github-camo (876de43e)") {
		f.Add(s)
	}
	d := New()
	f.Fuzz(func(t *testing.T, ua string) {
		if got, want := d.match(ua), reference().MatchString(ua); got != want {
			t.Fatalf("match(%q) = %v, regexp says %v", ua, got, want)
		}
	})
}

func BenchmarkIs(b *testing.B) {
	d := New()
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.Is(browsers[0])
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.match(browsers[0])
		}
	})
}

// TestExpand: a pattern that is a finite set of at most maxExpansions
// case-sensitive strings of three bytes or more expands to them, with
// its anchor; anything else is left to the regexp engine.
func TestExpand(t *testing.T) {
	for _, tt := range []struct {
		p          string
		want       []string // nil: not expanded
		start, end bool
	}{
		{"Googlebot", []string{"Googlebot"}, false, false},
		{"abc", []string{"abc"}, false, false},
		{"ab", nil, false, false},
		{"^curl", []string{"curl"}, true, false},
		{"SSL Labs$", []string{"SSL Labs"}, false, true},
		{"^curl$", nil, false, false},
		{"^", nil, false, false},
		{"$", nil, false, false},
		{"", nil, false, false},
		{"[wW]get", []string{"wget", "Wget"}, false, false},
		{"(?i)abcd", []string{"abcd", "abcD", "abCd", "abCD", "aBcd", "aBcD", "aBCd", "aBCD", "Abcd", "AbcD", "AbCd", "AbCD", "ABcd", "ABcD", "ABCd", "ABCD"}, false, false},
		{"(?i)abcde", nil, false, false},
		{"[xy]bot", []string{"xbot", "ybot"}, false, false},
		{"[a-cx-z]yz", []string{"ayz", "byz", "cyz", "xyz", "yyz", "zyz"}, false, false},
		{"[a-p]yz", []string{"ayz", "byz", "cyz", "dyz", "eyz", "fyz", "gyz", "hyz", "iyz", "jyz", "kyz", "lyz", "myz", "nyz", "oyz", "pyz"}, false, false},
		{"[a-q]yz", nil, false, false},
		{"[a-p][a-p]", nil, false, false},
		{"Chirp|gotosocial", []string{"Chirp", "gotosocial"}, false, false},
		{"Chirp|go", nil, false, false},
		{"x(ab[cd])", []string{"xabc", "xabd"}, false, false},
		{"x(ab|cd)(ef|gh)", []string{"xabef", "xabgh", "xcdef", "xcdgh"}, false, false},
		{"(?:a[b-i]|b[b-i])x", []string{"abx", "acx", "adx", "aex", "afx", "agx", "ahx", "aix", "bbx", "bcx", "bdx", "bex", "bfx", "bgx", "bhx", "bix"}, false, false},
		{"(?:a[b-i]|b[b-i]|c)x", nil, false, false},
		{"x(?:a|b)(?:a|b)(?:a|b)(?:a|b)(?:a|b)", nil, false, false},
		{"Spider.*spider", nil, false, false},
		{"bot\\d", []string{"bot0", "bot1", "bot2", "bot3", "bot4", "bot5", "bot6", "bot7", "bot8", "bot9"}, false, false},
		{"bot\\w", nil, false, false},
		{"(", nil, false, false},
	} {
		got, start, end, ok := expand(tt.p)
		slices.Sort(got)
		slices.Sort(tt.want)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) || start != tt.start || end != tt.end {
			t.Errorf("expand(%q) = %q, start %v, end %v, ok %v; want %q, %v, %v", tt.p, got, start, end, ok, tt.want, tt.start, tt.end)
		}
	}
}

// TestFewRegexps: nearly every pattern of the list is looked up as a
// string; only a few run as regular expressions.
func TestFewRegexps(t *testing.T) {
	d := New()
	if len(d.res) > 16 {
		t.Errorf("%d patterns run as regular expressions, want at most 16: %v", len(d.res), d.res)
	}
	if len(d.prefixes) == 0 || len(d.suffixes) == 0 {
		t.Errorf("%d anchored at the start, %d at the end, want some of each", len(d.prefixes), len(d.suffixes))
	}
}

// TestCacheShardHoldsItsShare: a part of the cache holds its share of
// MaxCached verdicts, and the next one empties it first.
func TestCacheShardHoldsItsShare(t *testing.T) {
	d := New()
	share := MaxCached / numShards
	want := &d.shards[0]
	n := 0
	for i := 0; n <= share; i++ {
		ua := fmt.Sprintf("Mozilla/5.0 shard test %d", i)
		if &d.shards[maphash.String(d.seed, ua)%numShards] != want {
			continue
		}
		d.Is(ua)
		n++
		if got, wantLen := len(want.m), min(n, share+1)%(share+1); n <= share && got != wantLen {
			t.Fatalf("after %d User-Agents in one part it holds %d, want %d", n, got, wantLen)
		}
	}
	if got := len(want.m); got != 1 {
		t.Errorf("after %d User-Agents in a part of %d it holds %d, want 1", share+1, share, got)
	}
}
