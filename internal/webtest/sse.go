package webtest

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Event is one Server-Sent Event as a client reads it: its data lines
// joined by newlines, or, for a comment, the comment's text.
type Event struct {
	Data    string
	Comment string // set for a comment line (": heartbeat"); Data is then ""
	Retry   string // the retry field, if the event carried one
}

// EventReader reads Server-Sent Events from a stream, as EventSource
// does: lines up to a blank line make an event; a comment line is
// returned on its own, so that tests see heartbeats. It is not safe for
// concurrent use.
type EventReader struct {
	r *bufio.Reader
}

// NewEventReader returns an EventReader of r.
func NewEventReader(r io.Reader) *EventReader { return &EventReader{r: bufio.NewReader(r)} }

// Next returns the next event or comment, or the error that ended the
// stream (io.EOF when the server closed it).
func (e *EventReader) Next() (Event, error) {
	var ev Event
	var data []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		switch {
		case line == "":
			if data != nil || ev.Retry != "" {
				ev.Data = strings.Join(data, "\n")
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			return Event{Comment: strings.TrimSpace(line[1:])}, nil
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "data":
				data = append(data, value)
			case "retry":
				ev.Retry = value
			}
		}
	}
}

// NextJSON returns the next event of er that is not a comment, with its
// data decoded as JSON into a T. A stream that ends first, or data that
// does not decode, fails tb.
func NextJSON[T any](tb testing.TB, er *EventReader) (T, Event) {
	tb.Helper()
	for {
		ev, err := er.Next()
		if err != nil {
			tb.Fatalf("stream ended: %v", err)
		}
		if ev.Comment != "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
			tb.Fatalf("event data %q: %v", ev.Data, err)
		}
		return v, ev
	}
}
