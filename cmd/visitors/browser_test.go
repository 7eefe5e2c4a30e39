package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// chromiumArgs run Debian's Chromium headless, as root, without reaching
// for the network.
var chromiumArgs = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--no-first-run", "--disable-quic", "--disable-component-update", "--disable-sync", "--hide-scrollbars"}

// chromium is the one headless Chromium that the tests of this binary
// share: the first test that needs it starts it, and TestMain stops it.
// A launch costs about two CPU seconds; a tab, a small part of that.
// Each test works in tabs of its own, in a browser context of its own:
// its cookies and cache are apart from other tests', as in a profile of
// its own.
var chromium struct {
	once sync.Once
	ctx  context.Context // the browser's chromedp context
	stop func()
	err  error
}

// sharedChromium returns the chromedp context of the shared Chromium,
// started on the first call with chromiumArgs' flags and a temporary
// user-data directory of its own.
func sharedChromium() (context.Context, error) {
	chromium.once.Do(func() {
		bin, err := exec.LookPath("chromium")
		if err != nil {
			chromium.err = errors.New("chromium is needed for this test: ./scripts/install-deps.sh installs it")
			return
		}
		opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin)}
		for _, a := range chromiumArgs {
			opts = append(opts, chromedp.Flag(strings.TrimPrefix(a, "--"), true))
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		chromium.ctx, chromium.stop = ctx, func() { cancel(); cancelAlloc() }
		if err := firstRun(ctx); err != nil {
			chromium.stop()
			chromium.err = fmt.Errorf("start chromium: %w", err)
		}
	})
	return chromium.ctx, chromium.err
}

// stopChromium stops the shared Chromium, if a test started it.
func stopChromium() {
	chromium.once.Do(func() {}) // none started: none starts after this
	if chromium.stop != nil {
		chromium.stop()
	}
}

// newTab opens a tab in the shared Chromium, in t's browser context,
// with a CSS viewport of w x h at a device scale factor of 1, so that a
// screenshot is w x h pixels. It returns the tab's context and a func
// that closes the tab; the test's end closes it too. It fails the test
// if Chromium is missing, did not start, or has died.
func newTab(t *testing.T, w, h int) (context.Context, func()) {
	t.Helper()
	browser, err := sharedChromium()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-chromedp.FromContext(browser).Browser.LostConnection:
		t.Fatal("the shared Chromium has died: see the first test that failed in it")
	default:
	}
	ctx, closeTab := chromedp.NewContext(browser, inBrowserContext(t, browser))
	t.Cleanup(closeTab)
	if err := firstRun(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	cdp(t, ctx, "set the viewport", chromedp.EmulateViewport(int64(w), int64(h)))
	return ctx, closeTab
}

// browserContexts holds the option that opens a tab in a test's browser
// context, by the test's *testing.T.
var browserContexts sync.Map

// inBrowserContext returns the option that opens a tab in t's browser
// context, which it makes on t's first call, and t's end disposes of. A
// browser context of each tab's own would cost a third of a second more
// per tab.
func inBrowserContext(t *testing.T, browser context.Context) chromedp.ContextOption {
	t.Helper()
	if o, ok := browserContexts.Load(t); ok {
		return o.(chromedp.ContextOption)
	}
	ctx, cancel := context.WithTimeout(browser, stepTimeout)
	defer cancel()
	made, err := chromedp.CallBrowser(ctx, target.CreateBrowserContext, target.CreateBrowserContextParams{})
	if err != nil {
		t.Fatalf("make a browser context: %v", err)
	}
	t.Cleanup(func() {
		browserContexts.Delete(t)
		ctx, cancel := context.WithTimeout(browser, stepTimeout)
		defer cancel()
		if _, err := chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams(made)); err != nil {
			t.Errorf("dispose of the browser context: %v", err)
		}
	})
	o := chromedp.WithExistingBrowserContext(made.BrowserContextID)
	browserContexts.Store(t, o)
	return o
}

// firstRun makes the first, empty, run on ctx, which starts a browser or
// opens a tab. What it starts lives as long as the context of that run:
// so the run has no timeout, but the wait for it has, chromiumTimeout.
// Canceling ctx then ends the run.
func firstRun(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(chromiumTimeout):
		return fmt.Errorf("no answer within %v", chromiumTimeout)
	}
}

