package redisstore

import (
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"visitors/internal/store"
)

// The key layout, below the -redis-prefix P. A counter's key k is hex
// encoded inside a hash tag, so every key of one counter lands in the
// same cluster slot and no byte of k can end the tag early (the "k"
// before the hex keeps the tag of the empty key from being empty, which
// would hash the whole name instead):
//
//	P{k<hex>}t          the counter's total; present while the counter exists
//	P{k<hex>}d<day>     its count on UTC day <day> (days since 1970), with a TTL of DayTTL
//	P{k<hex>}g          its generation: a random number Set and Delete replace (absent: 0)
//	P{k<hex>}l          "1" while the owner has locked it
//	P{k<hex>}u<day>     its unique visitors of UTC day <day>: a HyperLogLog, with a TTL of DayTTL (uniques.go)
//	P{keys}i            a sorted set of every counter's key, as raw bytes, all with
//	                    score 0: Keys, -max-keys and List (ZRANGE BYLEX is byte order)
//	P{keys}             the set of every key of stores before List; migrated into
//	                    P{keys}i (and deleted) when a store opens
//	P{tokens}           a hash of the owner API's tokens: ID -> JSON record
//	P{hi}               the last /hi number handed out or reserved
//	P{seed}<day>        UTC day <day>'s random unique-visitor seed, shared by every instance,
//	                    until SeedGrace after the day ends (uniques.go)
//	P{<tag>}s:<id>      instance <id>'s last flush round applied to one group of slots
//
// The generation is what keeps a Set or Delete from being undone: every
// delta a batch instance sends carries the generation it was counted
// under, and the flush script (lua/apply.lua) drops deltas whose
// generation is not the counter's. Delete leaves the new generation
// behind as a tombstone for TombstoneTTL, so deltas counted before it
// still find a generation they do not match.
const (
	totalSuffix = "t"
	daySuffix   = "d"
	genSuffix   = "g"
	lockSuffix  = "l"
)

// TombstoneTTL is how long a deleted counter's generation outlives it
// (seconds): far longer than an instance holds a delta it counted.
const TombstoneTTL = 30 * 24 * 60 * 60

// DayTTL is how long Redis keeps a day's count after the day began: a
// little more than the [store.MaxDays] anyone can read.
const DayTTL = 400 * 24 * 60 * 60 // seconds

// seqTTL is how long a group remembers an instance's last flush round:
// far longer than any instance retries a round it has no answer for.
const seqTTL = 7 * 24 * 60 * 60 // seconds

// names builds the Redis key names of one store.
type names struct {
	prefix string
	index  string // the sorted set of every key
	oldSet string // the set of every key, before List
	tokens string // the hash of tokens
	hi     string // the /hi counter
}

func newNames(prefix string) names {
	return names{prefix: prefix, index: prefix + "{keys}i", oldSet: prefix + "{keys}",
		tokens: prefix + "{tokens}", hi: prefix + "{hi}"}
}

// tag returns the hash-tagged stem of key's Redis names: P{k<hex>}.
func (n names) tag(key []byte) string {
	b := make([]byte, 0, len(n.prefix)+3+2*len(key))
	b = append(b, n.prefix...)
	b = append(b, "{k"...)
	b = hex.AppendEncode(b, key)
	b = append(b, '}')
	return string(b)
}

func total(tag string) string { return tag + totalSuffix }

func genKey(tag string) string { return tag + genSuffix }

func lockKey(tag string) string { return tag + lockSuffix }

func dayKey(tag string, d store.Day) string {
	return tag + daySuffix + strconv.FormatUint(uint64(d), 10)
}

// seq returns instance id's sequence key for group g, in a slot of g's:
// in a cluster the group is a slot, and the key must be in it.
func (n names) seq(g uint16, id string) string {
	return n.prefix + "{" + slotTag(g) + "}s:" + id
}

// dayTTL returns how many seconds from now day d's key lives: until
// DayTTL after d began, by the store's own clock. Every expiry the store
// asks Redis for is a duration from now (EXPIRE, SET EX), never a time
// (EXPIREAT, EXAT): a time is read on Redis's clock, and an instance
// whose clock disagrees with Redis's (or a test's manual clock) would
// see keys expire at once or live too long. A result of 0 or less makes
// Redis delete the key, as an EXPIREAT in the past did.
func dayTTL(d store.Day, now time.Time) int64 { return int64(d)*86400 + DayTTL - now.Unix() }

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// slotOf returns the cluster hash slot of the Redis key name: CRC16
// (XMODEM) of its hash tag, or of the whole name if it has none.
func slotOf(name string) uint16 {
	for i := 0; i < len(name); i++ {
		if name[i] == '{' {
			for j := i + 1; j < len(name); j++ {
				if name[j] == '}' {
					if j > i+1 {
						name = name[i+1 : j]
					}
					break
				}
			}
			break
		}
	}
	return crc16(name) % numSlots
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var (
	tagsOnce sync.Once
	tags     [numSlots]string // tags[s] hashes to slot s
)

// slotTag returns a short string whose slot is s: the hash tag that puts
// a name in slot s.
func slotTag(s uint16) string {
	tagsOnce.Do(func() {
		left := numSlots
		for i := 0; left > 0; i++ {
			t := strconv.Itoa(i)
			if sl := crc16(t) % numSlots; tags[sl] == "" {
				tags[sl] = t
				left--
			}
		}
	})
	return tags[s]
}
