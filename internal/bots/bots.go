// Package bots tells crawlers and link-preview fetchers from people by
// their User-Agent, with the crawler-user-agents list (Martin Monperrus
// and contributors, MIT; refreshed by scripts/update-bots.sh) and a few
// link-preview fetchers that list lacks.
//
// The list has 1,500 regular expressions; as one alternation Go's
// regexp takes about 5 ms to reject a browser's User-Agent. Nearly all
// of them are plain strings, so a [Detector] looks those up by their
// first three bytes at each position of the User-Agent, and runs only
// the few real expressions, each on its own (Go's regexp skips ahead to
// an expression's literal prefix). A verdict is also cached per
// User-Agent, in a table of bounded size.
package bots

import (
	_ "embed"
	"hash/maphash"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
)

//go:embed crawler-user-agents.txt
var list string

// LinkPreviews are patterns of link-preview fetchers (the programs that
// fetch a page to draw its card in a chat or a social network) that the
// crawler-user-agents list does not have. Most are in it already:
// facebookexternalhit, Twitterbot, Slackbot, Discordbot, TelegramBot,
// WhatsApp, LinkedInBot, SkypeUriPreview, redditbot, Iframely, Embedly,
// Mastodon, vkShare, Viber.
var LinkPreviews = []string{
	`Bluesky Cardyb`,      // Bluesky's link cards
	`Synapse \(bot;`,      // Matrix homeservers' URL previews
	`Google-PageRenderer`, // Google Docs and Slides link previews
	`Yahoo Link Preview`,
	`Snap URL Preview Service`,
}

// MaxCached is how many User-Agents a [Detector] remembers the verdict
// of; past it a part of the cache is dropped and filled again.
const MaxCached = 1 << 14

const numShards = 16

// Detector reports whether a User-Agent is a bot. It may be used
// concurrently.
type Detector struct {
	res      []*regexp.Regexp     // the patterns that are not plain strings
	first    [1 << 16]bool        // the first two bytes of a literal
	literals map[[3]byte][]string // the literals, by their first three bytes
	prefixes []string             // literals a User-Agent must start with
	suffixes []string             // literals a User-Agent must end with
	seed     maphash.Seed         // spreads User-Agents over the cache's shards
	shards   [numShards]cacheShard
}

// cacheShard holds verdicts by the User-Agent's maphash: its seed is
// random per process, so no client can aim a collision.
type cacheShard struct {
	mu sync.RWMutex // guards m
	m  map[uint64]bool
}

// Patterns returns the patterns a [Detector] matches: the list's, then
// [LinkPreviews].
func Patterns() []string {
	var ps []string
	for line := range strings.SplitSeq(list, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, line)
	}
	return append(ps, LinkPreviews...)
}

// New returns a Detector for [Patterns]. It panics if a pattern does not
// compile: the list is checked by the package's tests.
func New() *Detector {
	d := &Detector{literals: make(map[[3]byte][]string), seed: maphash.MakeSeed()}
	var res []string
	var ps []string
	for _, p := range Patterns() {
		if rest, ok := strings.CutPrefix(p, "(^| )"); ok { // a word at the start
			ps = append(ps, "^"+rest, " "+rest)
			continue
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		lits, start, end, ok := expand(p)
		switch {
		case !ok:
			res = append(res, p)
		case start:
			d.prefixes = append(d.prefixes, lits...)
		case end:
			d.suffixes = append(d.suffixes, lits...)
		default:
			for _, lit := range lits {
				k := [3]byte{lit[0], lit[1], lit[2]}
				d.literals[k] = append(d.literals[k], lit)
				d.first[uint16(lit[0])<<8|uint16(lit[1])] = true
			}
		}
	}
	for _, p := range res {
		d.res = append(d.res, regexp.MustCompile(p))
	}
	for i := range d.shards {
		d.shards[i].m = make(map[uint64]bool)
	}
	return d
}

// maxExpansions bounds how many strings one pattern may expand to.
const maxExpansions = 16

// expand returns the strings p matches if p is a finite set of
// case-sensitive strings of at least three bytes, such as [wW]get or
// Chirp|gotosocial, and whether p must match at the start (^) or at the
// end ($) of the User-Agent.
func expand(p string) (strs []string, start, end bool, ok bool) {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, false, false, false
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	if len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
		start, subs = true, subs[1:]
	}
	if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
		end, subs = true, subs[:len(subs)-1]
	}
	if start && end {
		return nil, false, false, false
	}
	strs = []string{""}
	for _, sub := range subs {
		alts, ok := stringsOf(sub)
		if !ok || len(strs)*len(alts) > maxExpansions {
			return nil, false, false, false
		}
		var next []string
		for _, s := range strs {
			for _, a := range alts {
				next = append(next, s+a)
			}
		}
		strs = next
	}
	for _, s := range strs {
		if len(s) < 3 {
			return nil, false, false, false
		}
	}
	return strs, start, end, true
}

// strings returns the finite set of strings re matches, if it is one.
func stringsOf(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return []string{string(re.Rune)}, true
		}
		out := []string{""} // the parser turns [wW] into w, case folded
		for _, r := range re.Rune {
			var next []string
			for _, s := range out {
				for f := r; ; {
					next = append(next, s+string(f))
					if f = unicode.SimpleFold(f); f == r {
						break
					}
				}
			}
			if out = next; len(out) > maxExpansions {
				return nil, false
			}
		}
		return out, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == maxExpansions {
					return nil, false
				}
				out = append(out, string(r))
			}
		}
		return out, true
	case syntax.OpCapture:
		return stringsOf(re.Sub[0])
	case syntax.OpAlternate, syntax.OpConcat:
		out := []string{""}
		if re.Op == syntax.OpAlternate {
			out = nil
		}
		for _, sub := range re.Sub {
			alts, ok := stringsOf(sub)
			if !ok {
				return nil, false
			}
			if re.Op == syntax.OpAlternate {
				out = append(out, alts...)
			} else {
				var next []string
				for _, s := range out {
					for _, a := range alts {
						next = append(next, s+a)
					}
				}
				out = next
			}
			if len(out) > maxExpansions {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// match reports whether ua matches a pattern, uncached.
func (d *Detector) match(ua string) bool {
	for _, p := range d.prefixes {
		if strings.HasPrefix(ua, p) {
			return true
		}
	}
	for _, p := range d.suffixes {
		if strings.HasSuffix(ua, p) {
			return true
		}
	}
	for i := 0; i+3 <= len(ua); i++ {
		if !d.first[uint16(ua[i])<<8|uint16(ua[i+1])] {
			continue
		}
		for _, lit := range d.literals[[3]byte{ua[i], ua[i+1], ua[i+2]}] {
			if strings.HasPrefix(ua[i:], lit) {
				return true
			}
		}
	}
	for _, re := range d.res {
		if re.MatchString(ua) {
			return true
		}
	}
	return false
}

// Is reports whether ua is a known crawler or link-preview fetcher. An
// empty User-Agent is not. Is allocates nothing once ua is cached.
func (d *Detector) Is(ua string) bool {
	if ua == "" {
		return false
	}
	h := maphash.String(d.seed, ua)
	sh := &d.shards[h%numShards]
	sh.mu.RLock()
	v, ok := sh.m[h]
	sh.mu.RUnlock()
	if ok {
		return v
	}
	v = d.match(ua)
	sh.mu.Lock()
	if len(sh.m) >= MaxCached/numShards {
		clear(sh.m)
	}
	sh.m[h] = v
	sh.mu.Unlock()
	return v
}

// Cached returns how many verdicts d holds.
func (d *Detector) Cached() int {
	n := 0
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
