// Package boltstore is the durable [store.Store]: counts live in memory
// and reach one bbolt file in the data directory.
//
// One goroutine, the flusher, is the only writer. It takes the keys that
// changed since its last pass and writes their absolute counts in one
// bbolt transaction, which bbolt makes durable with fdatasync before it
// returns. Because there is one writer writing absolute values, no two
// writes can land out of order, and a write that is repeated is harmless.
//
// With [store.Batch] durability the flusher runs every flush interval
// and requests never wait: a crash loses the visits answered since the
// last written pass began: at most one interval plus the length of the
// pass then writing
// (or, while the file is checked after Open, nothing being
// written until the check passes, every visit since Open). The /hi numbers are reserved ahead, as database sequences do
// with a cache: the flusher makes a range durable before any number in it
// is handed out, so no number is given twice across a crash (a crash
// skips the unused rest of the range; a clean stop writes the exact last
// number, so a restart skips none).
//
// With [store.Sync] durability a visit is a request to the flusher: the
// flusher counts it, makes it durable, and only then answers. Visits that
// arrive while a pass is writing share the next one: group commit. A pass
// appends one record to a write-ahead log (wal.go) and makes it durable
// with one fdatasync before it answers. Through AIO, or with more than
// one P, the passes are pipelined: up to four records are in flight, each
// synced by a syncer goroutine of its own side by side (concurrent syncs
// of one file share the device's flushes), while the next pass gathers
// its visits; a pass is answered once its record and every record before
// it are durable.
// The bbolt file catches up every flush interval, as in batch mode, and
// the log starts over. A pass that fails takes its visits back before any
// later pass can write them, so an error means the visit did not count.
//
// A failed write keeps the changes in memory, marks the store unhealthy
// (see [Store.Health]) and is retried on the next pass. A failure tied to
// one key (see format.go: the encoding leaves none that bbolt could
// refuse, but the flusher does not rely on it) never holds back the
// others: that key is reported and retried alone while the rest commit.
//
// # Files
//
//   - boltstore.go: [Store], [Open] (and its load of the file into
//     memory), the visits' path (Hit, Incr, Visit: the journal of changed
//     entries, a Sync visit joining a pass), the reads (Get, Days), Close,
//     and the counters ([Stats], [Store.Pending], [Store.Health]);
//     metrics.go exports them to Prometheus.
//   - flush.go: the flusher, the one writer, and the order of a pass.
//   - wal.go: the write-ahead log of Sync durability, and its replay at
//     open; aio_linux.go and datasync_*.go: how a record is made durable
//     (Linux AIO, fdatasync).
//   - backup.go: [Offline], the export and import of a store no process
//     has open (visitors export, visitors import).
//   - online.go: [Store.Export] and [Store.Import], of the running store.
//   - owners.go: owner data and operations (Set, Add, Lock, Delete,
//     tokens), which the flusher runs between passes.
//   - sketch.go: the unique-visitor sketches of each day.
//   - file.go: the file as a whole: its modes, opening it, the checks at
//     open and in the background, migrating format 1, [Check].
//   - format.go: the on-disk encoding: buckets, keys, records and their
//     checksums.
//   - hooks.go: the hooks through which the package's tests plant
//     faults and races.
package boltstore
