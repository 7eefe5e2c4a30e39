//go:build lab_exercise

package exercises

// The reader's copies of the seeds' buggy code: fix each until
// go test -tags lab_exercise ./lab/exercises passes. The steps they come
// from, and what docs/lab.md says of them, are named above each.

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"unsafe"
)

// Greeting is greeting's step 5 (exercise 1), the first with the pooled
// buffer: from visitor 100,000 on, every request allocates. Make the
// buffer that grows the one that goes back to the pool. (Steps 6 to 8
// have the same bug, and a second one, the regexp pool never given its
// regexp back: 17 more allocations a request, which this exercise is not
// about.)
func Greeting() http.Handler {
	var visitors struct {
		sync.Mutex
		n int
	}
	colorRx := regexp.MustCompile(`\w*$`)
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors.Lock()
		visitors.n++
		num := visitors.n
		visitors.Unlock()
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString(">Welcome!</h1>You are visitor number ")
		b := strconv.AppendInt(buf.Bytes(), int64(num), 10)
		b = append(b, '!')
		w.Write(b)
	})
}

// Color is greeting's step 1 (exercise 2): every color is accepted,
// markup included. Refuse what is not a word.
func Color() http.Handler {
	var visitors int
	colorRx := regexp.MustCompile(`\w*$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + r.FormValue("color") +
			"'>Welcome!</h1>You are visitor number " + strconv.Itoa(visitors) + "!"))
	})
}

var bufPool = sync.Pool{
	New: func() interface{} {
		b := make([]byte, 256)
		return &b
	},
}

var hashPool = sync.Pool{
	New: func() interface{} {
		return sha256.New()
	},
}

// Digest is digest's step 8 (exercise 3): the string it returns changes
// when it is called again. Return memory the caller owns.
func Digest(n int) string {
	bufptr := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufptr)
	buf := *bufptr
	buf = buf[:0]
	h := hashPool.Get().(hash.Hash)
	defer hashPool.Put(h)
	h.Reset()
	x := strconv.AppendInt(buf, int64(n), 10)
	for i := 0; i < 100000; i++ {
		h.Write(x)
	}
	buf = buf[:0]
	sum := h.Sum(buf)
	b := make([]byte, 0, 256)
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	sum = sum[:0]
	sum = append(sum, b...)
	return *(*string)(unsafe.Pointer(&sum))
}
