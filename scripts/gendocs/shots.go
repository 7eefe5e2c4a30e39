package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"visitors/internal/servertest"
)

// shotRoot is the root token of the screenshots' service.
const shotRoot = "gendocs-dashboard-root-token-0123456789"

// shot is one screenshot of the dashboard in docs/.
type shot struct {
	file  string // in docs/
	path  string // the page, below the service's address
	width int
	dark  bool
}

// dashboardShots are the dashboard's screenshots that docs/dashboard.md
// shows: the overview and a counter's page at 1280 and 360 px wide,
// light and dark.
var dashboardShots = []shot{
	{"dashboard-1280-light.png", "/dashboard?sort=total", 1280, false},
	{"dashboard-1280-dark.png", "/dashboard?sort=total", 1280, true},
	{"dashboard-360-light.png", "/dashboard?sort=total", 360, false},
	{"dashboard-360-dark.png", "/dashboard?sort=total", 360, true},
	{"dashboard-counter-1280-light.png", "/dashboard/counter/octocat%2Fhello-world", 1280, false},
	{"dashboard-counter-360-dark.png", "/dashboard/counter/octocat%2Fhello-world", 360, true},
}

// shots writes dashboardShots into root's docs/: the binary bin serves
// an embedded store in tmp filled with 30 days of sample counts (by
// visitors import, dated from today), and Chromium, driven by chromedp
// with the tests' flags, signs in and takes each page at its width,
// with prefers-color-scheme emulated.
func shots(root, bin, tmp string, w io.Writer) error {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("the dashboard's screenshots need chromium (./scripts/install-deps.sh installs it): %w", err)
	}
	data := filepath.Join(tmp, "shots-data")
	imp := exec.Command(bin, "import", "-data", data)
	imp.Stdin = strings.NewReader(sampleDump(time.Now().UTC()))
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("import the screenshots' counts: %v\n%s", err, out)
	}
	p, err := servertest.StartErr(bin, []string{"VISITORS_ADMIN_TOKEN=" + shotRoot}, "-data", data, "-log-level", "warn")
	if err != nil {
		return err
	}
	defer p.Stop(syscall.SIGTERM, 15*time.Second)

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.UserDataDir(filepath.Join(tmp, "chromium")), chromedp.WindowSize(1280, 900)}
	for _, f := range []string{"headless", "no-sandbox", "disable-gpu", "disable-background-networking", "no-first-run",
		"disable-quic", "disable-component-update", "disable-sync", "hide-scrollbars"} {
		opts = append(opts, chromedp.Flag(f, true))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	step := func(steps ...chromedp.Action[chromedp.Void]) error {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return chromedp.Do(c, steps...)
	}
	if err := chromedp.Do(ctx); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	if err := step(
		chromedp.Navigate(p.URL("/dashboard")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), shotRoot),
		chromedp.Submit(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("counters")),
	); err != nil {
		return fmt.Errorf("sign in to the dashboard: %w", err)
	}
	for _, s := range dashboardShots {
		scheme := "light"
		if s.dark {
			scheme = "dark"
		}
		var png []byte
		err := step(
			chromedp.EmulateViewport(int64(s.width), 800),
			chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
				return err
			}),
			chromedp.Navigate(p.URL(s.path)),
			chromedp.WaitVisible(chromedp.CSS("main")),
			chromedp.Sleep(300*time.Millisecond), // the graph's image
			chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				png = b
				return err
			}),
		)
		if err != nil {
			return fmt.Errorf("screenshot %s: %w", s.file, err)
		}
		if err := os.WriteFile(filepath.Join(root, "docs", s.file), png, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "gendocs: wrote docs/%s\n", s.file)
	}
	return nil
}

// sampleDump returns a dump of a few counters with 30 days of counts up
// to today, in the format of visitors export.
func sampleDump(today time.Time) string {
	keys := []struct {
		key  string
		base int
		lock bool
	}{
		{"octocat/hello-world", 120, false}, {"octocat/spoon-knife", 45, false}, {"docs/home", 300, false},
		{"docs/api", 80, false}, {"blog/2026/launch", 20, true}, {"blog/2026/dashboard", 60, false},
	}
	var b strings.Builder
	b.WriteString(`{"format":"visitors-export-1","hits":1000,"keys":[` + "\n")
	for i, k := range keys {
		total := 0
		var days []string
		for d := 29; d >= 0; d-- {
			n := k.base + (k.base*((d*7+i*3)%11))/10 - d*k.base/60
			if n < 0 {
				n = 0
			}
			total += n
			days = append(days, fmt.Sprintf(`"%s":%d`, today.AddDate(0, 0, -d).Format(time.DateOnly), n))
		}
		fmt.Fprintf(&b, `{"key":%q,"total":%d,"locked":%t,"days":{%s}}`, k.key, total+k.base*40, k.lock, strings.Join(days, ","))
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]}\n")
	return b.String()
}
