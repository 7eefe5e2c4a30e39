package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// chromiumArgs run Debian's Chromium headless, as root, without reaching
// for the network.
var chromiumArgs = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--no-first-run", "--disable-quic", "--disable-component-update", "--disable-sync", "--hide-scrollbars"}

// screenshot renders url in headless Chromium at the given window size,
// with extra arguments, and returns the decoded PNG.
func screenshot(t *testing.T, url string, w, h int, extra ...string) image.Image {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is needed for this test: ./scripts/install-deps.sh installs it")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "shot.png")
	args := append(append([]string{}, chromiumArgs...),
		"--user-data-dir="+filepath.Join(dir, "profile"), fmt.Sprintf("--window-size=%d,%d", w, h), "--screenshot="+out)
	args = append(append(args, extra...), url)
	if b, err := runChromium(bin, args, true); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// chromiumTimeout bounds one run of Chromium. On this shared machine a
// headless Chromium now and then hangs on a page it renders in a second
// otherwise (seen on a plain badge); such a run is killed, with its
// whole process group, and tried once more.
const chromiumTimeout = 90 * time.Second

// runChromium runs Chromium with args, at most twice if it hangs, and
// returns its output: stdout and stderr together if combined, else
// stdout.
func runChromium(bin string, args []string, combined bool) ([]byte, error) {
	var err error
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
		cmd := exec.CommandContext(ctx, bin, args...)
		killGroupOnCancel(cmd)
		cmd.WaitDelay = 10 * time.Second
		var out []byte
		if combined {
			out, err = cmd.CombinedOutput()
		} else {
			out, err = cmd.Output()
		}
		hung := ctx.Err() != nil
		cancel()
		if !hung {
			return out, err
		}
		err = fmt.Errorf("chromium hung for %v: %w", chromiumTimeout, err)
	}
	return nil, err
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
// white for a reader with a light theme and on dark grey for one with a
// dark theme (--blink-settings=preferredColorScheme=0 is Blink's "dark"),
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
		extra []string
		bg    color.RGBA
	}{
		{"light", nil, rgb(0xffffff)},
		{"dark", []string{"--blink-settings=preferredColorScheme=0"}, rgb(0x0d1117)},
	}
	const area = 480 * 160
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := screenshot(t, p.URL("/counter/theme-test/graph.svg?days=7"), 480, 160, tt.extra...)
			if n := coverage(img, tt.bg); n < area/2 {
				t.Errorf("background #%02x%02x%02x covers %d of %d pixels, want at least half", tt.bg.R, tt.bg.G, tt.bg.B, n, area)
			}
			if n := coverage(img, rgb(0x2da44e)); n < 150 {
				t.Errorf("the bar's green covers %d pixels, want at least 150", n)
			}
		})
	}
}
