package httperr

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{{0, ""}, {-time.Second, ""}, {time.Nanosecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {20 * time.Minute, "1200"}}
	for _, tt := range tests {
		if got := RetryAfter(tt.d).Get("Retry-After"); got != tt.want {
			t.Errorf("RetryAfter(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestHTTPError(t *testing.T) {
	cause := errors.New("disk on fire")
	e := &HTTPError{Code: 503, Msg: "try again", Err: cause, Header: RetryAfter(time.Second)}
	if got, want := e.Error(), "503 try again: disk on fire"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) {
		t.Error("errors.Is(e, cause) = false, want true")
	}
	h := http.Header{"Allow": {"GET"}}
	e.SetHeader(h)
	if h.Get("Retry-After") != "1" || h.Get("Allow") != "GET" {
		t.Errorf("SetHeader: %v, want Retry-After 1 beside Allow", h)
	}
}
