package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"visitors/internal/servertest"
)

// landingTestJS runs in the landing page, after the page's own script,
// from the same origin (the page's CSP runs no inline script). It
// records the page's width, fills every field of the badge builder and
// fires input events, waits for the preview to show the badge being
// built, and posts what it saw as JSON to /landing-test-result. It gives
// up after 5 s.
const landingTestJS = `(function () {
  var r = {innerWidth: innerWidth, scrollWidth: document.documentElement.scrollWidth};
  function done() {
    r.scrollWidthAfter = document.documentElement.scrollWidth;
    fetch('/landing-test-result', {method: 'POST', body: JSON.stringify(r)});
  }
  var img = document.getElementById('builder-preview');
  if (!img) { r.error = 'no #builder-preview'; done(); return; }
  r.before = img.src;
  var set = {key: 'browser/landing', label: 'page views', color: 'blue', label_color: 'purple',
    style: 'for-the-badge', logo: 'github', logo_color: 'white', show: 'today'};
  Object.keys(set).forEach(function (id) {
    var el = document.getElementById(id);
    if (!el) { r.error = 'no #' + id; return; }
    el.value = set[id];
    el.dispatchEvent(new Event('input', {bubbles: true}));
  });
  ['abbr', 'nocount'].forEach(function (id) {
    var el = document.getElementById(id);
    if (!el) { r.error = 'no #' + id; return; }
    el.checked = true;
    el.dispatchEvent(new Event('input', {bubbles: true}));
  });
  if (r.error) { done(); return; }
  var start = Date.now();
  (function poll() {
    if (img.src !== r.before && img.complete && img.naturalWidth > 0) {
      r.after = img.src;
      r.naturalWidth = img.naturalWidth;
      r.md = document.getElementById('md').value;
      done();
    } else if (Date.now() - start > 5000) {
      r.error = 'timeout: preview src ' + img.src + ', complete ' + img.complete + ', naturalWidth ' + img.naturalWidth;
      done();
    } else {
      setTimeout(poll, 50);
    }
  })();
})();
`

// landingResult is what landingTestJS saw.
type landingResult struct {
	InnerWidth, ScrollWidth, ScrollWidthAfter int
	Before, After, MD, Error                  string
	NaturalWidth                              int
}

// mustLandingProxy returns the URL of a server in front of p, and the
// channel on which it passes on what landingTestJS posts. It serves the
// landing page with landingTestJS added at its end, and holds the page's
// last bytes back until the script has posted (at most a minute), since
// the test takes its screenshot once the page has loaded.
// It passes every other request, and the page's own headers (its CSP),
// on to p.
func mustLandingProxy(t *testing.T, p *servertest.Proc) (string, <-chan []byte) {
	t.Helper()
	target, _ := url.Parse(p.URL("/"))
	rp := httputil.NewSingleHostReverseProxy(target)
	results := make(chan []byte, 1)
	posted := make(chan struct{}, 1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/landing-test.js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			io.WriteString(w, landingTestJS)
		case "/landing-test-result":
			b, _ := io.ReadAll(r.Body)
			select {
			case results <- b:
			default:
			}
			select {
			case posted <- struct{}{}:
			default:
			}
		case "/":
			page, hdr, ok := proxyGet(w, p.URL("/"))
			if !ok {
				return
			}
			for k, v := range hdr {
				if k != "Content-Length" {
					w.Header()[k] = v
				}
			}
			cut := strings.LastIndex(page, "</body>")
			io.WriteString(w, page[:cut]+`<script src="/landing-test.js"></script>`)
			w.(http.Flusher).Flush()
			select {
			case <-posted:
			case <-time.After(time.Minute):
			}
			io.WriteString(w, page[cut:])
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL, results
}

// TestLandingBuilderInChromium: in real Chromium, at 360 and 1280 px
// wide, the landing page fits the window (no horizontal scroll) before
// and after the builder is filled in, and filling every field of the
// builder turns its preview <img> into the badge being built (the
// Markdown's URL, plus count=false so that a preview counts nothing),
// which loads. It catches a builder with no preview, a preview that
// does not follow the fields, an option the builder lacks, and a page
// wider than a phone. Screenshots are left in the test's temporary
// directory, or in $LANDING_SHOTS if set, to be looked at.
func TestLandingBuilderInChromium(t *testing.T) {
	t.Parallel() // most of it waits for Chromium
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "off")
	origin, results := mustLandingProxy(t, p)
	shots := t.TempDir()
	if dir := os.Getenv("LANDING_SHOTS"); dir != "" {
		shots = dir // to keep the screenshots
	}
	for _, width := range []int{360, 1280} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			ctx, _ := newTab(t, width, 800)
			shot, err := runTab(ctx, []chromedp.Action[chromedp.Void]{chromedp.Navigate(origin + "/")}, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatalf("chromium: %v", err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatalf("screenshot is not a PNG: %v", err)
			}
			if frame := image.Rect(0, 0, width, 800); img.Bounds() != frame {
				t.Fatalf("screenshot is %v, want %v", img.Bounds(), frame)
			}
			out := filepath.Join(shots, fmt.Sprintf("landing-%d.png", width))
			if err := os.WriteFile(out, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", out)
			var posted []byte
			select {
			case posted = <-results:
			default:
				t.Fatal("the page loaded without running the test script to its end")
			}
			var got landingResult
			if err := json.Unmarshal(posted, &got); err != nil {
				t.Fatalf("test script result %s: %v", posted, err)
			}
			if got.InnerWidth != width {
				t.Errorf("window is %d px wide, want %d: the check cannot tell", got.InnerWidth, width)
			}
			if got.ScrollWidth > got.InnerWidth || got.ScrollWidthAfter > got.InnerWidth {
				t.Errorf("page is %d px wide (%d once filled in) in a %d px window: it scrolls sideways", got.ScrollWidth, got.ScrollWidthAfter, got.InnerWidth)
			}
			if got.Error != "" {
				t.Fatalf("builder: %s", got.Error)
			}
			const built = "/counter/browser/landing.svg?label=page%20views&color=blue&label_color=purple&style=for-the-badge&logo=github&logo_color=white&abbreviated=true&show=today&count=false"
			if want := "![page views](" + origin + built + ")"; got.MD != want {
				t.Errorf("Markdown = %q, want %q", got.MD, want)
			}
			if want := origin + built; got.After != want {
				t.Errorf("preview src = %q, want %q (the built URL)", got.After, want)
			}
			if got.NaturalWidth < 100 {
				t.Errorf("preview is %d px wide, want a loaded for-the-badge badge", got.NaturalWidth)
			}

		})
	}
}
