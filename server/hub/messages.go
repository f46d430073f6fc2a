package hub

import (
	"encoding/json"
	"time"

	"ringlab/server/metrics"
	"ringlab/server/wspeer"
)

// Message types of /ws/metrics (docs/protocol.md).
const (
	typeHello     = "hello"
	typeSnapshot  = "snapshot"
	typePong      = "pong"
	typeSubscribe = "subscribe"
	typePing      = "ping"
)

// helloMsg describes the subscription in effect; it is sent on connect and
// after every accepted subscribe.
type helloMsg struct {
	Type        string         `json:"type"`
	Schema      int            `json:"schema"`
	Source      string         `json:"source"`
	Description string         `json:"description"`
	Counters    []string       `json:"counters"`             // every counter the source offers
	Notes       []string       `json:"notes,omitempty"`      // caveats about the source
	Labels      metrics.Labels `json:"labels"`               // what the numbers are of: kind, device, program
	RateHz      int            `json:"rate_hz"`              // snapshots per second
	Subscribed  []string       `json:"subscribed,omitempty"` // the allowlist in effect; absent: all counters
	Sources     []string       `json:"sources"`              // what a subscribe may name
	Limits      limits         `json:"limits"`
}

// limits tells a client the rules it is held to.
type limits struct {
	MinRateHz         int `json:"min_rate_hz"`
	MaxRateHz         int `json:"max_rate_hz"`
	MaxMessageBytes   int `json:"max_message_bytes"`
	MaxCounters       int `json:"max_counters"`
	MessagesPerSecond int `json:"messages_per_second"`
	MessageBurst      int `json:"message_burst"`
}

var clientLimits = limits{
	MinRateHz:         MinRateHz,
	MaxRateHz:         MaxRateHz,
	MaxMessageBytes:   wspeer.MaxMessageSize,
	MaxCounters:       maxCounters,
	MessagesPerSecond: msgRatePerSecond,
	MessageBurst:      msgBurst,
}

// snapshotMsg is one sample as a client sees it.
type snapshotMsg struct {
	Type     string              `json:"type"`
	Seq      uint64              `json:"seq"` // per sampler, +1 per sample; a gap is a skipped snapshot
	Time     time.Time           `json:"time"`
	Source   string              `json:"source"`
	Counters map[string]uint64   `json:"counters"`
	Queues   []map[string]uint64 `json:"queues,omitempty"` // index = queue number
	CPUs     []map[string]uint64 `json:"cpus,omitempty"`   // index = CPU number; {} for an offline CPU
	Rates    map[string]float64  `json:"rates"`            // per second since the previous sample; empty at first
}

type pongMsg struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
}

// subscribeMsg is the client's request; absent fields keep their values.
type subscribeMsg struct {
	Type     string    `json:"type"`
	Source   *string   `json:"source"`
	RateHz   *int      `json:"rate_hz"`
	Counters *[]string `json:"counters"` // [] means all counters again
}

type pingMsg struct {
	Type string `json:"type"`
}

// filter is a subscription's counter allowlist; nil means all counters.
type filter struct {
	key   string // the sorted names joined by commas: equal filters share an encoding
	names map[string]bool
	list  []string
}

// pausedFilter marks a client that gets no snapshots while its
// subscription changes.
var pausedFilter = &filter{key: "\x00paused"}

func (f *filter) allows(name string) bool { return f == nil || f.names[name] }

func (f *filter) cacheKey() string {
	if f == nil {
		return ""
	}
	return f.key
}

// rates returns per-second growth of the totals between two samples, nil
// when there is no earlier sample or time did not advance. A counter that
// went down (a reset) has no rate.
func rates(prev *metrics.Sample, cur metrics.Sample) map[string]float64 {
	r := map[string]float64{}
	if prev == nil {
		return r
	}
	dt := cur.Time.Sub(prev.Time).Seconds()
	if dt <= 0 {
		return r
	}
	for name, v := range cur.Totals {
		if p, ok := prev.Totals[name]; ok && v >= p {
			r[name] = float64(v-p) / dt
		}
	}
	return r
}

// encodeSnapshot builds the snapshot message of a sample for one filter.
func encodeSnapshot(seq uint64, source string, s metrics.Sample, r map[string]float64, f *filter) ([]byte, error) {
	m := snapshotMsg{Type: typeSnapshot, Seq: seq, Time: s.Time, Source: source,
		Counters: pick(s.Totals, f), Rates: map[string]float64{}}
	for name, v := range r {
		if f.allows(name) {
			m.Rates[name] = v
		}
	}
	m.Queues = pickEach(s.Queues, f)
	m.CPUs = pickEach(s.CPUs, f)
	return json.Marshal(m)
}

// pickEach is pick of every map of a per-queue or per-CPU list, a nil
// map as an empty one ({}, not null); nil for an empty list.
func pickEach(all []map[string]uint64, f *filter) []map[string]uint64 {
	if len(all) == 0 {
		return nil
	}
	out := make([]map[string]uint64, len(all))
	for i, m := range all {
		if m == nil {
			m = map[string]uint64{}
		}
		out[i] = pick(m, f)
	}
	return out
}

func pick(all map[string]uint64, f *filter) map[string]uint64 {
	if f == nil {
		return all
	}
	out := make(map[string]uint64, len(f.names))
	for name, v := range all {
		if f.names[name] {
			out[name] = v
		}
	}
	return out
}
