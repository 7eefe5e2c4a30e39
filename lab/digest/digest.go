// Package digest rebuilds, step by step, an article's drive to make one
// function allocate nothing (a translation, 2021, of "Reducing Memory
// Allocations in Golang"). The function writes the decimal form of n
// 100,000 times into a buffer, takes the SHA-256 of it, and turns the
// digest into sum[0] letters.
//
// Steps 0 to 8 are the article's code, one published change each, in its
// order. Step 8, the article's last, returns a string that aliases a
// pooled buffer through unsafe: the next call rewrites it
// (TestMuseumUnsafeAlias shows it). Step 9, [AppendDigestDirect], is
// step 8 made safe, and step 10, [AppendDigest], goes one past the
// article.
//
// The article counted allocations with testing.AllocsPerRun(100, func()
// { foo(rand.Int()) }); the benchmarks here feed random inputs too, as the
// figures depend on them (see BenchmarkDigest).
package digest

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Repeats is how many times n is written before hashing.
const Repeats = 100_000

const alphabet = "abcdefghijklmnopqrstuvwxyz"

// Steps are the article's steps 0 to 8 in order. Step 8's result aliases
// pooled memory: copy it before the next call. [AppendDigestDirect] is
// step 9 and [AppendDigest] step 10.
var Steps = []func(n int) string{Step0, Step1, Step2, Step3, Step4, Step5, Step6, Step7, Step8}

// Step0 is the function as the article began: strconv.Itoa inside the
// loop, a bytes.Buffer, strings.Repeat of the alphabet on every
// iteration, append to a nil slice, and a string conversion at the end.
func Step0(n int) string {
	var buf bytes.Buffer
	for i := 0; i < 100000; i++ {
		buf.WriteString(strconv.Itoa(n))
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 10)[x]
		b = append(b, c)
	}
	return string(b)
}

// Step1 hoists strconv.Itoa out of the loop.
func Step1(n int) string {
	var buf bytes.Buffer
	x := strconv.Itoa(n)
	for i := 0; i < 100000; i++ {
		buf.WriteString(x)
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 10)[x]
		b = append(b, c)
	}
	return string(b)
}

// Step2 indexes the alphabet with x%26 instead of repeating it.
func Step2(n int) string {
	var buf bytes.Buffer
	x := strconv.Itoa(n)
	for i := 0; i < 100000; i++ {
		buf.WriteString(x)
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return string(b)
}

// Step3 makes the output slice at its final capacity.
func Step3(n int) string {
	var buf bytes.Buffer
	x := strconv.Itoa(n)
	for i := 0; i < 100000; i++ {
		buf.WriteString(x)
	}
	sum := sha256.Sum256(buf.Bytes())
	b := make([]byte, 0, int(sum[0]))
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return string(b)
}

// Step4 returns the output slice as a string through unsafe instead of
// copying it. Safe here: nothing writes b after the return.
func Step4(n int) string {
	var buf bytes.Buffer
	x := strconv.Itoa(n)
	for i := 0; i < 100000; i++ {
		buf.WriteString(x)
	}
	sum := sha256.Sum256(buf.Bytes())
	b := make([]byte, 0, int(sum[0]))
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return *(*string)(unsafe.Pointer(&b))
}

// Step5 replaces the bytes.Buffer with one []byte made at its final size.
func Step5(n int) string {
	x := strconv.Itoa(n)
	buf := make([]byte, 0, 100000*len(x))
	for i := 0; i < 100000; i++ {
		buf = append(buf, x...)
	}
	sum := sha256.Sum256(buf)
	b := make([]byte, 0, int(sum[0]))
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return *(*string)(unsafe.Pointer(&b))
}

// bufPool and hashPool are the article's pools, from step 6 on.
var bufPool = sync.Pool{
	New: func() interface{} {
		// length of a sha256 hash
		b := make([]byte, 256)
		return &b
	},
}

var hashPool = sync.Pool{
	New: func() interface{} {
		return sha256.New()
	},
}

// Step6 takes a buffer and a SHA-256 hasher from sync.Pools and writes
// the digits, formatted once with strconv.AppendInt into the buffer,
// straight into the hasher: no input buffer at all.
func Step6(n int) string {
	// get buffer from pool
	bufptr := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufptr)
	buf := *bufptr
	// reset buf
	buf = buf[:0]
	// get hash object from pool
	h := hashPool.Get().(hash.Hash)
	defer hashPool.Put(h)
	h.Reset()
	x := strconv.AppendInt(buf, int64(n), 10)
	for i := 0; i < 100000; i++ {
		h.Write(x)
	}
	// reset whatever strconv.AppendInt put in the buf
	buf = buf[:0]
	sum := h.Sum(buf)
	b := make([]byte, 0, int(sum[0]))
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return *(*string)(unsafe.Pointer(&b))
}

