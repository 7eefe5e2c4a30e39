package badge_test

import (
	"fmt"
	"regexp"

	"visitors/internal/badge"
)

// A badge is rendered into a buffer the caller keeps: AppendSVG
// allocates nothing when it has room.
func ExampleAppendSVG() {
	style, err := badge.ParseStyle([]byte("flat-square"))
	if err != nil {
		panic(err)
	}
	b := &badge.Badge{Label: []byte("visitors"), Value: badge.AppendCount(nil, 1234, false), Style: style}
	svg := badge.AppendSVG(make([]byte, 0, 2048), b)
	fmt.Printf("%s\n", regexp.MustCompile(`aria-label="[^"]*"`).Find(svg))
	fmt.Printf("%s\n", badge.AppendCount(nil, 1234567, true))
	// Output:
	// aria-label="visitors: 1234"
	// 1.2M
}
