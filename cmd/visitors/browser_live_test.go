package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// eventCounter passes a stream on to the browser and counts the events
// it passed.
type eventCounter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (e eventCounter) Write(p []byte) (int, error) {
	e.n.Add(int64(bytes.Count(p, []byte("data: "))))
	return e.ResponseWriter.Write(p)
}

func (e eventCounter) Flush() { e.ResponseWriter.(http.Flusher).Flush() }

// TestLiveCountInChromium: the landing page's live count, an EventSource
// on the key's stream, updates in real Chromium while another client
// counts. The test reads the page's DOM once it has loaded, so a proxy
// in front of the binary holds the page's last bytes back until the
// browser has been sent three events; the page read must show that it
// handled more than one and the count they carried.
func TestLiveCountInChromium(t *testing.T) {
	t.Parallel() // most of it waits for Chromium
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "off")
	mustGet(t, p.URL("/counter/browser/live.svg"))
	target, _ := url.Parse(p.URL("/"))
	rp := httputil.NewSingleHostReverseProxy(target)
	var sent atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/counter/browser/live/stream":
			rp.ServeHTTP(eventCounter{w, &sent}, r)
		case "/":
			page, _, ok := proxyGet(w, p.URL("/"))
			if !ok {
				return
			}
			cut := len(page) - len("</body>\n</html>\n")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page[:cut])
			w.(http.Flusher).Flush()
			for deadline := time.Now().Add(60 * time.Second); sent.Load() < 3 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			io.WriteString(w, page[cut:])
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	defer proxy.Close()

	ctx, closeTab := newTab(t, 800, 600) // before the goroutine, which a failure here would leave running
	stop := make(chan struct{})
	counted := make(chan int)
	go func() { // another client counts until the page is read
		n := 1
		defer func() { counted <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if resp, err := webtest.Client.Get(p.URL("/counter/browser/live.json")); err == nil {
				resp.Body.Close()
				n++
			}
		}
	}()
	dom, err := runTab(ctx, []chromedp.Action[chromedp.Void]{chromedp.Navigate(proxy.URL + "/?live=browser/live")}, chromedp.OuterHTML(chromedp.CSS("html")))
	closeTab() // and its stream, which proxy.Close waits for
	close(stop)
	total := webtest.Receive(t, counted, "end of the counting goroutine")
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	m := regexp.MustCompile(`<strong id="live-total" data-events="(\d+)">(\d+)</strong>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page shows no live count:\n%s", dom)
	}
	events, _ := strconv.Atoi(m[1])
	shown, _ := strconv.Atoi(m[2])
	if events < 2 || shown < 2 || shown > total {
		t.Errorf("the page handled %d events and shows %d (the key reached %d): want at least 2 events, a count above the first visit", events, shown, total)
	}
	t.Logf("Chromium handled %d events; shows %d of %d visits", events, shown, total)
}