// darkTheme makes the tab's pages see a reader whose theme is dark:
// prefers-color-scheme: dark.
var darkTheme = chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	return err
})

// screenshot renders url in a new tab of the shared Chromium at a
// viewport of w x h, after the steps (such as darkTheme), once the page
// has loaded, and returns the decoded PNG.
func screenshot(t *testing.T, url string, w, h int, steps ...chromedp.Action[chromedp.Void]) image.Image {
	t.Helper()
	steps = append(slices.Clip(steps), chromedp.Navigate(url))
	var b []byte
	for try := 1; ; try++ {
		ctx, closeTab := newTab(t, w, h)
		var err error
		b, err = runTab(ctx, steps, chromedp.CaptureScreenshot())
		closeTab()
		if err == nil {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || try == 2 {
			t.Fatalf("screenshot of %s: %v", url, err)
		}
		t.Logf("screenshot of %s: %v; once more in a new tab", url, err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(w, h) {
		t.Fatalf("screenshot is %v pixels, want %dx%d", got, w, h)
	}
	return img
}

// chromiumTimeout bounds the work of one tab: loading a page and reading
// it. On this shared machine a headless Chromium now and then hangs on a
// page it renders in a second otherwise (seen on a plain badge); such a
// tab is closed, and a screenshot tried once more in a new tab.
const chromiumTimeout = 90 * time.Second

// runTab runs steps and then a in the tab ctx, within chromiumTimeout,
// and returns a's value.
func runTab[T any](ctx context.Context, steps []chromedp.Action[chromedp.Void], a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, chromiumTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		var zero T
		return zero, err
	}
	return chromedp.Run(ctx, a)
}

// coverage counts the pixels of img that are exactly color c.
func coverage(img image.Image, c color.RGBA) int {
	n := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if uint8(cr>>8) == c.R && uint8(cg>>8) == c.G && uint8(cb>>8) == c.B {
				n++
			}
		}
	}
	return n
}

func rgb(hex uint32) color.RGBA {
	return color.RGBA{uint8(hex >> 16), uint8(hex >> 8), uint8(hex), 0xff}
}

// TestBadgeAndGraphRenderInChromium renders a badge of each style and the
// graph in a real browser: each screenshot must decode and show the
// drawing's own fill colors over a good part of it — a blank page, a
// broken image, an XML error page or a 404 text has none of them.
func TestBadgeAndGraphRenderInChromium(t *testing.T) {
	t.Parallel() // most of it waits for Chromium
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "off")
	for range 5 {
		mustGet(t, p.URL("/counter/browser-test.svg"))
	}
	grey := rgb(0x555555)
	tests := []struct {
		path   string
		w, h   int
		colors []color.RGBA // each must cover at least 150 pixels
	}{
		// flat and plastic overlay a gradient, so their fills are not exact
		{"/counter/browser-test.svg?count=false&style=flat-square", 300, 60, []color.RGBA{grey, rgb(0x44cc11)}},
		{"/counter/browser-test.svg?count=false&style=flat-square&color=blue", 300, 60, []color.RGBA{grey, rgb(0x007ec6)}},
		{"/counter/browser-test.svg?count=false&style=for-the-badge&label=page%20views&color=orange", 400, 60, []color.RGBA{grey, rgb(0xfe7d37)}},
		{"/counter/browser-test/graph.svg?days=14", 480, 160, []color.RGBA{rgb(0x2da44e)}},
	}
	for _, tt := range tests {
		img := screenshot(t, p.URL(tt.path), tt.w, tt.h)
		for _, c := range tt.colors {
			if n := coverage(img, c); n < 150 {
				t.Errorf("%s: color #%02x%02x%02x covers %d pixels, want at least 150: blank or broken", tt.path, c.R, c.G, c.B, n)
			}
		}
	}
	// flat and plastic: a rendered badge, whatever its gradient.
	for _, style := range []string{"flat", "plastic"} {
		img := screenshot(t, p.URL("/counter/browser-test.svg?count=false&style="+style), 300, 60)
		if n := darkPixels(img); n < 500 {
			t.Errorf("style %s: %d dark pixels, want at least 500 (the grey label box)", style, n)
		}
	}
	// A logo: drawn left of the label, in its color, inside the badge.
	red := rgb(0xff0000)
	withLogo := screenshot(t, p.URL("/counter/browser-test.svg?count=false&style=flat-square&logo=github&logo_color=f00"), 300, 60)
	if n := reddish(withLogo); n < 60 {
		t.Errorf("logo=github&logo_color=f00: red covers %d pixels, want at least 60 (the 14x14 logo, antialiased)", n)
	}
	if x := minX(withLogo, red); x < 3 || x > 8 {
		t.Errorf("logo=github: leftmost red pixel at x=%d, want about 5 (left of the label)", x)
	}
	if n := reddish(screenshot(t, p.URL("/counter/browser-test.svg?count=false&style=flat-square&logo_color=f00"), 300, 60)); n != 0 {
		t.Errorf("without a logo, logo_color=f00 paints %d red pixels, want 0: the logo check cannot tell", n)
	}
	// And the check can fail: a 404 page has none of the colors.
	if n := coverage(screenshot(t, p.URL("/counter/nope"), 300, 60), grey); n >= 150 {
		t.Errorf("a 404 page covers %d pixels in the badge grey: the check cannot tell", n)
	}
}

