// Package digest rebuilds, step by step, an article's drive to make one
// function allocate nothing. The function writes the decimal form of n
// 100,000 times into a buffer, takes the SHA-256 of it, and turns the
// digest into sum[0] letters.
//
// The article's last step returned a string that aliased a pooled buffer
// through unsafe: a use-after-return bug once the buffer is reused. The
// last step here, [AppendDigest], appends to the caller's slice instead,
// so it allocates nothing when the caller brings the room, and it never
// hands out memory it will reuse.
package digest

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// Repeats is how many times n is written before hashing.
const Repeats = 100_000

const alphabet = "abcdefghijklmnopqrstuvwxyz"

// Steps are the steps 0 to 4 in order; [AppendDigestDirect] is step 5
// and [AppendDigest] step 6.
var Steps = []func(n int) string{Step0, Step1, Step2, Step3, Step4}

// Step0 is the function as the article began: strconv.Itoa inside the
// loop, a bytes.Buffer, strings.Repeat of the alphabet on every iteration,
// append to a nil slice, and a string conversion at the end.
func Step0(n int) string {
	var buf bytes.Buffer
	for range Repeats {
		buf.WriteString(strconv.Itoa(n))
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		b = append(b, strings.Repeat(alphabet, 10)[x])
	}
	return string(b)
}

// Step1 hoists strconv.Itoa out of the loop.
func Step1(n int) string {
	var buf bytes.Buffer
	s := strconv.Itoa(n)
	for range Repeats {
		buf.WriteString(s)
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		b = append(b, strings.Repeat(alphabet, 10)[x])
	}
	return string(b)
}

// Step2 indexes the alphabet with x%26 instead of building 260 bytes.
func Step2(n int) string {
	var buf bytes.Buffer
	s := strconv.Itoa(n)
	for range Repeats {
		buf.WriteString(s)
	}
	sum := sha256.Sum256(buf.Bytes())
	var b []byte
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		b = append(b, alphabet[x%26])
	}
	return string(b)
}

// Step3 preallocates the output slice.
func Step3(n int) string {
	var buf bytes.Buffer
	s := strconv.Itoa(n)
	for range Repeats {
		buf.WriteString(s)
	}
	sum := sha256.Sum256(buf.Bytes())
	b := make([]byte, 0, sum[0])
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		b = append(b, alphabet[x%26])
	}
	return string(b)
}

// Step4 writes into one input buffer allocated at its final size.
func Step4(n int) string {
	s := strconv.Itoa(n)
	buf := make([]byte, 0, len(s)*Repeats)
	for range Repeats {
		buf = append(buf, s...)
	}
	sum := sha256.Sum256(buf)
	b := make([]byte, 0, sum[0])
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%32] ^ sum[(i*5+3)%32]
		b = append(b, alphabet[x%26])
	}
	return string(b)
}

// state is what one call of the pooled steps borrows from the pool.
type state struct {
	h      hash.Hash
	digits []byte
	block  []byte // step 6: the digits repeated to fill blockSize bytes
	sum    []byte
}

// blockSize is how much step 6 hands the hasher per Write: a multiple of
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

// AppendDigestDirect is step 5, the article's last step made safe: the
// digits are formatted with strconv.AppendInt into a pooled buffer and
// written straight into a pooled SHA-256 hasher, 100,000 small writes, so
// no input buffer exists at all. The letters are appended to dst, so the
// result never shares memory with the pool. It allocates nothing when
// dst has room for 255 more bytes. It is safe for concurrent use.
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

// AppendDigest is step 6, one past the article: it appends the letters of
// n's digest to dst and returns the extended slice. Like step 5 it keeps
// no input buffer of 100,000 copies and allocates nothing when dst has
// room for 255 more bytes, but it fills a pooled 8 KiB block with whole
// copies of the digits and hashes that block again and again, so the
// hasher sees a few dozen large writes instead of 100,000 small ones.
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

// Step5 and Step6 adapt the append forms to the string signature of the
// other steps, for the table test. Their string conversion allocates;
// benchmarks call the append forms themselves.
func Step5(n int) string { return string(AppendDigestDirect(nil, n)) }

// Step6: see [Step5].
func Step6(n int) string { return string(AppendDigest(nil, n)) }