// Step7 makes the output slice with the constant capacity 256, which the
// article expected the compiler to keep on the stack. It does not: the
// unsafe return still lets b escape (see the escape analysis in
// docs/lab/digest.md).
func Step7(n int) string {
	// get buffer from pool
	bufptr := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufptr)
	buf := *bufptr
	// reset buf
	buf = buf[:0]
	// get hash object from pool
	h := hashPool.Get().(hash.Hash)
	defer hashPool.Put(h)
	h.Reset()
	x := strconv.AppendInt(buf, int64(n), 10)
	for i := 0; i < 100000; i++ {
		h.Write(x)
	}
	// reset whatever strconv.AppendInt put in the buf
	buf = buf[:0]
	sum := h.Sum(buf)
	b := make([]byte, 0, 256)
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return *(*string)(unsafe.Pointer(&b))
}

// Step8 is the article's last step: b stays on the stack, its letters are
// copied into the pooled buffer, and the string returned points into that
// buffer, which the deferred Put hands to the next call. The result is
// rewritten by the next call that gets the same buffer.
func Step8(n int) string {
	// get buffer from pool
	bufptr := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufptr)
	buf := *bufptr
	// reset buf
	buf = buf[:0]
	// get hash object from pool
	h := hashPool.Get().(hash.Hash)
	defer hashPool.Put(h)
	h.Reset()
	x := strconv.AppendInt(buf, int64(n), 10)
	for i := 0; i < 100000; i++ {
		h.Write(x)
	}
	// reset whatever strconv.AppendInt put in the buf
	buf = buf[:0]
	sum := h.Sum(buf)
	b := make([]byte, 0, 256)
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	sum = sum[:0] // reset sum
	sum = append(sum, b...)
	return *(*string)(unsafe.Pointer(&sum))
}

// state is what one call of the lab's own steps borrows from the pool.
type state struct {
	h      hash.Hash
	digits []byte
	block  []byte // step 10: the digits repeated to fill blockSize bytes
	sum    []byte
}

// blockSize is how much step 10 hands the hasher per Write: a multiple of
// SHA-256's 64-byte block, large enough to amortise the call.
const blockSize = 8 << 10

var pool = sync.Pool{New: func() any {
	return &state{
		h:      sha256.New(),
		digits: make([]byte, 0, 20),
		block:  make([]byte, 0, blockSize+20),
		sum:    make([]byte, 0, sha256.Size),
	}
}}

// appendLetters appends the letters that sum stands for to dst.
func appendLetters(dst, sum []byte) []byte {
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		dst = append(dst, alphabet[x%26])
	}
	return dst
}

// AppendDigestDirect is step 9, the lab's: step 8 made safe. As in step
// 8, the digits go straight into a pooled hasher, 100,000 small writes;
// but the letters are appended to dst, so the result never shares memory
// with the pool. It allocates nothing when dst has room for 255 more
// bytes. It is safe for concurrent use.
func AppendDigestDirect(dst []byte, n int) []byte {
	st := pool.Get().(*state)
	defer pool.Put(st)
	st.h.Reset()
	st.digits = strconv.AppendInt(st.digits[:0], int64(n), 10)
	for range Repeats {
		st.h.Write(st.digits)
	}
	return appendLetters(dst, st.h.Sum(st.sum[:0]))
}

// AppendDigest is step 10, one past the article: it appends the letters
// of n's digest to dst and returns the extended slice. Like step 9 it
// keeps no input buffer of 100,000 copies and allocates nothing when dst
// has room for 255 more bytes, but it fills a pooled 8 KiB block with
// whole copies of the digits and hashes that block again and again, so
// the hasher sees a few dozen large writes instead of 100,000 small ones.
// The result never shares memory with the pool. It is safe for
// concurrent use.
func AppendDigest(dst []byte, n int) []byte {
	st := pool.Get().(*state)
	defer pool.Put(st)
	st.h.Reset()
	st.digits = strconv.AppendInt(st.digits[:0], int64(n), 10)
	per := blockSize / len(st.digits) // copies of the digits in one block
	st.block = st.block[:0]
	for range per {
		st.block = append(st.block, st.digits...)
	}
	for left := Repeats; left > 0; left -= per {
		if left < per {
			st.h.Write(st.block[:left*len(st.digits)])
			break
		}
		st.h.Write(st.block)
	}
	return appendLetters(dst, st.h.Sum(st.sum[:0]))
}

// Step9 adapts [AppendDigestDirect] to the string signature of the other
// steps, for the tests. Its string conversion allocates; benchmarks call
// the append form itself.
func Step9(n int) string { return string(AppendDigestDirect(nil, n)) }

// Step10 adapts [AppendDigest] as [Step9] does.
func Step10(n int) string { return string(AppendDigest(nil, n)) }