// minX returns the smallest x of a pixel of img that is exactly color c,
// or -1.
func minX(img image.Image, c color.RGBA) int {
	r := img.Bounds()
	for x := r.Min.X; x < r.Max.X; x++ {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if uint8(cr>>8) == c.R && uint8(cg>>8) == c.G && uint8(cb>>8) == c.B {
				return x - r.Min.X
			}
		}
	}
	return -1
}

// proxyGet GETs url for a test's proxy handler, which, not being the
// test's goroutine, may not fail the test as mustGet does: it returns the
// body and header, or answers w with a 502 and reports false.
func proxyGet(w http.ResponseWriter, url string) (string, http.Header, bool) {
	resp, err := webtest.Client.Get(url)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return "", nil, false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), resp.Header, true
}

// reddish counts pixels that are mostly red: the logo's fill and its
// antialiased edge over the grey box.
func reddish(img image.Image) int {
	return countPixels(img, func(r, g, b uint32) bool { return r > 150 && g < 110 && b < 110 })
}

// darkPixels counts pixels darker than mid-grey.
func darkPixels(img image.Image) int {
	return countPixels(img, func(r, g, b uint32) bool { return r+g+b < 3*110 })
}

// countPixels counts the pixels of img whose 8-bit red, green and blue
// satisfy is.
func countPixels(img image.Image, is func(r, g, b uint32) bool) int {
	n := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if is(cr>>8, cg>>8, cb>>8) {
				n++
			}
		}
	}
	return n
}

// TestGraphFollowsThemeInChromium: in real Chromium, graph.svg draws on
// white for a reader with a light theme (Chromium's default) and on dark
// grey for one with a dark theme (emulated: prefers-color-scheme: dark),
// its bars green in both. It catches a chart that ignores the reader's
// theme, and a dark rule the browser does not apply.
func TestGraphFollowsThemeInChromium(t *testing.T) {
	t.Parallel() // most of it waits for Chromium
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "off")
	for range 3 {
		mustGet(t, p.URL("/counter/theme-test.svg"))
	}
	tests := []struct {
		name  string
		steps []chromedp.Action[chromedp.Void]
		bg    color.RGBA
	}{
		{"light", nil, rgb(0xffffff)},
		{"dark", []chromedp.Action[chromedp.Void]{darkTheme}, rgb(0x0d1117)},
	}
	const area = 480 * 160
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := screenshot(t, p.URL("/counter/theme-test/graph.svg?days=7"), 480, 160, tt.steps...)
			if n := coverage(img, tt.bg); n < area/2 {
				t.Errorf("background #%02x%02x%02x covers %d of %d pixels, want at least half", tt.bg.R, tt.bg.G, tt.bg.B, n, area)
			}
			if n := coverage(img, rgb(0x2da44e)); n < 150 {
				t.Errorf("the bar's green covers %d pixels, want at least 150", n)
			}
		})
	}
}
