// Package abuse attacks `ringlab serve` the way a probe of it did (issue
// 18), one test per attack, against the real binary on loopback: silent
// room joiners, room squatting, connection floods, replay bombs (a seek
// into the far future, floods of the largest steps), scenarios no browser
// tab holds, loose JSON, captured commands, DNS rebinding, clients that
// refuse gzip, refusal log floods, labs built by subscribers, the CLI's
// inputs (a large file, a FIFO, a looping XDP object, the largest trace)
// and a SIGKILL mid-tutorial; and those of issue 27: idle keep-alive
// connections past the file descriptors, a damaged store, ping floods,
// a sampler per (source, rate) pair, QR codes by the thousand, silent
// joiners of a long log, a page rejoining under new ids, the small
// protocol slips, SIGKILLs while commands flow, rooms replaying seeks to
// their limit beside an instructor's, replicas of large worlds with
// their marks, four hosts holding every room connection, students past
// a class size or without its invitation, sixteen hosts flooding one
// room while a class joins another, five hosts (sixteen in the short
// form) holding every live view while a class opens its own, and sixteen
// hosts asking for every room at once. Each test logs FIGURE lines (the figures the note
// quotes) and holds the bound the fix sets.
//
// Every loop is bounded in count and time. `make test` runs the short
// form (tens of connections, seconds); `make abuse` (RINGLAB_ABUSE=full)
// the full one. RINGLAB_ABUSE_BIN attacks another build, and
// RINGLAB_ABUSE_LEGACY=1 speaks the protocol of the builds before the
// suite (the token in every command), for their "before" figures.
//
// The tests mostly wait (for a server to start, to drop a client, to
// expire a room, for a measuring window to close) and each attacks a
// server of its own, so the package runs four at once unless -parallel
// says otherwise or the race detector is on (TestMain), not GOMAXPROCS'
// two.
package abuse
