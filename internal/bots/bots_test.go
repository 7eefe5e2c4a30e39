package bots

import (
	"os"
	"regexp"
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
	in = append(in, "wget", "Wget/1.21", "xsentry/1", "sentry/1", "a sentry/1", "SSL Labs", "SSL Labs x", "AdsBot-Google-Mobile", "AdsBot-Google", "ClaudeBot", "claudebot", "CLAUDEBOT")
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
